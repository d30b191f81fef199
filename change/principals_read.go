package change

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/conf"

	"github.com/meshc-dev/meshc/compiler"
)

// FileDigest is the digest an accounts file is recorded and compared by.
func FileDigest(accountsFile []byte) string {
	sum := sha256.Sum256(accountsFile)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// FromAccountsFile reads an accounts file — the one meshc composes, the one a server includes,
// or one edited by hand — as the server's own parser reads it, into principals: the users and
// accounts of its accounts { } block. Both sides of a password or nkey mesh's diff are read by
// this one function, so what compares equal is what the server would run alike.
func FromAccountsFile(data []byte, from string) (*Principals, error) {
	m, err := conf.Parse(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s does not parse as the server reads it: %w", from, err)
	}
	ps := &Principals{Known: KnownWhole, From: from, File: FileDigest(data)}
	named := nkeyNames(data)
	accounts, _ := m["accounts"].(map[string]any)
	for _, name := range sortedKeys(accounts) {
		body, _ := accounts[name].(map[string]any)
		facets := map[string][]string{}
		for _, e := range list(body["exports"]) {
			x, _ := e.(map[string]any)
			kind, subject := exportKind(x)
			what := kind + " " + subject
			if rt, ok := x["response_type"].(string); ok && rt != "" && rt != "singleton" {
				what += " (response " + rt + ")"
			}
			to := list(x["accounts"])
			if len(to) == 0 {
				facets[FacetExports] = append(facets[FacetExports], what+" → any account")
			}
			for _, a := range to {
				facets[FacetExports] = append(facets[FacetExports], what+" → "+fmt.Sprint(a))
			}
		}
		for _, i := range list(body["imports"]) {
			x, _ := i.(map[string]any)
			kind, _ := exportKind(x)
			from, _ := x[kind].(map[string]any)
			what := fmt.Sprintf("%s %v from %v", kind, from["subject"], from["account"])
			if to, ok := x["to"].(string); ok && to != "" {
				what += " as " + to
			}
			facets[FacetImports] = append(facets[FacetImports], what)
		}
		facets[FacetLimits] = flat(body["limits"])
		switch js := body["jetstream"].(type) {
		case nil:
		case map[string]any:
			facets[FacetJetStream] = append([]string{"enabled"}, flat(js)...)
		default:
			facets[FacetJetStream] = []string{fmt.Sprint(js)}
		}
		ps.Accounts = append(ps.Accounts, NewPrincipal(KindAccount, name, facets))
		for _, u := range list(body["users"]) {
			x, _ := u.(map[string]any)
			user, credential := str(x["user"]), str(x["password"])
			if nk := str(x["nkey"]); nk != "" {
				credential = nk
				if user == "" {
					// The file names an nkey user only in the comment meshc writes above it; a
					// file without one names it by its key.
					user = cmp.Or(named[nk], nk)
				}
			}
			perms, _ := x["permissions"].(map[string]any)
			pub, _ := perms["publish"].(map[string]any)
			sub, _ := perms["subscribe"].(map[string]any)
			ufacets := map[string][]string{
				FacetAccount:    {name},
				FacetCredential: nonEmpty(credential),
				FacetPubAllow:   strs(pub["allow"]),
				FacetPubDeny:    strs(pub["deny"]),
				FacetSubAllow:   strs(sub["allow"]),
				FacetSubDeny:    strs(sub["deny"]),
			}
			switch r := perms["allow_responses"].(type) {
			case bool:
				if r {
					ufacets[FacetResponses] = []string{"allowed"}
				}
			case map[string]any:
				ufacets[FacetResponses] = flat(r)
			}
			ps.Users = append(ps.Users, NewPrincipal(KindUser, user, ufacets))
		}
	}
	ps.Sort()
	return ps, nil
}

// nkeyUser is an nkey user as meshc writes it: its name in a comment, then its key.
var nkeyUser = regexp.MustCompile(`(?m)^\s*#\s*"([^"\n]+)"\s*\n\s*\{\s*\n\s*nkey:\s*"([^"\n]+)"`)

// nkeyNames maps each nkey user's key to the name meshc's comment gives it.
func nkeyNames(data []byte) map[string]string {
	out := map[string]string{}
	for _, m := range nkeyUser.FindAllSubmatch(data, -1) {
		out[string(m[2])] = string(m[1])
	}
	return out
}

func exportKind(x map[string]any) (kind, subject string) {
	if s, ok := x["stream"]; ok {
		return "stream", fmt.Sprint(s)
	}
	return "service", fmt.Sprint(x["service"])
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func strs(v any) []string {
	var out []string
	for _, x := range list(v) {
		out = append(out, fmt.Sprint(x))
	}
	if s, ok := v.(string); ok {
		out = append(out, s)
	}
	return out
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// flat writes a map of settings as "key value" lines, nested maps flattened with dots.
func flat(v any) []string {
	var out []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range sortedKeys(x) {
				walk(prefix+k+".", x[k])
			}
		case nil:
		default:
			out = append(out, strings.TrimSuffix(prefix, ".")+" "+fmt.Sprint(x))
		}
	}
	if v != nil {
		walk("", v)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// FromClaims reads account JWTs' claims into principals: each account, with whose its tags say
// it is (to plan's catalogue), whether meshc revoked it and when it was issued, and each user its
// scoped signing keys carry (a user's grants are its key's template; compiler/operator.go).
// Imports name their exporter by key: the plan's names for keys, then the claims', name it.
func FromClaims(claims []*jwt.AccountClaims, plan *compiler.Plan, from string) *Principals {
	ps := &Principals{Known: KnownWhole, From: from}
	names := KeyNames(plan, claims)
	flats := flatMemo{}
	for _, ac := range claims {
		facets := map[string][]string{FacetKey: {ac.Subject}, FacetIssuer: nonEmpty(ac.Issuer), FacetTags: ac.Tags}
		for _, e := range ac.Exports {
			what := e.Type.String() + " " + string(e.Subject)
			if e.ResponseType != "" && e.ResponseType != jwt.ResponseTypeSingleton {
				what += " (response " + strings.ToLower(string(e.ResponseType)) + ")"
			}
			if e.TokenReq {
				what += " (token required)"
			}
			facets[FacetExports] = append(facets[FacetExports], what)
		}
		for _, i := range ac.Imports {
			from := names[i.Account]
			if from == "" {
				from = i.Account
			}
			what := fmt.Sprintf("%s %s from %s", i.Type, i.Subject, from)
			if i.LocalSubject != "" {
				what += " as " + string(i.LocalSubject)
			}
			facets[FacetImports] = append(facets[FacetImports], what)
		}
		limits := flats.of(ac.Limits.AccountLimits)
		limits = append(limits, flats.of(ac.Limits.NatsLimits)...)
		facets[FacetLimits] = limits
		if ac.Limits.IsJSEnabled() {
			facets[FacetJetStream] = append([]string{"enabled"}, flats.of(ac.Limits.JetStreamLimits)...)
		}
		if ac.DefaultPermissions.Pub.Allow != nil || ac.DefaultPermissions.Sub.Allow != nil {
			facets["default permissions"] = flats.of(ac.DefaultPermissions)
		}
		name := ac.Name
		for key, s := range ac.SigningKeys {
			scope, ok := s.(*jwt.UserScope)
			switch {
			case !ok || scope == nil:
				// A signing key with no scope signs users with any permissions: no key meshc
				// writes is one, so one held is shown (and removed) as a change.
				facets["unscoped signing keys"] = append(facets["unscoped signing keys"], key)
				continue
			case scope.Role == compiler.ProbeRole:
				facets[FacetProbe] = []string{key}
				continue
			}
			t := scope.Template
			uf := map[string][]string{
				FacetAccount:    {name},
				FacetCredential: {key},
				FacetPubAllow:   t.Pub.Allow,
				FacetPubDeny:    t.Pub.Deny,
				FacetSubAllow:   t.Sub.Allow,
				FacetSubDeny:    t.Sub.Deny,
				FacetUserLimits: flats.of(t.Limits),
			}
			if t.Resp != nil {
				uf[FacetResponses] = []string{fmt.Sprintf("max %d", t.Resp.MaxMsgs), fmt.Sprintf("expires %s", t.Resp.Expires)}
			}
			u := NewPrincipal(KindUser, scope.Role, uf)
			u.Key = ac.Subject
			ps.Users = append(ps.Users, u)
		}
		p := NewPrincipal(KindAccount, name, facets)
		p.Key, p.IssuedAt = ac.Subject, ac.IssuedAt
		p.Ownership, p.Revoked = OwnershipOf(ac.Tags, plan), ac.Tags.Contains(RevokedTag)
		ps.Accounts = append(ps.Accounts, p)
	}
	ps.Sort()
	return ps
}

// WantedClaims is what an operator-mode catalogue derives: its accounts' claims as principals.
func WantedClaims(plan *compiler.Plan) (*Principals, error) {
	claims, err := plan.Claims()
	if err != nil {
		return nil, err
	}
	return WantedOf(plan, claims), nil
}

// WantedOf is WantedClaims of claims the caller derived already (plan.Claims).
func WantedOf(plan *compiler.Plan, claims []compiler.AccountClaims) *Principals {
	acs := make([]*jwt.AccountClaims, len(claims))
	for i, a := range claims {
		// Signed by the operator's signing key when pushed: a version held signed by any other
		// key is not the catalogue's.
		c := *a.Claims
		c.Issuer = plan.Operator.SigningKey
		acs[i] = &c
	}
	return FromClaims(acs, plan, "the catalogue")
}

// KeyNames maps account keys to names: the plan's, then those the held claims give.
func KeyNames(plan *compiler.Plan, held []*jwt.AccountClaims) map[string]string {
	out := map[string]string{}
	for _, ac := range held {
		out[ac.Subject] = ac.Name
	}
	if plan.Operator != nil {
		for name, key := range plan.Operator.Accounts {
			out[key] = name
		}
	}
	return out
}

// flatJSON writes a value's JSON fields as "key value" lines, for limits and permissions whose
// every field matters and none of which meshc should list by hand.
func flatJSON(data []byte) []string {
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		return nil
	}
	out := flat(m)
	slices.Sort(out)
	return out
}

// flatMemo flattens values (flatJSON of their JSON) for one read of many claims: most accounts
// and users of a mesh have the limits of the others of their kind, so each distinct JSON is
// decoded and flattened once, not once per account and user (at 10,000 modules, 24,655 of
// each). The lines are shared between callers, clipped so that an append copies them;
// NewPrincipal keeps a copy of each facet.
type flatMemo map[string][]string

func (m flatMemo) of(v any) []string {
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	if out, ok := m[string(data)]; ok {
		return out
	}
	out := slices.Clip(flatJSON(data))
	m[string(data)] = out
	return out
}

// RevokedTag marks an account meshc revoked (a version with no users and no connections) when
// the catalogue dropped it: it is deleted once every server answers, and is never any user's.
const RevokedTag = "meshc.revoked"

// OwnershipOf is what an account's tags say of whose it is, to plan's catalogue. A catalogue
// without an id (mesh.yaml's id:) marks its accounts with the mesh's name alone, and they are its
// own as its streams are; with an id, an account tagged with the mesh's name alone is from before
// accounts carried it, whichever catalogue's: updated if the catalogue has it, never removed.
func OwnershipOf(tags jwt.TagList, plan *compiler.Plan) Ownership {
	mesh, catalogue := compiler.OwnerTag(plan.Account), compiler.CatalogueTag(plan.Catalogue)
	switch {
	case plan.Catalogue != "" && tags.Contains(catalogue):
		return TaggedOurs
	case slices.ContainsFunc(tags, func(t string) bool {
		return strings.HasPrefix(t, compiler.CatalogueTagPrefix) || (strings.HasPrefix(t, compiler.OwnerTagPrefix) && t != mesh)
	}):
		return TaggedOther
	case tags.Contains(mesh) && plan.Catalogue == "":
		return TaggedOurs
	case tags.Contains(mesh):
		return TaggedMesh
	}
	return NotTagged
}
