package emit

import (
	"testing"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/natstest"
)

// examplePlan compiles the example mesh with the isolation it is given, keeping its recorded
// hashes.
func examplePlan(t testing.TB, isolation string) *compiler.Plan {
	t.Helper()
	cat, _, err := catalogue.Load("../examples/mesh")
	if err != nil {
		t.Fatal(err)
	}
	cat.Mesh.Isolation.Value = isolation
	plan, findings := compiler.Compile(catalogue.NewIndex(cat))
	for _, f := range findings {
		if f.Severity == catalogue.Error {
			t.Fatalf("the example does not compile: %v", f)
		}
	}
	return plan
}

// The server's own parser and NewServer accept the accounts of an isolated mesh: every account,
// export and import, each import authorised by its export and naming an account that exists.
func TestServerAcceptsIsolatedAccounts(t *testing.T) {
	plan := examplePlan(t, catalogue.IsolationPerModule)
	out, err := Accounts(plan, AccountsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opts, err := checkConfig(writeServerConfig(t, out))
	if err != nil {
		t.Fatalf("the server refuses the isolated accounts.conf: %v", err)
	}
	principals := map[string]bool{plan.Account: true}
	for _, u := range plan.Users[1:] {
		switch u.Kind {
		case compiler.KindServer:
			principals[compiler.ModuleAccount(u.Module)] = true
		case compiler.KindPlanner: // in the mesh's account, beside the controller
		default:
			principals[u.Name] = true
		}
	}
	if len(opts.Accounts) != len(plan.Accounts) || len(plan.Accounts) != len(principals) {
		t.Fatalf("%d accounts parsed, %d planned, for %d principals: want the mesh's, one per module serving tools and one per other user",
			len(opts.Accounts), len(plan.Accounts), len(principals))
	}
	golden(t, "isolated-accounts.conf.golden", out)
	golden(t, "isolated-permissions.md.golden", Permissions(plan))
	s := natstest.Start(t, opts)
	for _, a := range plan.Accounts {
		acc, err := s.LookupAccount(a.Name)
		if err != nil {
			t.Fatalf("account %s: %v", a.Name, err)
		}
		if acc.JetStreamEnabled() != (a.Name == plan.Account) {
			t.Errorf("account %s has JetStream %v: only the mesh's account may (docs/nats.md#traps)", a.Name, acc.JetStreamEnabled())
		}
	}
}
