package change

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Users and accounts are changes of the plan like streams and consumers (docs/nats.md, "Users
// and accounts in the plan"): what the bus holds of them and what the catalogue derives are put in
// one shape, a Principal with its facets, whether they come from an accounts file (password and
// nkey auth) or from account JWTs (operator mode), and one pure diff compares them. What differs
// is shown, counted, saved and delivered after every refusal and under the lock.

// Kinds of the change model's principals.
const (
	KindUser         Kind = "user"
	KindAccount      Kind = "account"
	KindAccountsFile Kind = "accounts file"
)

// Facet names: what may differ about a principal. A user's grants are four lists, its
// credential one value; an account's exports and imports one value each (an export once per
// account it goes to), its limits one value per limit.
const (
	FacetAccount    = "account"
	FacetCredential = "credential"
	FacetPubAllow   = "publish allow"
	FacetPubDeny    = "publish deny"
	FacetSubAllow   = "subscribe allow"
	FacetSubDeny    = "subscribe deny"
	FacetResponses  = "responses"
	FacetUserLimits = "user limits"
	FacetExports    = "exports"
	FacetImports    = "imports"
	FacetLimits     = "limits"
	FacetJetStream  = "jetstream"
	FacetProbe      = "probe key"
	FacetKey        = "key"
	FacetIssuer     = "issuer"
	FacetTags       = "tags"
)

// Principal is one bus user or account.
type Principal struct {
	Kind Kind   `json:"kind"`
	Name string `json:"name"`
	// Facets are what a principal is, by facet name, each a sorted list of values. Nil when only
	// Digests are known (the record apply keeps of the last accounts file it delivered).
	Facets map[string][]string `json:"facets,omitempty"`
	// Digests are each facet's digest: what two principals are compared by when one side holds
	// no values.
	Digests map[string]string `json:"digests"`

	// What only a held account in operator mode says (Resolver, in apply).
	//
	// Key is, in operator mode, the account's public key, its identity (JetStream keeps the
	// account's streams under it); for a user, its account's.
	Key string `json:"key,omitempty"`
	// Ownership is what the account's tags say of whose it is.
	Ownership Ownership `json:"-"`
	// Revoked: meshc pushed a revoking version of it (no users, no connections), which a
	// returning server takes from the others; it is deleted once every server answers.
	Revoked bool `json:"-"`
	// IssuedAt is the issue time of the newest version any server holds.
	IssuedAt int64 `json:"-"`
	// Pushed is the issue time of the version meshc last pushed, as recorded on the bus (0: none
	// recorded): a version held issued before it was put back by someone else.
	Pushed int64 `json:"-"`
	// Streams are the JetStream streams the account holds, when the servers were asked (an
	// account meshc would remove): such an account is never deleted.
	Streams []string `json:"-"`
}

// Ownership is what an account's tags say of whose it is, to one catalogue.
type Ownership int

const (
	// NotTagged: no meshc tag; another tenant's, never changed.
	NotTagged Ownership = iota
	// TaggedOurs: this catalogue's tag (mesh.yaml's id).
	TaggedOurs
	// TaggedMesh: the mesh's tag alone (from before accounts carried the catalogue's id): this
	// catalogue's or another's of the same mesh name; updated when the plan has it, never
	// deleted.
	TaggedMesh
	// TaggedOther: another mesh's or another catalogue's tag; never changed.
	TaggedOther
)

// Knowledge is how much a held side says.
type Knowledge int

const (
	// KnownNothing: the bus records nothing meshc can read of its users (no delivery recorded).
	KnownNothing Knowledge = iota
	// KnownDigests: only each principal's facet digests (the record of the last delivery).
	KnownDigests
	// KnownWhole: every user and account with its settings (a file read, the resolver's JWTs).
	KnownWhole
)

// Principals are a side's users and accounts.
type Principals struct {
	Known Knowledge `json:"-"`
	// From says where the held side was read, for the person reading the plan: "the accounts
	// file /etc/nats/accounts.conf", "the servers' resolver", "golden/accounts.conf".
	From string `json:"-"`
	// File is the accounts file's digest (password and nkey auth), "" in operator mode.
	File     string      `json:"file,omitempty"`
	Users    []Principal `json:"users"`
	Accounts []Principal `json:"accounts"`
	// Undelivered, when set, says who delivers the users and accounts instead of this apply:
	// their changes are shown and not applied.
	Undelivered string `json:"-"`
	// Servers that hold the accounts and those known that did not answer (operator mode): a
	// removed account is deleted only when none is down.
	Servers, Down []string `json:"-"`
	// ServersKnown: the servers that should hold the resolver are known (the JetStream meta
	// group), so "none is down" can be told; false on a server that cannot say.
	ServersKnown bool `json:"-"`
}

// NewPrincipal makes a principal from its facets, sorting each list and computing its digests.
func NewPrincipal(kind Kind, name string, facets map[string][]string) Principal {
	p := Principal{Kind: kind, Name: name, Facets: map[string][]string{}, Digests: map[string]string{}}
	for f, vs := range facets {
		vs = slices.Clone(vs)
		slices.Sort(vs)
		vs = slices.Compact(vs)
		if len(vs) == 0 {
			continue
		}
		p.Facets[f] = vs
		p.Digests[f] = facetDigest(vs)
	}
	return p
}

// facetDigest is a short digest of a facet's values: 96 bits, enough to tell any two apart, and
// small enough that the record of 30,000 principals fits a message.
func facetDigest(values []string) string {
	h := sha256.New()
	for _, v := range values {
		h.Write([]byte(v))
		h.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:12])
}

// Sort puts the users and accounts in name order.
func (ps *Principals) Sort() {
	by := func(a, b Principal) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Key, b.Key)) }
	slices.SortFunc(ps.Users, by)
	slices.SortFunc(ps.Accounts, by)
}

// User returns the named user, or nil.
func (ps *Principals) User(name string) *Principal { return find(ps.Users, name) }

// Account returns the named account, or nil (in operator mode, the first of that name).
func (ps *Principals) Account(name string) *Principal { return find(ps.Accounts, name) }

// accountByKey is the account of that key in operator mode, else of that name.
func (ps *Principals) accountByKey(name, key string) *Principal {
	if key == "" {
		return ps.Account(name)
	}
	for i := range ps.Accounts {
		if ps.Accounts[i].Key == key {
			return &ps.Accounts[i]
		}
	}
	return nil
}

// Refusals are why no flag permits some changes of the users and accounts, one sentence each.
func (cs Changes) Refusals() []string {
	var out []string
	for _, c := range cs.Principals {
		if c.Refused != "" {
			out = append(out, c.Refused)
		}
	}
	return out
}

func find(list []Principal, name string) *Principal {
	i, ok := slices.BinarySearchFunc(list, name, func(p Principal, n string) int { return cmp.Compare(p.Name, n) })
	if !ok {
		return nil
	}
	return &list[i]
}

// Digested is the principals with their values dropped: what the bus records of a delivery.
func (ps *Principals) Digested() *Principals {
	out := &Principals{Known: KnownDigests, File: ps.File}
	for _, list := range []struct{ from, to *[]Principal }{{&ps.Users, &out.Users}, {&ps.Accounts, &out.Accounts}} {
		for _, p := range *list.from {
			*list.to = append(*list.to, Principal{Kind: p.Kind, Name: p.Name, Key: p.Key, Digests: p.Digests})
		}
	}
	return out
}

// ReKeyed is the refusal a mesh account gets whose recorded key differs from the one the
// servers hold it under: JetStream keeps its streams under the old key.
const reKeyedHow = "an account's key is its identity, and JetStream keeps its streams under it: put the old key back in keys.yaml (accounts: %s: %s), or move the streams to the new account first (nats stream backup as the old account's user, then restore as mesh-controller) and delete the old account by hand"

// DiffPrincipals compares what the bus holds of its users and accounts with what the catalogue
// derives, in the catalogue's words: a pure function, so a plan shows exactly what a delivery
// does. Accounts are matched by key where keys are known (operator mode) and by name otherwise;
// users by name.
func DiffPrincipals(held, want *Principals, mesh string) []Change {
	var out []Change
	if held == nil || held.Known == KnownNothing {
		return nil
	}
	keyed := slices.ContainsFunc(want.Accounts, func(p Principal) bool { return p.Key != "" })
	if !keyed && held.File != want.File {
		// The accounts file is what a password or nkey mesh's server runs: what differs in it
		// is delivered by writing it whole and reloading.
		c := Change{Kind: KindAccountsFile, Action: Update, Principal: held.From,
			Fields: []Field{{Name: "digest", Old: cmp.Or(held.File, "none"), New: want.File}}}
		if held.File == "" {
			c.Action = Create
		}
		out = append(out, c)
	}
	// Accounts.
	heldBy := map[string]*Principal{}
	for i := range held.Accounts {
		heldBy[accountID(held.Accounts[i], keyed)] = &held.Accounts[i]
	}
	wanted := map[string]bool{}
	for _, w := range want.Accounts {
		id := accountID(w, keyed)
		wanted[id] = true
		h := heldBy[id]
		c := Change{Kind: KindAccount, Principal: w.Name, Key: w.Key}
		switch {
		case h == nil:
			c.Action = Create
			c.Fields = facetFields(nil, &w, Create)
			if keyed {
				if old := renamedFrom(held, w); old != nil {
					c.Notes = append(c.Notes, fmt.Sprintf("the servers hold account %s under another key, %s: this catalogue records %s", w.Name, old.Key, w.Key))
					if w.Name == mesh {
						c.Refused = fmt.Sprintf("the mesh's account %s is recorded under a new key (%s), but the servers hold it under %s%s, and every stream lives under that key: "+reKeyedHow,
							w.Name, w.Key, old.Key, streamsSaid(old.Streams), w.Name, old.Key)
					}
				}
			}
		case h.Ownership == TaggedOther || (keyed && h.Ownership == NotTagged):
			c.Action = Update
			c.Refused = fmt.Sprintf("account %s (%s) is held by the servers with %s: it is not this catalogue's, and meshc never changes another's account", w.Name, w.Key, ownershipSaid(h.Ownership))
		default:
			c.Fields = facetFields(h, &w, Update)
			if h.Revoked {
				c.Fields = append(c.Fields, Field{Name: "revoked", Old: "yes", New: "no"})
				c.Notes = append(c.Notes, fmt.Sprintf("account %s was revoked when the catalogue dropped it; it comes back with the catalogue's users", w.Name))
			}
			if h.Pushed > 0 && h.IssuedAt < h.Pushed {
				c.Fields = append(c.Fields, Field{Name: "issued", Old: fmt.Sprint(h.IssuedAt), New: fmt.Sprint(h.Pushed)})
				c.Notes = append(c.Notes, fmt.Sprintf("rolled back: the servers hold a version of account %s issued at %d, older than the one meshc pushed (%d): someone pushed an older JWT (whoever holds the system user's credentials can); apply pushes the catalogue's again, and rotate the system user's credentials if it was not you",
					w.Name, h.IssuedAt, h.Pushed))
			}
			c.Action = NoOp
			if len(c.Fields) > 0 {
				c.Action = Update
			}
		}
		out = append(out, c)
	}
	for _, h := range held.Accounts {
		id := accountID(h, keyed)
		if wanted[id] {
			continue
		}
		if keyed && h.Ownership != TaggedOurs {
			// Never removed: another's, or tagged with the mesh's name alone (which catalogue's
			// is not known).
			if h.Ownership == TaggedMesh && !h.Revoked {
				out = append(out, Change{Kind: KindAccount, Action: NoOp, Principal: h.Name, Key: h.Key,
					Notes: []string{fmt.Sprintf("account %s (%s) carries the mesh's tag but no catalogue's, and this catalogue no longer has it: left alone, since it may be another catalogue's of the same mesh; revoke it by hand if it is this one's", h.Name, h.Key)}})
			}
			continue
		}
		c := Change{Kind: KindAccount, Action: Delete, Principal: h.Name, Key: h.Key, Fields: facetFields(&h, nil, Delete)}
		switch {
		case !keyed && h.Digests[FacetJetStream] != "":
			// The server keeps an account's streams in a directory named after it: an account
			// file that drops the account drops every stream from reach (the mesh renamed).
			c.Refused = fmt.Sprintf("account %s runs JetStream, and its streams live under its name: the accounts file would drop it and leave them unreachable; give mesh.yaml its name back, or move the streams first", h.Name)
		case len(h.Streams) > 0:
			c.Action = Update
			c.Revokes = true
			c.Notes = append(c.Notes, fmt.Sprintf("account %s holds JetStream streams (%s): it is revoked (no user can connect), never deleted; move or delete its streams, and a later apply deletes it", h.Name, strings.Join(h.Streams, ", ")))
		case h.Revoked && held.ServersKnown && len(held.Down) == 0:
			c.Notes = append(c.Notes, fmt.Sprintf("account %s was revoked by an earlier apply; every server answers now, so it is deleted", h.Name))
		case h.Revoked:
			c.Action = NoOp
			c.Fields = nil
			c.Notes = append(c.Notes, fmt.Sprintf("account %s is revoked; it is deleted from the servers once every one of them answers (%s)", h.Name, downSaid(held)))
		case keyed:
			c.Revokes = true
			if !held.ServersKnown || len(held.Down) > 0 {
				c.Action = Update
				c.Notes = append(c.Notes, fmt.Sprintf("account %s is revoked: a version with no users and no connections, newer than any a server holds, which a server that was down takes from the others when it returns (%s); it is deleted once every server answers", h.Name, downSaid(held)))
			} else {
				c.Notes = append(c.Notes, fmt.Sprintf("account %s is revoked first (a newer version no server would exchange for an older one), then deleted", h.Name))
			}
		}
		out = append(out, c)
	}
	// Users.
	for _, w := range want.Users {
		h := held.User(w.Name)
		c := Change{Kind: KindUser, Principal: w.Name}
		if h == nil {
			c.Action = Create
			c.Fields = facetFields(nil, &w, Create)
		} else {
			c.Fields = facetFields(h, &w, Update)
			if len(c.Fields) > 0 {
				c.Action = Update
			}
		}
		if slices.ContainsFunc(c.Fields, func(f Field) bool { return f.Name == FacetCredential }) && h != nil {
			c.Notes = append(c.Notes, fmt.Sprintf("credential re-minted: whoever minted it can log in as %s, and the holder of the old one no longer can", w.Name))
		}
		out = append(out, c)
	}
	for _, h := range held.Users {
		if want.User(h.Name) == nil {
			out = append(out, Change{Kind: KindUser, Action: Delete, Principal: h.Name, Fields: facetFields(&h, nil, Delete)})
		}
	}
	slices.SortStableFunc(out, func(a, b Change) int {
		return cmp.Or(cmp.Compare(kindOrder(a.Kind), kindOrder(b.Kind)), cmp.Compare(a.Principal, b.Principal), cmp.Compare(a.Key, b.Key))
	})
	return out
}

func accountID(p Principal, keyed bool) string {
	if keyed {
		return p.Key
	}
	return p.Name
}

// renamedFrom is a held account of this catalogue (or the mesh) with the wanted one's name under
// another key.
func renamedFrom(held *Principals, w Principal) *Principal {
	for i := range held.Accounts {
		h := &held.Accounts[i]
		if h.Name == w.Name && h.Key != w.Key && (h.Ownership == TaggedOurs || h.Ownership == TaggedMesh) {
			return h
		}
	}
	return nil
}

func streamsSaid(streams []string) string {
	if len(streams) == 0 {
		return ""
	}
	return " (streams " + strings.Join(streams, ", ") + ")"
}

func downSaid(held *Principals) string {
	switch {
	case !held.ServersKnown:
		return "the servers could not say which of them hold the resolver"
	case len(held.Down) > 0:
		return strings.Join(held.Down, ", ") + " did not answer"
	}
	return "every server answered"
}

func ownershipSaid(o Ownership) string {
	switch o {
	case TaggedOther:
		return "another catalogue's or another mesh's tag"
	case NotTagged:
		return "no meshc tag"
	}
	return "this catalogue's tag"
}

// facetFields says what differs between a held principal and a wanted one (either nil: created
// or deleted), facet by facet. Values are compared where both sides hold them, digests otherwise.
func facetFields(held, want *Principal, a Action) []Field {
	names := map[string]bool{}
	for _, p := range []*Principal{held, want} {
		if p != nil {
			for f := range p.Digests {
				names[f] = true
			}
		}
	}
	var out []Field
	for _, name := range slices.Sorted(maps.Keys(names)) {
		var hv, wv []string
		var hd, wd string
		if held != nil {
			hv, hd = held.Facets[name], held.Digests[name]
		}
		if want != nil {
			wv, wd = want.Facets[name], want.Digests[name]
		}
		if hd == wd {
			continue
		}
		f := Field{Name: name}
		switch {
		case name == FacetCredential || name == FacetAccount || name == FacetKey:
			f.Old, f.New = single(hv, hd), single(wv, wd)
			if name == FacetCredential {
				f.Old, f.New = fingerprint(hv, hd), fingerprint(wv, wd)
			}
		case (held == nil || held.Facets != nil) && (want == nil || want.Facets != nil):
			f.Added, f.Removed = delta(hv, wv)
			f.Old, f.New = listSaid(hv), listSaid(wv)
		default:
			// One side knows only the digest: it differs, and that is all a reader can be told.
			f.Old, f.New = "as delivered", "differs"
			if a == Create {
				f.Old = "none"
			}
		}
		out = append(out, f)
	}
	return out
}

func single(values []string, digest string) string {
	switch {
	case len(values) == 1:
		return values[0]
	case len(values) > 1:
		return strings.Join(values, ", ")
	case digest != "":
		return "digest " + digest
	}
	return "none"
}

// fingerprint names a credential without writing it out: a hash's or key's last characters.
func fingerprint(values []string, digest string) string {
	switch {
	case len(values) == 1 && len(values[0]) > 8:
		return "…" + values[0][len(values[0])-8:]
	case len(values) == 1:
		return values[0]
	case digest != "":
		return "digest " + digest
	}
	return "none"
}

func listSaid(values []string) string {
	if len(values) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d", len(values))
}

// delta is what now holds that was does not (added), and the reverse (removed).
func delta(was, now []string) (added, removed []string) {
	in := func(list []string, v string) bool { _, ok := slices.BinarySearch(list, v); return ok }
	for _, v := range now {
		if !in(was, v) {
			added = append(added, v)
		}
	}
	for _, v := range was {
		if !in(now, v) {
			removed = append(removed, v)
		}
	}
	return added, removed
}

// Record is what the bus keeps of a delivered accounts file (apply records it in its bucket):
// each principal's facet digests, compressed — at 10,000 modules a few hundred kilobytes rather
// than the file's 27 MB — so a later plan can say who differs without the file.
func (ps *Principals) Record() ([]byte, error) {
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	if err := json.NewEncoder(z).Encode(ps.Digested()); err != nil {
		return nil, err
	}
	if err := z.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ReadRecord reads what Record wrote: principals known by their digests.
func ReadRecord(data []byte, from string) (*Principals, error) {
	z, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	var ps Principals
	if err := json.NewDecoder(io.LimitReader(z, 256<<20)).Decode(&ps); err != nil {
		return nil, err
	}
	ps.Known, ps.From = KnownDigests, from
	ps.Sort()
	return &ps, nil
}
