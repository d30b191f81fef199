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

// With an account per principal, the mesh's account holds JetStream and the controller alone, and
// every other user has an account of its own, named like it.
func TestAnAccountPerPrincipal(t *testing.T) {
	p := compileIsolated(t, "../proof/testdata/proof.txtar", catalogue.IsolationPerModule)
	if len(p.Accounts) != len(p.Users) {
		t.Fatalf("%d accounts for %d users: want the mesh's (with the controller) and one per other user", len(p.Accounts), len(p.Users))
	}
	mesh := p.Accounts[0]
	if mesh.Name != p.Account || !mesh.JetStream || !slices.Equal(mesh.Users, []string{ControllerUser}) {
		t.Fatalf("the mesh's account is %s, JetStream %v, users %v", mesh.Name, mesh.JetStream, mesh.Users)
	}
	for _, u := range p.Users[1:] {
		a := account(t, p, u.Name)
		if a.JetStream || !slices.Equal(a.Users, []string{u.Name}) || u.Account != a.Name {
			t.Errorf("%s: account %s, JetStream %v, users %v", u.Name, u.Account, a.JetStream, a.Users)
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
			if isTool(s) {
				served[s] = u.Account
			}
		}
	}
	importers := map[string]map[string][]string{} // source account → subject → importers
	for _, u := range p.Users[1:] {
		a := account(t, p, u.Account)
		var want []Import
		for _, s := range u.Publish.Allow {
			if !isTool(s) {
				want = append(want, Import{ServiceExport, s, p.Account})
				continue
			}
			for tool, server := range served {
				if Covers(s, tool) && server != a.Name {
					want = append(want, Import{ServiceExport, tool, server})
				}
			}
		}
		for _, s := range u.Subscribe.Allow {
			if strings.HasPrefix(s, "_DELIVER.") || strings.HasPrefix(s, "_INBOX.enrol.") {
				want = append(want, Import{StreamExport, s, p.Account})
			}
		}
		want = append(want, Import{ServiceExport, JetStreamInfo, p.Account})
		slices.SortFunc(want, func(x, y Import) int { return strings.Compare(x.Subject+" "+x.Account, y.Subject+" "+y.Account) })
		if diff := cmp.Diff(want, a.Imports); diff != "" {
			t.Errorf("%s's imports are not its grants (-grants +imports):\n%s", a.Name, diff)
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
				if Covers(e.Subject, subject) {
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
		{ServiceExport, JetStreamInfo, "proof"},
		{ServiceExport, "mesh.mod.catalog.tool.lookup", "mod.anchor.catalog"},
		{ServiceExport, "mesh.mod.registry.tool.prune", "mod.anchor.registry"},
	}, alice.Imports); diff != "" {
		t.Errorf("alice (may call every tool) imports every served tool from its server:\n%s", diff)
	}
	next := account(t, p, "proof").Exports
	i := slices.IndexFunc(next, func(e Export) bool { return e.Subject == PullNext("*", "*") })
	if i < 0 || !next[i].ResponseStream {
		t.Errorf("the pull export must answer with a stream (a singleton strands a batch: docs/nats.md#traps): %v", next)
	}
}

// A module running on two machines is two accounts, both serving its tool: a caller imports the
// tool from each, as in one account it would reach each instance's subscription; an instance
// calling its own module's tool imports it from the other instance, never from itself.
func TestACallerImportsAToolFromEveryInstance(t *testing.T) {
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
	if diff := cmp.Diff([]Import{{ServiceExport, lookup, "mod.anchor.catalog"}, {ServiceExport, lookup, "mod.laptop.catalog"}},
		imports("mod.laptop.notifier")); diff != "" {
		t.Errorf("notifier imports lookup from every instance:\n%s", diff)
	}
	if diff := cmp.Diff([]Import{{ServiceExport, lookup, "mod.laptop.catalog"}}, imports("mod.anchor.catalog")); diff != "" {
		t.Errorf("an instance imports its own module's tool from the other instance only:\n%s", diff)
	}
	if diff := cmp.Diff([]Export{{Kind: ServiceExport, Subject: lookup, Accounts: []string{"mod.anchor.catalog", "mod.laptop.notifier"}}},
		account(t, p, "mod.laptop.catalog").Exports); diff != "" {
		t.Errorf("an instance exports its tool to its callers' accounts:\n%s", diff)
	}
}
