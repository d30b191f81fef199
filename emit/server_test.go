package emit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/crypto/bcrypt"

	"github.com/meshc-dev/meshc/internal/natstest"
	"github.com/meshc-dev/meshc/internal/testwait"
)

// writeServerConfig writes accounts.conf and a server configuration beside it that includes it by
// a relative path, as an operator's would (an absolute include path breaks: docs/nats.md, "Includes
// and variables").
func writeServerConfig(t *testing.T, accounts []byte) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "accounts.conf"), accounts, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := "host: 127.0.0.1\nport: -1\njetstream { store_dir: " + confQuote(filepath.Join(dir, "js")) + " }\ninclude \"accounts.conf\"\n"
	path := filepath.Join(dir, "server.conf")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkConfig checks a configuration both ways the server does: `nats-server -t` (where a warning
// is a failure) and NewServer, which validates what -t skips (docs/nats.md, "Validating a
// configuration").
func checkConfig(path string) (*server.Options, error) {
	strict := &server.Options{CheckConfig: true}
	if err := strict.ProcessConfigFile(path); err != nil {
		return nil, err
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		return nil, err
	}
	opts.NoLog, opts.NoSigs = true, true
	if _, err := server.NewServer(opts); err != nil {
		return nil, err
	}
	return opts, nil
}

func TestServerAcceptsAccounts(t *testing.T) {
	// Real passwords, hashed at the lowest cost: the server checks them at connect.
	p := testPlan()
	passwords := map[string]string{}
	for i := range p.Users {
		pw := "pw-" + p.Users[i].Name
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		p.Users[i].Hash, passwords[p.Users[i].Name] = string(h), pw
	}
	// The enrolment user has no hash: left out, it must not be able to connect at all.
	p.Users[3].Hash = ""
	out, err := Accounts(p, AccountsOptions{AllowMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	opts, err := checkConfig(writeServerConfig(t, out))
	if err != nil {
		t.Fatalf("the server refuses accounts.conf: %v\n%s", err, out)
	}

	s := natstest.Start(t, opts)

	var mu sync.Mutex
	violations := map[string][]error{}
	connect := func(user string) (*nats.Conn, error) {
		return nats.Connect(s.ClientURL(), nats.UserInfo(user, passwords[user]),
			nats.CustomInboxPrefix("_INBOX."+user), nats.MaxReconnects(0),
			nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
				mu.Lock()
				defer mu.Unlock()
				violations[user] = append(violations[user], err)
			}))
	}
	mustConnect := func(user string) *nats.Conn {
		nc, err := connect(user)
		if err != nil {
			t.Fatalf("connect as %s: %v", user, err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	violated := func(user, subject string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, err := range violations[user] {
			if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), subject) {
				return true
			}
		}
		return false
	}

	controller := mustConnect("mesh-controller")
	node := mustConnect("node.anchor")
	carol := mustConnect("person.carol")

	// Allowed: a machine's heartbeat reaches the controller, which subscribes heartbeats.
	heartbeats, err := controller.SubscribeSync("mesh.control.heartbeat.*")
	if err != nil {
		t.Fatal(err)
	}
	if err := controller.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := node.Publish("mesh.control.heartbeat.anchor", []byte("alive")); err != nil {
		t.Fatal(err)
	}
	if m, err := heartbeats.NextMsg(2 * time.Second); err != nil || string(m.Data) != "alive" {
		t.Fatalf("the allowed heartbeat did not arrive: %v", err)
	}

	// Refused: another machine's heartbeat is outside node.anchor's grant, and person.carol
	// (deny ">") may publish nothing at all.
	if err := node.Publish("mesh.control.heartbeat.laptop", []byte("forged")); err != nil {
		t.Fatal(err)
	}
	if err := carol.Publish("mesh.control.heartbeat.carol", []byte("forged")); err != nil {
		t.Fatal(err)
	}
	_ = node.Flush()
	_ = carol.Flush()
	if m, err := heartbeats.NextMsg(200 * time.Millisecond); err == nil {
		t.Errorf("a publish outside the grant arrived: %s %q", m.Subject, m.Data)
	}
	testwait.ForNil(t, "a permissions violation for each publish outside the grants", 2*time.Second, func() error {
		if violated("node.anchor", "mesh.control.heartbeat.laptop") && violated("person.carol", "mesh.control.heartbeat.carol") {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		return fmt.Errorf("violations seen: %v", violations)
	})
	if violated("node.anchor", "mesh.control.heartbeat.anchor") {
		t.Error("the allowed heartbeat was reported as a violation")
	}

	// `jetstream: enabled` holds: the controller reaches the JetStream API in its account.
	js, err := jetstream.New(controller)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := js.AccountInfo(ctx); err != nil {
		t.Errorf("JetStream in the mesh's account: %v", err)
	}

	// The user left out for want of a hash is nobody: its connection is refused.
	if nc, err := connect("enrol.laptop"); err == nil {
		nc.Close()
		t.Error("a user left out of accounts.conf could connect")
	} else if !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Errorf("connect as the left-out user: %v, want an authorization violation", err)
	}
}

// TestServerCheckFails shows each half of checkConfig catching what the other lets through: a
// warning only `nats-server -t` counts as a failure, a missing no_auth_user only NewServer sees.
func TestServerCheckFails(t *testing.T) {
	cases := []struct {
		name, accounts string
		strictOK       bool // whether `-t` alone accepts it
	}{
		{"unknown field", `accounts { "A" { users = [ {user: "u", password: "p", permissions: {pubish: {allow: ["x"]}}} ] } }` + "\n", false},
		{"warning only", "authorization { timeout: 120 }\n", false},
		{"no_auth_user nobody is", `no_auth_user: "ghost"` + "\n" + `accounts { "A" { users = [ {user: "u", password: "p"} ] } }` + "\n", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeServerConfig(t, []byte(c.accounts))
			if _, err := checkConfig(path); err == nil {
				t.Error("checkConfig accepted it")
			}
			strict := &server.Options{CheckConfig: true}
			if err := strict.ProcessConfigFile(path); (err == nil) != c.strictOK {
				t.Errorf("-t alone: err = %v, want accepted = %v", err, c.strictOK)
			}
		})
	}
}
