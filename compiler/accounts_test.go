package compiler

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

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
// every module's instances share the module's account, and every other user has an account of
// its own, named like it.
func TestAnAccountPerPrincipal(t *testing.T) {
	p := compileIsolated(t, "../proof/testdata/proof.txtar", catalogue.IsolationPerModule)
	mesh := p.Accounts[0]
	if mesh.Name != p.Account || !mesh.JetStream || !slices.Equal(mesh.Users, []string{ControllerUser}) {
		t.Fatalf("the mesh's account is %s, JetStream %v, users %v", mesh.Name, mesh.JetStream, mesh.Users)
	}
	members := map[string][]string{}
	for _, u := range p.Users[1:] {
		want := u.Name
		if u.Kind == KindModule {
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
		wants[u.Account] = append(want, Import{Kind: ServiceExport, Subject: JetStreamInfo, Account: p.Account})
	}
	importers := map[string]map[string][]string{} // source account → subject → importers
	for _, a := range p.Accounts[1:] {
		want := wants[a.Name]
		slices.SortFunc(want, func(x, y Import) int { return strings.Compare(x.Subject+" "+x.Account, y.Subject+" "+y.Account) })
		want = slices.Compact(want)
		if diff := cmp.Diff(want, a.Imports); diff != "" {
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
		{Kind: ServiceExport, Subject: JetStreamInfo, Account: "proof"},
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

// A module running on two machines is one account, serving its tool once: a caller imports the
// tool from that account alone (imported from every instance's, each call was delivered to every
// instance), and an instance calling its own module's tool imports nothing, reaching its siblings'
// queue subscriptions inside the account (an import from a sibling's account, and the sibling's
// back, is a cycle the server refuses to load).
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
	if diff := cmp.Diff([]Import{{Kind: ServiceExport, Subject: lookup, Account: "mod.catalog", Module: "catalog"}}, imports("mod.notifier")); diff != "" {
		t.Errorf("notifier imports lookup from catalog's account:\n%s", diff)
	}
	if got := imports("mod.catalog"); len(got) != 0 {
		t.Errorf("catalog's own account imports its own tool: %v", got)
	}
	catalog := account(t, p, "mod.catalog")
	if !slices.Equal(catalog.Users, []string{"mod.anchor.catalog", "mod.laptop.catalog"}) {
		t.Errorf("catalog's account holds %v, want both instances", catalog.Users)
	}
	if diff := cmp.Diff([]Export{{Kind: ServiceExport, Subject: lookup, Accounts: []string{"mod.notifier"}, Module: "catalog"}}, catalog.Exports); diff != "" {
		t.Errorf("catalog's account exports its tool to its callers' accounts:\n%s", diff)
	}
}

// With an account per module, a tool server answers without allow_responses: the server's `_R_`
// replies (what every call from another account carries) and, when its module calls its own tool,
// its siblings' inboxes (what their calls carry inside the account). allow_responses let an
// instance answer a self-call it made itself at any reply, a sibling's pull among them. In one
// account every caller's inbox is a reply, so allow_responses stays.
func TestAToolServerAnswersOnlyTheRepliesItsCallsCarry(t *testing.T) {
	for _, tc := range []struct {
		archive, user, isolation string
		publishes                []string
		responses                bool
	}{
		{"testdata/instances.txtar", "mod.anchor.catalog", catalogue.IsolationPerModule, []string{"_INBOX.mod.*.catalog.>", ServiceReplies}, false},
		{"../proof/testdata/proof.txtar", "mod.anchor.registry", catalogue.IsolationPerModule, []string{ServiceReplies}, false},
		{"testdata/instances.txtar", "mod.anchor.catalog", catalogue.IsolationShared, nil, true},
		{"../proof/testdata/proof.txtar", "mod.anchor.registry", catalogue.IsolationShared, nil, true},
	} {
		p := compileIsolated(t, tc.archive, tc.isolation)
		u := p.User(tc.user)
		var answers []string
		for _, s := range u.Publish.Allow {
			if s == ServiceReplies || strings.HasPrefix(s, "_INBOX.") {
				answers = append(answers, s)
			}
		}
		if !slices.Equal(answers, tc.publishes) || u.AllowResponses != tc.responses || (len(u.Grants.Responses) > 0) != tc.responses {
			t.Errorf("%s, %s: answers %v with allow_responses %v (%d response grants), want %v and %v",
				tc.user, tc.isolation, answers, u.AllowResponses, len(u.Grants.Responses), tc.publishes, tc.responses)
		}
		for _, s := range tc.publishes {
			if why := u.Why(Publish, s); len(why) != 1 || !strings.Contains(why[0].Because, "answers") {
				t.Errorf("%s: %s granted for %+v", tc.user, s, why)
			}
		}
	}
}
