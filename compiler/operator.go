package compiler

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"

	"github.com/meshc-dev/meshc/catalogue"
)

// Operator mode (mesh.yaml `auth: operator`; docs/nats.md, "Operator mode").
//
// Every account of the plan becomes an account JWT, derived here as data and signed only at
// apply time by whoever holds the operator's signing key. What the accounts file said, the
// claims say: exports, imports, JetStream for the mesh's account alone. A user's permissions
// live in its account, as the template of a signing key of its own, scoped: its JWT carries no
// permissions, so a grant changed is one account pushed and no credential is issued again, and
// the server closes only the clients signed by a key whose scope changed. One key per user
// rather than per account, because users sharing an account (every user, with
// isolation: shared-account) do not share grants, and a key's scope is one set of grants.

// OperatorKeys are the public keys of an operator-mode mesh, as keys.yaml records them.
type OperatorKeys struct {
	Operator, SigningKey, SystemAccount, ProbeKey string
	// Accounts maps an account's name to its recorded key.
	Accounts map[string]string
}

// AccountClaims is one account of the plan as its JWT will say it: everything but the issuer,
// the time it was issued and its id, which apply stamps when it signs.
type AccountClaims struct {
	Name   string
	Kind   AccountKind
	Claims *jwt.AccountClaims
	// From are the accounts this one imports from, by name: apply pushes them first.
	From []string
}

// MaxAccountJWT is the largest account JWT the server takes: jwt's decoder refuses anything
// longer, whatever max_payload says (docs/nats.md, "Operator mode at scale").
const MaxAccountJWT = jwt.MaxTokenSize

// ResponseTTL is how long a tool server may answer a request it received: the server's own
// default for allow_responses, which the accounts file relies on.
const ResponseTTL = 2 * time.Minute

// ErrNoOperator is returned for a plan whose mesh does not run in operator mode.
var ErrNoOperator = errors.New("the mesh does not run in operator mode (auth: operator in mesh.yaml)")

// accounts is the plan's accounts, the mesh's one account holding every user when the mesh is
// not isolated.
func (p *Plan) accounts() []Account {
	if len(p.Accounts) > 0 {
		return p.Accounts
	}
	mesh := *p.MeshAccount()
	if len(mesh.Users) == 0 {
		// A plan not from the compiler: its users, with no limits derived.
		for _, u := range p.Users {
			mesh.Users = append(mesh.Users, u.Name)
		}
	}
	return []Account{mesh}
}

// OperatorAccounts are the names of the accounts whose JWTs the plan derives: the plan's, and
// the tool hubs operator mode adds.
func (p *Plan) OperatorAccounts() []string {
	var out []string
	for _, a := range p.jwtAccounts(p.usersByName()) {
		out = append(out, a.Name)
	}
	return out
}

func (p *Plan) usersByName() map[string]*User {
	users := make(map[string]*User, len(p.Users))
	for i := range p.Users {
		users[p.Users[i].Name] = &p.Users[i]
	}
	return users
}

// Claims derives every account's claims. A user with no recorded signing key is left out (it
// cannot connect until minted; lint says credential-missing); an account with no recorded key
// cannot be written at all, since other accounts import from it by its key.
func (p *Plan) Claims() ([]AccountClaims, error) {
	if p.Operator == nil {
		return nil, ErrNoOperator
	}
	keys := p.Operator
	var missing []string
	if keys.SigningKey == "" || keys.ProbeKey == "" || keys.Operator == "" || keys.SystemAccount == "" {
		return nil, fmt.Errorf("keys.yaml records no operator (or no signing, probe or system account key): run `meshc operator init` once, which makes the operator's keys and the servers' configuration")
	}
	users := p.usersByName()
	accounts := p.jwtAccounts(users)
	out := make([]AccountClaims, 0, len(accounts))
	for _, a := range accounts {
		if keys.Accounts[a.Name] == "" {
			missing = append(missing, a.Name)
			continue
		}
		out = append(out, p.accountClaims(a, users, keys.Accounts))
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("no recorded key for account(s) %s in keys.yaml: an account's key is its identity, which other accounts import from; run `meshc mint --missing`, which records them", excerptList(missing, 10))
	}
	return out, nil
}

// accountClaims is one account's claims, its key and its exporters' the keys gives (an import
// from an account with none is left out: said once, as that account's own missing key).
func (p *Plan) accountClaims(a Account, users map[string]*User, keys map[string]string) AccountClaims {
	ac := jwt.NewAccountClaims(keys[a.Name])
	ac.Name = a.Name
	ac.Tags = jwt.TagList{OwnerTag(p.Account)}
	if p.Catalogue != "" {
		ac.Tags.Add(CatalogueTag(p.Catalogue))
	}
	ac.Limits = accountLimits(a)
	// A user signed by the account's own key (whose seed nobody keeps) would get these: nothing.
	ac.DefaultPermissions = denyAll()
	ac.SigningKeys.AddScopedSigner(&jwt.UserScope{Kind: jwt.UserScopeType, Key: p.Operator.ProbeKey, Role: ProbeRole,
		Template: jwt.UserPermissionLimits{Permissions: denyAll(), Limits: userLimits(nil)}})
	for _, name := range a.Users {
		u := users[name]
		if u == nil || u.SigningKey == "" {
			continue
		}
		ac.SigningKeys.AddScopedSigner(&jwt.UserScope{Kind: jwt.UserScopeType, Key: u.SigningKey, Role: u.Name, Template: userTemplate(u)})
	}
	for _, e := range a.Exports {
		x := &jwt.Export{Subject: jwt.Subject(e.Subject), Type: exportType(e.Kind)}
		if e.ResponseStream {
			x.ResponseType = jwt.ResponseTypeStream
		}
		ac.Exports = append(ac.Exports, x)
	}
	var from []string
	for _, i := range a.Imports {
		from = append(from, i.Account)
		exporter := keys[i.Account]
		if exporter == "" {
			continue
		}
		ac.Imports = append(ac.Imports, &jwt.Import{Name: i.Account, Subject: jwt.Subject(i.Subject), Account: exporter, Type: exportType(i.Kind)})
	}
	return AccountClaims{Name: a.Name, Kind: a.Kind, Claims: ac, From: sortedSet(from)}
}

// The accounts as their JWTs say them differ from the accounts file's in how tools cross, which
// is what keeps every JWT under the server's 1 MiB cap (docs/nats.md, "Operator mode at scale"):
//
//   - An account exports every tool of a module it serves as one wildcard, mesh.mod.<module>.tool.*
//     (the server refuses exports contained in one another, so it is the only export of them),
//     and imports the tools of a module its users may all call as that wildcard.
//   - An account whose users may call every tool (a person's "*") imports none of them from the
//     accounts that serve them: it imports mesh.mod.*.tool.* from each of a few tool hubs, and
//     each hub imports the tools of its share of the serving accounts and exports them on. A
//     call enters every hub and is forwarded by the one hub that imports the tool; the others
//     have nobody to deliver it to, and the caller gets one answer, or "no responders" for a tool
//     nobody serves. The tool server's Nats-Request-Info names the caller's account, stamped at
//     the first hop. Without hubs, a person who may call every tool of 10,000 modules needs an
//     import per serving account: 6,656 imports, a 1.4 MB JWT.
//
// The exports are public: only the operator's signing key signs an import, and meshc writes
// every import, each within its account's grants, so a wider export admits nobody new. Hubs have
// no users, so nothing is published in them but the calls they forward.

// HubShare is how many serving accounts one tool hub imports from: 2,000 wildcard imports are
// about 430 KB of JWT, well under the cap whatever the share a hash gives one hub.
const HubShare = 2000

// everyTool is the subject of every tool, which a person's "*" is granted.
var everyTool = Tool("*", "*")

// callsEveryTool reports whether a user of the account may call every tool (a person's "*").
func callsEveryTool(a *Account, users map[string]*User) bool {
	return slices.ContainsFunc(a.Users, func(name string) bool { u := users[name]; return u != nil && u.callsEvery })
}

// servingModules maps each account that exports tools to the modules whose tools it exports.
func servingModules(accounts []Account) map[string][]string {
	serving := map[string][]string{}
	for _, a := range accounts {
		for _, e := range a.Exports {
			if e.Module != "" && e.Kind == ServiceExport && !slices.Contains(serving[a.Name], e.Module) {
				serving[a.Name] = append(serving[a.Name], e.Module)
			}
		}
	}
	return serving
}

// ShareHubs derives the plan's tool hubs again with at most share serving accounts a hub (0:
// HubShare), and its served tools' hubs and keys with them: a test of a mesh with several hubs,
// which would otherwise take thousands of serving modules.
func (p *Plan) ShareHubs(share int) {
	p.hubShare = share
	p.Hubs = p.toolHubs()
	for i := range p.Tools {
		p.Tools[i].Hubs, p.Tools[i].Keys = nil, nil
	}
	if p.Operator != nil {
		p.operatorTools()
	}
}

// toolHubs derives the tool hubs of an operator-mode mesh from its accounts, once (compile):
// none unless an account whose users may call every tool serves none itself; then enough hubs
// that each imports the tools of at most about HubShare serving accounts, each serving account
// in the one its name hashes to. Every later reader — the JWTs, the served tools' hubs, the
// accounts apply pushes — reads these.
func (p *Plan) toolHubs() []Account {
	plain := p.accounts()
	serving := servingModules(plain)
	users := p.usersByName()
	if len(serving) == 0 || !slices.ContainsFunc(plain, func(a Account) bool {
		return callsEveryTool(&a, users) && len(serving[a.Name]) == 0
	}) {
		return nil
	}
	share := cmp.Or(p.hubShare, HubShare)
	hubs := make([]Account, (len(serving)+share-1)/share)
	for k := range hubs {
		hubs[k] = Account{Name: ToolHubAccount(k + 1), Kind: AccountHub, Exports: []Export{{Kind: ServiceExport, Subject: everyTool}},
			Limits: AccountLimits{NoLeafnodes: true}}
	}
	for _, name := range slices.Sorted(maps.Keys(serving)) {
		h := &hubs[hubOf(name, len(hubs))]
		for _, m := range serving[name] {
			h.Imports = append(h.Imports, Import{Kind: ServiceExport, Subject: Tool(m, "*"), Account: name, Module: m})
		}
	}
	return sortedJWT(hubs)
}

// jwtAccounts are the plan's accounts with exports and imports as the JWTs say them, then the tool
// hubs.
func (p *Plan) jwtAccounts(users map[string]*User) []Account {
	plain := p.accounts()
	out := make([]Account, 0, len(plain)+len(p.Hubs))
	serving := servingModules(plain)
	for _, a := range plain {
		every := callsEveryTool(&a, users)
		// Through the hubs, unless it serves tools itself: its import of every tool from a hub
		// would bring its own back, a cycle.
		viaHubs := every && len(serving[a.Name]) == 0 && len(p.Hubs) > 0
		j := Account{Name: a.Name, Kind: a.Kind, JetStream: a.JetStream, Users: a.Users, Limits: a.Limits, JetStreamLimits: a.JetStreamLimits}
		seen := map[string]bool{}
		for _, e := range a.Exports {
			if e.Module != "" && e.Kind == ServiceExport {
				if e.Subject = Tool(e.Module, "*"); seen[e.Subject] {
					continue
				}
				seen[e.Subject] = true
			}
			j.Exports = append(j.Exports, e)
		}
		j.Exports = withoutContained(j.Exports)
		seenImport := map[Import]bool{}
		for _, i := range a.Imports {
			if i.Module != "" && i.Kind == ServiceExport {
				if viaHubs {
					continue
				}
				if every {
					i.Subject = Tool(i.Module, "*") // its users may call every tool of the module
				}
			}
			if !seenImport[i] {
				seenImport[i] = true
				j.Imports = append(j.Imports, i)
			}
		}
		if viaHubs {
			for _, h := range p.Hubs {
				j.Imports = append(j.Imports, Import{Kind: ServiceExport, Subject: everyTool, Account: h.Name})
			}
		}
		out = append(out, j)
	}
	return sortedJWT(append(out, p.Hubs...))
}

// withoutContained drops each export another export of its kind contains: a JWT refuses exports
// contained in one another, where an accounts file takes them. The one there is the mesh
// account's $JS.API.INFO, exported as a singleton beside $JS.>'s stream of answers; in operator
// mode its importers reach it through $JS.>, and an INFO's answer is held as a pull's is (until the
// server's response threshold: docs/nats.md, "Limits and floods").
func withoutContained(exports []Export) []Export {
	out := exports[:0:0]
	for _, e := range exports {
		if !slices.ContainsFunc(exports, func(o Export) bool {
			return o.Kind == e.Kind && o.Subject != e.Subject && Covers(o.Subject, e.Subject)
		}) {
			out = append(out, e)
		}
	}
	return out
}

// hubOf is the hub a serving account's tools go through: a hash of its name, so a module added
// changes one hub, not all.
func hubOf(account string, hubs int) int {
	h := fnv.New32a()
	h.Write([]byte(account))
	return int(h.Sum32() % uint32(hubs))
}

// sortedJWT sorts each account's exports by subject and imports by subject, then account.
func sortedJWT(accounts []Account) []Account {
	for i := range accounts {
		a := &accounts[i]
		slices.SortStableFunc(a.Exports, func(x, y Export) int { return strings.Compare(x.Subject, y.Subject) })
		slices.SortStableFunc(a.Imports, func(x, y Import) int {
			if c := strings.Compare(x.Subject, y.Subject); c != 0 {
				return c
			}
			return strings.Compare(x.Account, y.Account)
		})
	}
	return accounts
}

// accountLimits are an account's limits as its JWT says them: the same the accounts file gives it
// (limits.go; docs/catalogue.md, "Limits and their defaults"), and JetStream for the mesh's
// account alone, which holds the streams (an account with JetStream of its own answers its
// users' pulls from an empty store: docs/nats.md, "Accounts, exports and imports"). One more
// connection than its users' is room for apply's probe, which connects to every account it
// pushes (a bus whose users hold every connection they may would otherwise fail the probe). A
// tool hub has no users and takes only the probe.
func accountLimits(a Account) jwt.OperatorLimits {
	l := jwt.NewAccountClaims("A").Limits
	if a.Limits.Connections > 0 || a.Limits.NoLeafnodes { // derived (a plan not from the compiler has none)
		l.Conn = a.Limits.Connections + 1
	}
	if a.Limits.Subscriptions > 0 {
		l.Subs = a.Limits.Subscriptions
	}
	if a.Limits.Payload > 0 {
		l.Payload = a.Limits.Payload
	}
	if a.Limits.NoLeafnodes {
		l.LeafNodeConn = 0
	}
	if a.JetStream {
		js := a.JetStreamLimits
		l.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: orNoLimit(js.MaxMemory), DiskStorage: orNoLimit(js.MaxFile),
			Streams: orNoLimit(js.MaxStreams), Consumer: orNoLimit(js.MaxConsumers)}
	}
	return l
}

// orNoLimit is a derived limit as a JWT says it: zero (not set) and -1 are both no limit.
func orNoLimit(n int64) int64 {
	if n <= 0 {
		return jwt.NoLimit
	}
	return n
}

// userLimits are a user's connection limits, none: this is where per-user limits are mapped onto
// the scope's template (a user JWT under a scoped key may carry none of its own).
func userLimits(*User) jwt.Limits {
	return jwt.Limits{NatsLimits: jwt.NatsLimits{Subs: jwt.NoLimit, Data: jwt.NoLimit, Payload: jwt.NoLimit}}
}

// userTemplate is a user's permissions as its scoped key's template: exactly the accounts
// file's, allow_responses as one answer within the server's default two minutes.
func userTemplate(u *User) jwt.UserPermissionLimits {
	t := jwt.UserPermissionLimits{Limits: userLimits(u)}
	t.Pub = jwt.Permission{Allow: u.Publish.Allow, Deny: u.Publish.Deny}
	t.Sub = jwt.Permission{Allow: u.Subscribe.Allow, Deny: u.Subscribe.Deny}
	if u.AllowResponses {
		t.Resp = &jwt.ResponsePermission{MaxMsgs: 1, Expires: ResponseTTL}
	}
	return t
}

func denyAll() jwt.Permissions {
	return jwt.Permissions{Pub: jwt.Permission{Deny: []string{">"}}, Sub: jwt.Permission{Deny: []string{">"}}}
}

func exportType(k ExportKind) jwt.ExportType {
	if k == StreamExport {
		return jwt.Stream
	}
	return jwt.Service
}

// Canonical is an account's claims as JSON without what signing stamps (issuer, time, id): the
// same catalogue gives the same bytes, and what a resolver holds compares equal with what the
// catalogue derives exactly when pushing it again would change nothing.
func Canonical(ac *jwt.AccountClaims) ([]byte, error) {
	b, err := unstamped(ac)
	if err != nil {
		return nil, err
	}
	return unescapeHTML(b), nil
}

// unstamped is the claims as the signed JWT encodes them, without what signing stamps: `>` as
// \u003e, as encoding/json writes it there.
func unstamped(ac *jwt.AccountClaims) ([]byte, error) {
	c := *ac
	c.Issuer, c.IssuedAt, c.ID = "", 0, ""
	c.Type, c.Version = jwt.AccountClaim, 2
	return json.Marshal(&c)
}

// unescapeHTML writes `<`, `>` and `&` as themselves where encoding/json wrote \u003c, \u003e
// and \u0026 (the golden file shows these bytes to a reviewer, and `>` ends half the subjects).
// It reads escapes left to right, as a JSON reader does, so an escaped backslash followed by
// "u003e" stays as it was. An encoder without HTML escaping cannot do this: the claims'
// signing keys marshal themselves with json.Marshal (jwt's SigningKeys.MarshalJSON), so the
// `>` of every scoped key's template would still come out escaped.
func unescapeHTML(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 == len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			switch string(b[i+2 : i+6]) {
			case "003c", "003e", "0026":
				out = append(out, map[string]byte{"003c": '<', "003e": '>', "0026": '&'}[string(b[i+2:i+6])])
				i += 5
				continue
			}
		}
		out = append(out, b[i], b[i+1])
		i++
	}
	return out
}

// Size is how long the account's JWT will be, within a few bytes: the header, the payload with
// an issuer, time and id, and the signature, each in base64.
func (a AccountClaims) Size() (int, error) {
	// The signed form, not the canonical one: each `>` is six bytes there, and an account under
	// the cap by the canonical count could be over it as the server reads it.
	canonical, err := unstamped(a.Claims)
	if err != nil {
		return 0, err
	}
	const header = len(`eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ`)
	const stamped = len(`,"jti":"","iat":,"iss":""`) + 52 + 10 + 56
	return header + 1 + base64.RawURLEncoding.EncodedLen(len(canonical)+stamped) + 1 + base64.RawURLEncoding.EncodedLen(64), nil
}

// CheckSizes refuses an account whose JWT would be over the server's cap, naming the largest
// and what makes it large.
func CheckSizes(claims []AccountClaims) error {
	var errs []error
	for _, a := range claims {
		n, err := a.Size()
		if err != nil {
			return err
		}
		if n > MaxAccountJWT {
			errs = append(errs, fmt.Errorf("account %s would be a %d-byte JWT, over the %d bytes the server takes (%d imports, %d signing keys): %s",
				a.Name, n, MaxAccountJWT, len(a.Claims.Imports), len(a.Claims.SigningKeys), whyLarge(a)))
		}
	}
	return errors.Join(errs...)
}

// whyLarge says what makes an account's JWT large and what to do about it: every user's grants
// live in its account's JWT as a scoped signing key of its own (a few hundred bytes each), and
// every import is one entry.
func whyLarge(a AccountClaims) string {
	users := len(a.Claims.SigningKeys) - 1 // the probe's
	switch {
	case users > len(a.Claims.Imports) && a.Kind != AccountModule:
		return "the account holds every user (isolation: shared-account); give each module an account of its own (isolation: account-per-module)"
	case users > len(a.Claims.Imports):
		return fmt.Sprintf("a module's tools are served from its account, and its %d serving users are a signing key each: a module serving tools on this many machines does not fit one account JWT; run the mesh with auth: nkey, or split the module", users)
	}
	return fmt.Sprintf("it imports from %d accounts", len(a.Claims.Imports))
}

// PushOrder is the claims with every account after those it imports from, where the imports
// allow (two modules calling each other's tools import from each other: a cycle is pushed in
// name order), so an importer never waits on an exporter it reached first.
func PushOrder(claims []AccountClaims) []AccountClaims {
	byName := make(map[string]int, len(claims))
	for i, a := range claims {
		byName[a.Name] = i
	}
	state := make([]byte, len(claims)) // 0 new, 1 visiting, 2 done
	out := make([]AccountClaims, 0, len(claims))
	var visit func(i int)
	visit = func(i int) {
		if state[i] != 0 {
			return // done, or on the path: a cycle, broken here
		}
		state[i] = 1
		for _, from := range claims[i].From {
			if j, ok := byName[from]; ok {
				visit(j)
			}
		}
		state[i] = 2
		out = append(out, claims[i])
	}
	order := make([]int, len(claims))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return strings.Compare(claims[x].Name, claims[y].Name) })
	for _, i := range order {
		visit(i)
	}
	return out
}

// operatorKeys are keys.yaml's keys for a mesh in operator mode, nil for any other.
func operatorKeys(c *catalogue.Catalogue) *OperatorKeys {
	if !c.Mesh.Operator() {
		return nil
	}
	k := &OperatorKeys{Accounts: map[string]string{}}
	if c.Keys != nil {
		k.Operator, k.SigningKey, k.SystemAccount, k.ProbeKey = c.Keys.Operator.Value, c.Keys.SigningKey.Value, c.Keys.SystemAccount.Value, c.Keys.ProbeKey.Value
		for name, key := range c.Keys.Accounts {
			k.Accounts[name] = key.Value
		}
	}
	return k
}

// accountKeys reports, as credential-missing, an operator-mode mesh with no operator yet, and
// each account with no recorded key: neither can be pushed.
func (c *compilation) accountKeys() {
	k := c.plan.Operator
	if k == nil {
		return
	}
	c.plan.Hubs = c.plan.toolHubs()
	c.plan.operatorTools()
	mesh := catalogue.Pos{File: catalogue.MeshFile}
	if k.Operator == "" || k.SigningKey == "" || k.SystemAccount == "" || k.ProbeKey == "" {
		c.findings = append(c.findings, RuleCredentialMissing.At(mesh, "with auth: operator the mesh needs an operator, and %s records none (or only part of one): run `meshc operator init --secrets DIR` once, which makes its keys, records the public ones and writes the secrets and the servers' configuration into DIR", catalogue.KeysFile))
	}
	var missing []string
	for _, a := range c.plan.OperatorAccounts() {
		if k.Accounts[a] == "" {
			missing = append(missing, a)
		}
	}
	if len(missing) > 0 {
		c.findings = append(c.findings, RuleCredentialMissing.At(mesh, "%d account(s) have no recorded key in %s (%s), so they cannot be pushed: run `meshc mint --missing`, which records them",
			len(missing), catalogue.KeysFile, excerptList(missing, 5)))
	}
	c.jwtSizes()
}

// WithOperatorKeys is the plan with another operator's keys (a development operator's), its
// served tools naming their accounts by those keys.
func (p *Plan) WithOperatorKeys(k *OperatorKeys) *Plan {
	q := *p
	q.Operator = k
	q.Tools = slices.Clone(p.Tools)
	for i := range q.Tools {
		q.Tools[i].Hubs, q.Tools[i].Keys = nil, nil
	}
	q.operatorTools()
	return &q
}

// operatorTools records on each served tool the hubs its callers may reach it through, and the
// keys of the accounts it names.
func (p *Plan) operatorTools() {
	served := map[string][]int{} // account → its tools
	for k, t := range p.Tools {
		served[t.Account] = append(served[t.Account], k)
	}
	for _, h := range p.Hubs {
		for _, i := range h.Imports {
			for _, k := range served[i.Account] {
				if t := &p.Tools[k]; t.Module == i.Module {
					t.Hubs = append(t.Hubs, h.Name)
				}
			}
		}
	}
	for k := range p.Tools {
		t := &p.Tools[k]
		t.Keys = map[string]string{}
		for _, name := range slices.Concat([]string{t.Account}, t.Callers, t.Hubs) {
			if key := p.Operator.Accounts[name]; key != "" {
				t.Keys[key] = name
			}
		}
	}
}

// excerptList names the first n of names and how many more.
func excerptList(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
