package proof

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/internal/natstest"
	"github.com/meshc-dev/meshc/up"
)

// With auth: nkey, accounts.conf holds each user's public key and nothing secret, the server
// accepts it, a user connects by signing with its seed and gets what its grants give, and another
// user's seed is refused.
func TestNKeyUsersOnARealServer(t *testing.T) {
	t.Parallel()
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
			out, err := emit.Accounts(plan, emit.AccountsOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(out, []byte("password")) || bytes.Contains(out, []byte(`"SU`)) {
				t.Fatalf("an nkey mesh's accounts.conf holds a password or a seed:\n%s", out)
			}
			state := t.TempDir()
			if err := os.WriteFile(filepath.Join(state, "accounts.conf"), out, 0o600); err != nil {
				t.Fatal(err)
			}
			conf, err := up.WriteServerConf(state, 0, "")
			if err != nil {
				t.Fatal(err)
			}
			s := natstest.FromConfig(t, conf, false)
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
