package emit

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
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
	if len(opts.Accounts) != len(plan.Accounts) || len(plan.Accounts) != len(plan.Users)-1+1 {
		t.Fatalf("%d accounts parsed, %d planned, for %d users: want the mesh's and one per user but the controller",
			len(opts.Accounts), len(plan.Accounts), len(plan.Users))
	}
	golden(t, "isolated-accounts.conf.golden", out)
	golden(t, "isolated-permissions.md.golden", Review(plan))
	s := natstest.Start(t, opts)
	for _, a := range plan.Accounts {
		acc, err := s.LookupAccount(a.Name)
		if err != nil {
			t.Fatalf("account %s: %v", a.Name, err)
		}
		if acc.JetStreamEnabled() != (a.Name == plan.Account) {
			t.Errorf("account %s has JetStream %v: only the mesh's account may (NATS-FACTS §12)", a.Name, acc.JetStreamEnabled())
		}
	}
}

// With auth: nkey, accounts.conf holds each user's public key and nothing secret, the server
// accepts it, a user connects by signing with its seed and gets what its grants give, and another
// user's seed is refused.
func TestNKeyUsersOnARealServer(t *testing.T) {
	for _, isolation := range []string{catalogue.IsolationShared, catalogue.IsolationPerModule} {
		t.Run(isolation, func(t *testing.T) {
			cat, _ := cataloguetest.Load(t, "testdata/proof.txtar")
			cat.Mesh.Isolation.Value, cat.Mesh.Auth.Value = isolation, catalogue.AuthNKey
			plan, _ := compiler.Compile(catalogue.NewIndex(cat))
			seeds := map[string]string{}
			for i := range plan.Users {
				seed, public, err := catalogue.MintNKey()
				if err != nil {
					t.Fatal(err)
				}
				plan.Users[i].NKey, seeds[plan.Users[i].Name] = public, seed
			}
			out, err := Accounts(plan, AccountsOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(out, []byte("password")) || bytes.Contains(out, []byte(`"SU`)) {
				t.Fatalf("an nkey mesh's accounts.conf holds a password or a seed:\n%s", out)
			}
			opts, err := checkConfig(writeServerConfig(t, out))
			if err != nil {
				t.Fatalf("the server refuses the nkey accounts.conf: %v", err)
			}
			s := natstest.Start(t, opts)
			connect := func(user, seed string) (*nats.Conn, error) {
				kp, err := nkeys.FromSeed([]byte(seed))
				if err != nil {
					t.Fatal(err)
				}
				public, _ := kp.PublicKey()
				return nats.Connect(s.ClientURL(), nats.Nkey(public, kp.Sign), nats.CustomInboxPrefix(compiler.InboxPrefix(user)), nats.NoReconnect())
			}
			nc, err := connect("mod.anchor.catalog", seeds["mod.anchor.catalog"])
			if err != nil {
				t.Fatalf("catalog cannot connect with its seed: %v", err)
			}
			defer nc.Close()
			// No streams on this bus: a publish the grants allow is taken, one they do not is
			// a violation.
			violations := make(chan error, 4)
			nc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violations <- err })
			nc.Publish("mesh.mod.catalog.event.upgraded", nil)
			nc.Publish("mesh.mod.registry.tool.prune", nil)
			nc.Flush()
			select {
			case err := <-violations:
				if !strings.Contains(err.Error(), `Permissions Violation for Publish to "mesh.mod.registry.tool.prune"`) {
					t.Fatalf("catalog by nkey: %v", err)
				}
			case <-time.After(3 * time.Second):
				t.Fatal("catalog by nkey was not refused a tool it does not call")
			}
			kp, _ := nkeys.FromSeed([]byte(seeds["mod.laptop.notifier"]))
			public, _ := kp.PublicKey()
			forged, err := nats.Connect(s.ClientURL(), nats.Nkey(plan.User("mod.anchor.catalog").NKey, kp.Sign), nats.NoReconnect())
			if err == nil {
				forged.Close()
				t.Fatalf("catalog's public key connected with notifier's seed (%s)", public)
			}
			if !errors.Is(err, nats.ErrAuthorization) {
				t.Fatalf("catalog's public key with notifier's seed failed for another reason than authorization: %v", err)
			}
		})
	}
}
