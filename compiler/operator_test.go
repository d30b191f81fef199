package compiler

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/internal/synth"
)

// operatorPlan compiles the proof's catalogue with auth: operator and gives it keys: an operator's,
// one per account and one signing key per user.
func operatorPlan(t *testing.T, isolation string) *Plan {
	t.Helper()
	c, loaded := cataloguetest.Load(t, "../proof/testdata/proof.txtar")
	if len(loaded) > 0 {
		t.Fatalf("the test catalogue does not load cleanly: %v", loaded)
	}
	c.Mesh.Isolation.Value, c.Mesh.Auth.Value = isolation, catalogue.AuthOperator
	p, _ := Compile(catalogue.NewIndex(c))
	key := func(create func() (nkeys.KeyPair, error)) string {
		kp, err := create()
		if err != nil {
			t.Fatal(err)
		}
		pub, _ := kp.PublicKey()
		return pub
	}
	p.Operator = &OperatorKeys{Operator: key(nkeys.CreateOperator), SigningKey: key(nkeys.CreateOperator),
		SystemAccount: key(nkeys.CreateAccount), ProbeKey: key(nkeys.CreateAccount), Accounts: map[string]string{}}
	for _, a := range p.OperatorAccounts() {
		p.Operator.Accounts[a] = key(nkeys.CreateAccount)
	}
	for i := range p.Users {
		p.Users[i].SigningKey = key(nkeys.CreateAccount)
	}
	return p
}

func claimsOf(t *testing.T, claims []AccountClaims, name string) *jwt.AccountClaims {
	t.Helper()
	i := slices.IndexFunc(claims, func(a AccountClaims) bool { return a.Name == name })
	if i < 0 {
		t.Fatalf("no claims for account %s", name)
	}
	return claims[i].Claims
}

// Each account's claims say what its block of accounts.conf says: JetStream for the mesh's alone,
// the same exports and imports (each import naming its exporter by key), and each user's grants
// as the template of a signing key of its own, with nothing granted to a user its account signs
// by any other key (the probe may do nothing; a user signed by the account's own key, nothing).
func TestClaimsSayWhatTheAccountsFileSays(t *testing.T) {
	for _, isolation := range []string{catalogue.IsolationShared, catalogue.IsolationPerModule} {
		t.Run(isolation, func(t *testing.T) {
			p := operatorPlan(t, isolation)
			claims, err := p.Claims()
			if err != nil {
				t.Fatal(err)
			}
			accounts := p.accounts()
			hubs := 0
			if isolation == catalogue.IsolationPerModule {
				hubs = 1 // alice may call every tool
			}
			if len(claims) != len(accounts)+hubs {
				t.Fatalf("%d claims for %d accounts and %d tool hub(s)", len(claims), len(accounts), hubs)
			}
			byKey := map[string]string{}
			for name, key := range p.Operator.Accounts {
				byKey[key] = name
			}
			for _, a := range accounts {
				ac := claimsOf(t, claims, a.Name)
				if ac.Subject != p.Operator.Accounts[a.Name] || ac.Name != a.Name || !ac.Tags.Contains(OwnerTag(p.Account)) {
					t.Errorf("%s: subject %s, name %s, tags %v", a.Name, ac.Subject, ac.Name, ac.Tags)
				}
				if ac.Limits.IsJSEnabled() != a.JetStream {
					t.Errorf("%s: JetStream %v, want %v", a.Name, ac.Limits.IsJSEnabled(), a.JetStream)
				}
				// The accounts file's limits, and room for the probe's connection.
				l, js := ac.Limits, a.JetStreamLimits
				if a.Limits.Connections == 0 || l.Conn != a.Limits.Connections+1 || l.Subs != a.Limits.Subscriptions || l.Payload != a.Limits.Payload ||
					(l.LeafNodeConn == 0) != a.Limits.NoLeafnodes {
					t.Errorf("%s: limits %+v, want %+v", a.Name, l, a.Limits)
				}
				if a.JetStream && (l.Streams != js.MaxStreams || l.Consumer != orNoLimit(js.MaxConsumers) || l.DiskStorage != orNoLimit(js.MaxFile)) {
					t.Errorf("%s: JetStream limits %+v, want %+v", a.Name, l.JetStreamLimits, js)
				}
				// Exports: the plan's, a module's tools as one wildcard; nothing else.
				for _, e := range a.Exports {
					want := e.Subject
					if e.Module != "" {
						want = Tool(e.Module, "*")
					}
					i := slices.IndexFunc(ac.Exports, func(x *jwt.Export) bool { return string(x.Subject) == want })
					if i < 0 {
						// Contained in a wider export of its kind, which a JWT takes alone.
						if !slices.ContainsFunc(ac.Exports, func(x *jwt.Export) bool {
							return x.Type == exportType(e.Kind) && Covers(string(x.Subject), want)
						}) {
							t.Errorf("%s: no export covers %s", a.Name, e.Subject)
						}
						continue
					}
					x := ac.Exports[i]
					if x.Type != exportType(e.Kind) || (x.ResponseType == jwt.ResponseTypeStream) != e.ResponseStream || x.TokenReq {
						t.Errorf("%s: export %+v, want %+v", a.Name, x, e)
					}
				}
				// Imports: each of the plan's, from its exporter, exactly or as its module's
				// wildcard when the account's user may call every tool of the module, or through
				// a tool hub that imports it from there when it may call every tool; and none the
				// user's grants do not cover.
				u := p.User(a.Users[0])
				brings := func(ac *jwt.AccountClaims, subject, from string) bool {
					return slices.ContainsFunc(ac.Imports, func(x *jwt.Import) bool {
						return byKey[x.Account] == from && x.Name == from && Covers(string(x.Subject), subject)
					})
				}
				for _, imp := range a.Imports {
					if brings(ac, imp.Subject, imp.Account) {
						continue
					}
					viaHub := false
					for _, x := range ac.Imports {
						if hub := byKey[x.Account]; strings.HasPrefix(hub, "tools.") && Covers(string(x.Subject), imp.Subject) && brings(claimsOf(t, claims, hub), imp.Subject, imp.Account) {
							viaHub = true
						}
					}
					if !viaHub {
						t.Errorf("%s: no import brings %s from %s", a.Name, imp.Subject, imp.Account)
					}
				}
				for _, x := range ac.Imports {
					exact := slices.ContainsFunc(a.Imports, func(imp Import) bool { return imp.Subject == string(x.Subject) })
					if !exact && !slices.ContainsFunc(u.Publish.Allow, func(g string) bool { return Covers(g, string(x.Subject)) }) {
						t.Errorf("%s imports %s, which %s may not publish", a.Name, x.Subject, u.Name)
					}
				}
				for _, x := range ac.Imports {
					if a.Name == "person.alice" && strings.Contains(string(x.Subject), ".tool.") && (string(x.Subject) != everyTool || byKey[x.Account] != ToolHubAccount(1)) {
						t.Errorf("alice, who may call every tool, imports %s from %s: every tool comes through the hubs", x.Subject, byKey[x.Account])
					}
				}
				if ac.DefaultPermissions.Pub.Allow != nil || !slices.Equal(ac.DefaultPermissions.Sub.Deny, []string{">"}) {
					t.Errorf("%s: a user signed by the account's own key would get %+v", a.Name, ac.DefaultPermissions)
				}
				if len(ac.SigningKeys) != len(a.Users)+1 {
					t.Errorf("%s: %d signing keys for %d users and the probe", a.Name, len(ac.SigningKeys), len(a.Users))
				}
				scope, _ := ac.SigningKeys.GetScope(p.Operator.ProbeKey)
				if probe, ok := scope.(*jwt.UserScope); !ok || probe.Role != ProbeRole || probe.Template.Pub.Allow != nil || !slices.Equal(probe.Template.Pub.Deny, []string{">"}) {
					t.Errorf("%s: the probe's scope is %+v", a.Name, scope)
				}
				for _, name := range a.Users {
					u := p.User(name)
					scope, _ := ac.SigningKeys.GetScope(u.SigningKey)
					us, ok := scope.(*jwt.UserScope)
					if !ok {
						t.Fatalf("%s: no scope for %s's key", a.Name, name)
					}
					tp := us.Template
					if us.Role != name || !slices.Equal(tp.Pub.Allow, u.Publish.Allow) || !slices.Equal(tp.Pub.Deny, u.Publish.Deny) ||
						!slices.Equal(tp.Sub.Allow, u.Subscribe.Allow) || !slices.Equal(tp.Sub.Deny, u.Subscribe.Deny) || (tp.Resp != nil) != u.AllowResponses {
						t.Errorf("%s's template %+v does not say its grants", name, tp)
					}
					if tp.Resp != nil && (tp.Resp.MaxMsgs != 1 || tp.Resp.Expires != ResponseTTL) {
						t.Errorf("%s may answer %+v, want once within %s", name, tp.Resp, ResponseTTL)
					}
				}
				vr := jwt.ValidationResults{}
				ac.Validate(&vr)
				if vr.IsBlocking(true) {
					t.Errorf("%s: the claims do not validate: %v", a.Name, vr.Errors())
				}
			}
		})
	}
}

// The canonical form is the same bytes for the same plan, and changes with a grant.
func TestCanonicalClaimsAreStableAndChangeWithAGrant(t *testing.T) {
	p := operatorPlan(t, catalogue.IsolationPerModule)
	render := func() []byte {
		claims, err := p.Claims()
		if err != nil {
			t.Fatal(err)
		}
		var all [][]byte
		for _, a := range claims {
			c, err := Canonical(a.Claims)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, c)
		}
		return bytes.Join(all, []byte("\n"))
	}
	first := render()
	if !bytes.Equal(first, render()) {
		t.Fatal("the same plan gave two canonical forms")
	}
	if bytes.Contains(first, []byte(`"iat"`)) || bytes.Contains(first, []byte(`"jti"`)) || bytes.Contains(first, []byte(`"iss"`)) {
		t.Fatal("the canonical form holds what signing stamps")
	}
	u := p.User("person.bob")
	u.Publish.Allow = append(u.Publish.Allow, "mesh.mod.registry.tool.prune")
	if bytes.Equal(first, render()) {
		t.Fatal("a grant gained left the canonical form as it was")
	}
}

// A user with no recorded signing key is left out of its account; an account with no recorded
// key cannot be written, nor can a mesh with no operator.
func TestClaimsNeedTheirKeys(t *testing.T) {
	p := operatorPlan(t, catalogue.IsolationPerModule)
	p.User("person.bob").SigningKey = ""
	claims, err := p.Claims()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(claimsOf(t, claims, "person.bob").SigningKeys); n != 1 {
		t.Errorf("an account whose only user has no key lists %d signing keys, want the probe's alone", n)
	}
	delete(p.Operator.Accounts, "mod.catalog")
	if _, err := p.Claims(); err == nil || !strings.Contains(err.Error(), "mod.catalog") || !strings.Contains(err.Error(), "meshc mint --missing") {
		t.Errorf("an account with no key: %v", err)
	}
	p.Operator.SigningKey = ""
	if _, err := p.Claims(); err == nil || !strings.Contains(err.Error(), "meshc operator init") {
		t.Errorf("no operator: %v", err)
	}
	p.Operator = nil
	if _, err := p.Claims(); err != ErrNoOperator {
		t.Errorf("no operator mode: %v", err)
	}
}

// An account over the server's 1 MiB cap is refused with what makes it large; the example's are
// far under it.
func TestClaimsOverTheCapAreRefused(t *testing.T) {
	p := operatorPlan(t, catalogue.IsolationShared)
	claims, err := p.Claims()
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckSizes(claims); err != nil {
		t.Fatal(err)
	}
	// Size is the JWT's length within a few bytes: checked against a real encoding elsewhere
	// (operator's TestSizeIsTheSignedJWTsLength); here, against the form it is computed from.
	n, _ := claims[0].Size()
	c, _ := unstamped(claims[0].Claims)
	if n < len(c)*4/3 || n > len(c)*4/3+500 {
		t.Errorf("size %d for a %d-byte signed form", n, len(c))
	}
	for i := range p.Users {
		for j := range 2000 {
			p.Users[i].Publish.Allow = append(p.Users[i].Publish.Allow, fmt.Sprintf("mesh.mod.catalog.tool.t%s%d", strings.Repeat("x", 20), j))
		}
	}
	claims, _ = p.Claims()
	if err := CheckSizes(claims); err == nil || !strings.Contains(err.Error(), "over the 1048576 bytes") || !strings.Contains(err.Error(), "account-per-module") {
		t.Errorf("a mesh account holding every user's huge grants: %v", err)
	}

	// A module serving tools on thousands of machines: its serving users share its account, a
	// signing key each.
	p = operatorPlan(t, catalogue.IsolationPerModule)
	catalog := p.User("serve.anchor.catalog")
	k := slices.IndexFunc(p.Accounts, func(a Account) bool { return a.Name == catalog.Account })
	for i := range 4000 {
		u := *catalog
		u.Name = fmt.Sprintf("serve.machine-%d.catalog", i)
		kp, _ := nkeys.CreateAccount()
		u.SigningKey, _ = kp.PublicKey()
		p.Users = append(p.Users, u)
		p.Accounts[k].Users = append(p.Accounts[k].Users, u.Name)
	}
	claims, _ = p.Claims()
	if err := CheckSizes(claims); err == nil || !strings.Contains(err.Error(), "account mod.catalog") || !strings.Contains(err.Error(), "its 4001 serving users are a signing key each") || !strings.Contains(err.Error(), "auth: nkey") {
		t.Errorf("a module on 4,001 machines: %v", err)
	}
}

// An account comes after every account it imports from, and a cycle (two modules calling each
// other's tools) is pushed all the same.
func TestPushOrderPutsExportersFirst(t *testing.T) {
	claims := []AccountClaims{
		{Name: "b", From: []string{"mesh", "c"}},
		{Name: "mesh"},
		{Name: "c", From: []string{"mesh", "b"}},
		{Name: "d", From: []string{"mesh", "b"}},
	}
	var got []string
	for _, a := range PushOrder(claims) {
		got = append(got, a.Name)
	}
	if want := []string{"mesh", "c", "b", "d"}; !slices.Equal(got, want) {
		t.Errorf("push order %v, want %v", got, want)
	}
	p := operatorPlan(t, catalogue.IsolationPerModule)
	derived, _ := p.Claims()
	seen := map[string]bool{}
	for _, a := range PushOrder(derived) {
		for _, from := range a.From {
			if !seen[from] {
				t.Errorf("%s is pushed before %s, which it imports from", a.Name, from)
			}
		}
		seen[a.Name] = true
	}
}

// A tool hub has no user, exports every tool, and imports each serving account's tools once;
// enough hubs are made that none imports from more than HubShare accounts, and a serving account
// keeps its hub when another is added.
func TestToolHubs(t *testing.T) {
	p := operatorPlan(t, catalogue.IsolationPerModule)
	hub := claimsOf(t, mustClaims(t, p), ToolHubAccount(1))
	if len(hub.SigningKeys) != 1 || len(hub.Exports) != 1 || string(hub.Exports[0].Subject) != everyTool || hub.Limits.IsJSEnabled() {
		t.Errorf("the hub: %d signing keys, exports %v", len(hub.SigningKeys), hub.Exports)
	}
	var from []string
	for _, i := range hub.Imports {
		from = append(from, i.Name+" "+string(i.Subject))
	}
	if want := []string{"mod.catalog mesh.mod.catalog.tool.*", "mod.registry mesh.mod.registry.tool.*"}; !slices.Equal(from, want) {
		t.Errorf("the hub imports %v, want %v", from, want)
	}

	// Many serving accounts: several hubs, none over its share, each serving account in one.
	var plain []Account
	for i := range 2*HubShare + 10 {
		m := fmt.Sprintf("m%d", i)
		plain = append(plain, Account{Name: "mod.n." + m, Kind: AccountModule, Exports: []Export{{Kind: ServiceExport, Subject: Tool(m, "t"), Module: m}}})
	}
	big := &Plan{Account: "big", Accounts: append([]Account{{Name: "big", Kind: AccountMesh, JetStream: true}, {Name: "person.root", Kind: AccountPerson, Users: []string{"person.root"}}}, plain...),
		Users: []User{{Name: "person.root", Kind: KindPerson, Publish: Permission{Allow: []string{everyTool}}, callsEvery: true}}}
	big.Hubs = big.toolHubs()
	accounts := big.jwtAccounts(big.usersByName())
	hubOf := map[string]string{}
	hubs := 0
	for _, a := range accounts {
		if !strings.HasPrefix(a.Name, "tools.") {
			continue
		}
		hubs++
		if len(a.Imports) > HubShare+HubShare/5 {
			t.Errorf("%s imports from %d accounts", a.Name, len(a.Imports))
		}
		for _, i := range a.Imports {
			if hubOf[i.Account] != "" {
				t.Errorf("%s goes through %s and %s", i.Account, hubOf[i.Account], a.Name)
			}
			hubOf[i.Account] = a.Name
		}
	}
	if hubs != 3 || len(hubOf) != len(plain) {
		t.Fatalf("%d hubs for %d serving accounts; %d go through one", hubs, len(plain), len(hubOf))
	}
	root := accounts[slices.IndexFunc(accounts, func(a Account) bool { return a.Name == "person.root" })]
	if len(root.Imports) != 3 {
		t.Errorf("person.root imports %v, want every tool from each of the 3 hubs", root.Imports)
	}
	big.Accounts = append(big.Accounts, Account{Name: "mod.n.new", Kind: AccountModule, Exports: []Export{{Kind: ServiceExport, Subject: Tool("new", "t"), Module: "new"}}})
	big.Hubs = big.toolHubs()
	moved := 0
	for _, a := range big.jwtAccounts(big.usersByName()) {
		for _, i := range a.Imports {
			if strings.HasPrefix(a.Name, "tools.") && hubOf[i.Account] != "" && hubOf[i.Account] != a.Name {
				moved++
			}
		}
	}
	if moved != 0 {
		t.Errorf("a serving account added moved %d others to another hub", moved)
	}
}

func mustClaims(t *testing.T, p *Plan) []AccountClaims {
	t.Helper()
	claims, err := p.Claims()
	if err != nil {
		t.Fatal(err)
	}
	return claims
}

// `>` reads as itself in the canonical form, and an escaped backslash before "u003e" is left as
// it was: the unescaping reads escapes as a JSON reader does.
func TestCanonicalWritesSubjectsAsThemselves(t *testing.T) {
	for in, want := range map[string]string{
		`["a.\u003e","\u003cb\u0026"]`: `["a.>","<b&"]`,
		`["x\\u003e"]`:                 `["x\\u003e"]`,
		`["\\\u003e"]`:                 `["\\>"]`,
		`["\n\u0041"]`:                 `["\n\u0041"]`,
	} {
		if got := string(unescapeHTML([]byte(in))); got != want {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
	}
}

// In operator mode a review shows every account pushed, the mesh's one account too, and a user
// minted again as its old signing key lost and the new one gained; an unchanged plan shows
// nothing.
func TestCompareAccountsInOperatorMode(t *testing.T) {
	base := operatorPlan(t, catalogue.IsolationShared)
	head := *base
	head.Users = slices.Clone(base.Users)
	if got := CompareAccounts(base, &head); len(got) != 0 {
		t.Fatalf("an unchanged plan: %+v", got)
	}
	old := head.User("person.bob").SigningKey
	kp, _ := nkeys.CreateAccount()
	head.User("person.bob").SigningKey, _ = kp.PublicKey()
	got := CompareAccounts(base, &head)
	if len(got) != 1 || got[0].Account != base.Account {
		t.Fatalf("a user minted again: %+v", got)
	}
	if !slices.Equal(got[0].Lost, []string{"signing key of person.bob " + old}) || len(got[0].Gained) != 1 || !strings.HasPrefix(got[0].Gained[0], "signing key of person.bob A") {
		t.Errorf("lost %v, gained %v", got[0].Lost, got[0].Gained)
	}
	// Without operator mode, one shared account shows nothing of the kind.
	base.Operator, head.Operator = nil, nil
	if got := CompareAccounts(base, &head); len(got) != 0 {
		t.Errorf("a shared mesh without operator mode: %+v", got)
	}
}

// A mesh in operator mode with no operator recorded, or an account with no key, is
// credential-missing, said once each with the command that fixes it; a mesh with every key is
// quiet.
func TestMissingOperatorKeysAreFindings(t *testing.T) {
	c, _ := cataloguetest.Load(t, "../proof/testdata/proof.txtar")
	c.Mesh.Isolation.Value, c.Mesh.Auth.Value = catalogue.IsolationPerModule, catalogue.AuthOperator
	_, findings := Compile(catalogue.NewIndex(c))
	var said []string
	for _, f := range findings {
		if f.Rule == RuleCredentialMissing.ID && f.Pos.File == catalogue.MeshFile && strings.Contains(f.Message, catalogue.KeysFile) {
			said = append(said, f.Message)
		}
	}
	if len(said) != 2 || !strings.Contains(said[0], "14 account(s)") || !strings.Contains(said[0]+said[1], "meshc operator init") || !strings.Contains(said[0]+said[1], "meshc mint --missing") {
		t.Fatalf("findings %q", said)
	}
	p := operatorPlan(t, catalogue.IsolationPerModule)
	c.Keys = &catalogue.Keys{Operator: catalogue.Text{Value: p.Operator.Operator}, SigningKey: catalogue.Text{Value: p.Operator.SigningKey},
		SystemAccount: catalogue.Text{Value: p.Operator.SystemAccount}, ProbeKey: catalogue.Text{Value: p.Operator.ProbeKey}, Accounts: map[string]catalogue.Text{}}
	for name, key := range p.Operator.Accounts {
		c.Keys.Accounts[name] = catalogue.Text{Value: key}
	}
	_, findings = Compile(catalogue.NewIndex(c))
	for _, f := range findings {
		if f.Rule == RuleCredentialMissing.ID && f.Pos.File == catalogue.MeshFile && !strings.Contains(f.Message, "credentials.yaml") {
			t.Errorf("every key recorded, still: %s", f.Message)
		}
	}
}

// An account whose JWT would be over the server's cap is a finding at lint time, where the
// account comes from: a thousand modules in one shared account (every user's grants are a signing
// key of the one JWT) fire it at mesh.yaml; the same mesh with an account per principal is quiet.
// No fixture file is that large, so lint's tests leave this rule to this one.
func TestAnAccountOverTheJWTCapIsAFinding(t *testing.T) {
	dir := t.TempDir()
	if err := synth.Write(dir, 1000, 1); err != nil {
		t.Fatal(err)
	}
	for _, isolation := range []string{catalogue.IsolationShared, catalogue.IsolationPerModule} {
		c, _, err := catalogue.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		c.Mesh.Isolation.Value, c.Mesh.Auth.Value = isolation, catalogue.AuthOperator
		_, findings := Compile(catalogue.NewIndex(c))
		got := rule(findings, RuleJWTTooLarge)
		switch {
		case isolation == catalogue.IsolationShared && (len(got) != 1 || got[0].Pos.File != catalogue.MeshFile || !strings.Contains(got[0].Message, "over the 1048576 bytes the server takes") || !strings.Contains(got[0].Message, "isolation: account-per-module")):
			t.Errorf("one shared account of 1,000 modules: %v", got)
		case isolation == catalogue.IsolationPerModule && len(got) != 0:
			t.Errorf("an account per principal: %v", got)
		}
	}
}
