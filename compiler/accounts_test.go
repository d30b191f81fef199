package compiler

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
)

func compileIsolated(t *testing.T, archive, isolation string) *Plan {
	t.Helper()
	c, loaded := cataloguetest.Load(t, archive)
	if len(loaded) > 0 {
		t.Fatalf("the test catalogue does not load cleanly: %v", loaded)
	}
	c.Mesh.Isolation.Value = isolation
	p, _ := Compile(catalogue.NewIndex(c))
	return p
}

func account(t *testing.T, p *Plan, name string) Account {
	t.Helper()
	i := slices.IndexFunc(p.Accounts, func(a Account) bool { return a.Name == name })
	if i < 0 {
		t.Fatalf("no account %s", name)
	}
	return p.Accounts[i]
}

func TestSharedAccountHasNoAccountsOfItsOwn(t *testing.T) {
	p := compileIsolated(t, "../proof/testdata/proof.txtar", catalogue.IsolationShared)
	if len(p.Accounts) != 0 {
		t.Fatalf("a shared-account mesh has accounts %v", p.Accounts)
	}
	for _, u := range p.Users {
		if u.Account != p.Account {
			t.Errorf("%s lives in %s, want the mesh's %s", u.Name, u.Account, p.Account)
		}
	}
}

// With an account per principal, the mesh's account holds JetStream and the controller alone;
// a module's serving users share the module's account, and every other user — each module
// instance too — has an account of its own, named like it.
func TestAnAccountPerPrincipal(t *testing.T) {
	p := compileIsolated(t, "../proof/testdata/proof.txtar", catalogue.IsolationPerModule)
	mesh := p.Accounts[0]
	if mesh.Name != p.Account || !mesh.JetStream || !slices.Equal(mesh.Users, []string{ControllerUser}) {
		t.Fatalf("the mesh's account is %s, JetStream %v, users %v", mesh.Name, mesh.JetStream, mesh.Users)
	}
	members := map[string][]string{}
	for _, u := range p.Users[1:] {
		want := u.Name
		if u.Kind == KindServer {
			want = "mod." + u.Module
		}
		if u.Account != want {
			t.Errorf("%s lives in %s, want %s", u.Name, u.Account, want)
		}
		members[want] = append(members[want], u.Name)
	}
	if len(p.Accounts) != 1+len(members) {
		t.Errorf("%d accounts for %d principals and the mesh", len(p.Accounts), len(members))
	}
	for _, a := range p.Accounts[1:] {
		if a.JetStream || !slices.Equal(a.Users, members[a.Name]) {
			t.Errorf("account %s: JetStream %v, users %v, want %v", a.Name, a.JetStream, a.Users, members[a.Name])
		}
	}
}

// Imports are exactly the grants: each import is a grant its user holds (a tool served by the
// source account, for a wildcard grant), each grant that leaves the account is imported, and each
// export names exactly the accounts that import under it. One import more and an answer could be
// steered onto a subject the user may not publish (docs/nats.md, "What accounts do not block").
func TestImportsAreExactlyTheGrants(t *testing.T) {
	p := compileIsolated(t, "../proof/testdata/proof.txtar", catalogue.IsolationPerModule)
	served := map[string]string{} // tool → serving account
	for _, u := range p.Users[1:] {
		for _, s := range u.Subscribe.Allow {
			if s, _ := SplitQueue(s); isTool(s) {
				served[s] = u.Account
			}
		}
	}
	// What the users of each account are granted, together: an account shared by a module's
	// instances imports the union of their grants.
	wants := map[string][]Import{}
	for _, u := range p.Users[1:] {
		want := wants[u.Account]
		for _, s := range u.Publish.Allow {
			if s == ServiceReplies || strings.HasPrefix(s, "_INBOX.") {
				continue // answers inside the account: to calls that crossed into it, to siblings
			}
			if !isTool(s) {
				want = append(want, Import{Kind: ServiceExport, Subject: s, Account: p.Account})
				continue
			}
			for tool, server := range served {
				if Covers(s, tool) && server != u.Account {
					want = append(want, Import{Kind: ServiceExport, Subject: tool, Account: server, Module: strings.Split(tool, ".")[2]})
				}
			}
		}
		for _, s := range u.Subscribe.Allow {
			if strings.HasPrefix(s, "_DELIVER.") || strings.HasPrefix(s, "_INBOX.enrol.") {
				want = append(want, Import{Kind: StreamExport, Subject: s, Account: p.Account})
			}
		}
		// An account whose users make JetStream requests imports the API's INFO, which no user
		// is granted, so the server answers their requests once; no other account does.
		if slices.ContainsFunc(u.Publish.Allow, func(s string) bool { return strings.HasPrefix(s, "$JS.API.") }) {
			want = append(want, Import{Kind: ServiceExport, Subject: JetStreamInfo, Account: p.Account})
		}
		wants[u.Account] = want
	}
	importers := map[string]map[string][]string{} // source account → subject → importers
	for _, a := range p.Accounts[1:] {
		want := wants[a.Name]
		slices.SortFunc(want, func(x, y Import) int { return strings.Compare(x.Subject+" "+x.Account, y.Subject+" "+y.Account) })
		want = slices.Compact(want)
		if diff := cmp.Diff(want, a.Imports, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s's imports are not its users' grants (-grants +imports):\n%s", a.Name, diff)
		}
		for _, i := range a.Imports {
			if importers[i.Account] == nil {
				importers[i.Account] = map[string][]string{}
			}
			importers[i.Account][i.Subject] = append(importers[i.Account][i.Subject], a.Name)
		}
	}
	for _, a := range p.Accounts {
		for _, e := range a.Exports {
			var want []string
			for subject, to := range importers[a.Name] {
				// $JS.API.INFO has an export of its own beside the one covering every $JS subject.
				if Covers(e.Subject, subject) && (subject != JetStreamInfo || e.Subject == JetStreamInfo) {
					want = append(want, to...)
				}
			}
			if diff := cmp.Diff(sortedSet(want), e.Accounts); diff != "" {
				t.Errorf("%s exports %s to other accounts than import it (-importers +export):\n%s", a.Name, e.Subject, diff)
			}
		}
	}
	// Spot checks against the proof's catalogue, written out.
	alice := account(t, p, "person.alice")
	if diff := cmp.Diff([]Import{
		{Kind: ServiceExport, Subject: "mesh.mod.catalog.tool.lookup", Account: "mod.catalog", Module: "catalog"},
		{Kind: ServiceExport, Subject: "mesh.mod.registry.tool.prune", Account: "mod.registry", Module: "registry"},
	}, alice.Imports); diff != "" {
		t.Errorf("alice (may call every tool) imports every served tool from its server:\n%s", diff)
	}
	next := account(t, p, "proof").Exports
	i := slices.IndexFunc(next, func(e Export) bool { return Covers(e.Subject, PullNext("*", "*")) })
	if i < 0 || !next[i].ResponseStream || next[i].Subject != JetStreamSubjects {
		t.Errorf("the pull export must answer with a stream (a singleton strands a batch, docs/nats.md \"Traps\"), and be the acks' export too: %v", next)
	}
}

// A module running on two machines serves its tool once, from the module's account, which holds
// its serving users alone: every caller imports the tool from that account — its own instances
// too, each from an account of its own — and the module's account imports nothing, so nothing
// comes back in a cycle (imported from every instance's, each call was delivered to every
// instance; an instance importing its own module's tool from a sibling that imported it back was
// a cycle the server refused to load).
func TestACallerImportsAToolFromItsModulesAccount(t *testing.T) {
	p := compileIsolated(t, "testdata/instances.txtar", catalogue.IsolationPerModule)
	lookup := Tool("catalog", "lookup")
	imports := func(name string) []Import {
		var out []Import
		for _, i := range account(t, p, name).Imports {
			if i.Subject == lookup {
				out = append(out, i)
			}
		}
		return out
	}
	fromCatalog := []Import{{Kind: ServiceExport, Subject: lookup, Account: "mod.catalog", Module: "catalog"}}
	for _, caller := range []string{"mod.laptop.notifier", "mod.anchor.catalog", "mod.laptop.catalog"} {
		if diff := cmp.Diff(fromCatalog, imports(caller)); diff != "" {
			t.Errorf("%s imports lookup from catalog's account:\n%s", caller, diff)
		}
	}
	catalog := account(t, p, "mod.catalog")
	if !slices.Equal(catalog.Users, []string{"serve.anchor.catalog", "serve.laptop.catalog"}) || slices.ContainsFunc(catalog.Imports, func(i Import) bool { return i.Module != "" }) || catalog.Kind != AccountModule {
		t.Errorf("catalog's account holds %v and imports %v, want both serving users and no tool", catalog.Users, catalog.Imports)
	}
	if diff := cmp.Diff([]Export{{Kind: ServiceExport, Subject: lookup, Accounts: []string{"mod.anchor.catalog", "mod.laptop.catalog", "mod.laptop.notifier"}, Module: "catalog"}}, catalog.Exports); diff != "" {
		t.Errorf("catalog's account exports its tool to its callers' accounts:\n%s", diff)
	}
	if a := account(t, p, "mod.anchor.catalog"); !slices.Equal(a.Users, []string{"mod.anchor.catalog"}) || a.Kind != AccountInstance {
		t.Errorf("an instance's account holds %v (%s), want the instance alone", a.Users, a.Kind)
	}
}

// With an account per principal, a serving user answers without allow_responses: the server's
// `_R_` replies, which every call carries, since every call crosses an import into the module's
// account. No instance is granted another's inbox: allow_responses let an instance answer a
// self-call it made itself at any reply, a sibling's pull among them, and a grant of its
// siblings' inboxes let it write into their pulls. In one account every caller's inbox is a
// reply, so allow_responses stays, and a serving user publishes nothing else.
func TestAToolServerAnswersOnlyTheRepliesItsCallsCarry(t *testing.T) {
	for _, tc := range []struct {
		archive, user, isolation string
		publishes                []string
		responses                bool
	}{
		{"testdata/instances.txtar", "serve.anchor.catalog", catalogue.IsolationPerModule, []string{ServiceReplies}, false},
		{"../proof/testdata/proof.txtar", "serve.anchor.registry", catalogue.IsolationPerModule, []string{ServiceReplies}, false},
		{"testdata/instances.txtar", "serve.anchor.catalog", catalogue.IsolationShared, nil, true},
		{"../proof/testdata/proof.txtar", "serve.anchor.registry", catalogue.IsolationShared, nil, true},
	} {
		p := compileIsolated(t, tc.archive, tc.isolation)
		u := p.User(tc.user)
		if !slices.Equal(u.Publish.Allow, tc.publishes) || u.AllowResponses != tc.responses || (len(u.Grants.Responses) > 0) != tc.responses {
			t.Errorf("%s, %s: publishes %v with allow_responses %v (%d response grants), want %v and %v",
				tc.user, tc.isolation, u.Publish.Allow, u.AllowResponses, len(u.Grants.Responses), tc.publishes, tc.responses)
		}
		if tc.publishes == nil && !slices.Equal(u.Publish.Deny, []string{">"}) {
			t.Errorf("%s, %s: publish %+v, want deny [>] beside allow_responses", tc.user, tc.isolation, u.Publish)
		}
		for _, s := range tc.publishes {
			if why := u.Why(Publish, s); len(why) != 1 || !strings.Contains(why[0].Because, "answers") {
				t.Errorf("%s: %s granted for %+v", tc.user, s, why)
			}
		}
		// Its module user answers nothing, and no user may publish into another's inbox.
		for _, v := range p.Users {
			for _, s := range v.Publish.Allow {
				if strings.HasPrefix(s, "_INBOX.") && v.Kind != KindController {
					t.Errorf("%s (%s) may publish %s", v.Name, tc.isolation, s)
				}
			}
			if v.AllowResponses && (v.Kind != KindServer || tc.isolation != catalogue.IsolationShared) {
				t.Errorf("%s (%s) has allow_responses", v.Name, tc.isolation)
			}
		}
	}
}
