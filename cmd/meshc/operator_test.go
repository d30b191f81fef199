package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/internal/natstest"
	"github.com/meshc-dev/meshc/internal/testwait"
	"github.com/meshc-dev/meshc/operator"
)

// The example in operator mode, as its operator and its CI would run it: `meshc operator init`
// makes the operator, `meshc mint` every user's credentials, and CI applies with nothing but
// secrets in its environment and no access to the server's host, whose configuration is the
// operator.conf init wrote and nothing else. A module added is one apply: its account pushed, its
// user working, no reload, and nobody else disconnected. A user revoked is one apply: its
// connection closed at once. A module removed is one apply: its account deleted.
func TestOperatorModeFromCI(t *testing.T) {
	for _, isolation := range []string{catalogue.IsolationShared, catalogue.IsolationPerModule} {
		t.Run(isolation, func(t *testing.T) {
			// The inner loop (-short) proves the default isolation, as proof's modes do; CI both.
			if testing.Short() && isolation != catalogue.IsolationPerModule {
				t.Skip("-short: the default isolation only")
			}
			operatorModeFromCI(t, isolation)
		})
	}
}

func operatorModeFromCI(t *testing.T, isolation string) {
	dir := copyCatalogue(t, "../../examples/mesh", false)
	meshYAML := filepath.Join(dir, catalogue.MeshFile)
	data, _ := os.ReadFile(meshYAML)
	os.WriteFile(meshYAML, append(data, []byte("\nauth: operator\nisolation: "+isolation+"\n")...), 0o644)
	os.Remove(filepath.Join(dir, catalogue.CredentialsFile)) // password mode's hashes

	host := t.TempDir() // the server's host: nothing of the catalogue
	secrets, creds := t.TempDir(), t.TempDir()
	run := func(want int, args ...string) string {
		t.Helper()
		code, out, errs := meshc(t, args...)
		if code != want {
			t.Fatalf("meshc %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errs)
		}
		return out + errs
	}
	if said := run(exitCantRun, "operator", "init", "--dir", dir, "--secrets", filepath.Join(dir, "secrets")); !strings.Contains(said, "inside the catalogue") {
		t.Fatalf("secrets inside the catalogue: %s", said)
	}
	run(exitOK, "operator", "init", "--dir", dir, "--secrets", secrets, "--resolver-dir", filepath.Join(host, "jwt"))
	if said := run(exitCantRun, "operator", "init", "--dir", dir, "--secrets", t.TempDir()); !strings.Contains(said, "already records an operator") {
		t.Fatalf("a second init: %s", said)
	}
	run(exitOK, "mint", "--dir", dir, "--missing", "--out", creds)
	run(exitOK, "emit", dir)
	if _, err := os.Stat(filepath.Join(dir, catalogue.GoldenDir, emit.ClaimsFile)); err != nil {
		t.Fatalf("emit wrote no claims.json: %v", err)
	}
	// Against the golden claims just emitted, nothing differs; a person gaining a tool is the
	// change of their account and user a pull request shows.
	if said := run(exitOK, "plan", dir); !strings.Contains(said, "users and accounts: unchanged") {
		t.Fatalf("plan against the golden claims: %s", said)
	}
	for _, f := range []string{catalogue.KeysFile, catalogue.CredentialsFile, "golden/" + emit.ClaimsFile} {
		data, _ := os.ReadFile(filepath.Join(dir, f))
		for _, secret := range []string{"SO", "SA", "SU", "BEGIN USER NKEY SEED"} {
			if strings.Contains(string(data), `"`+secret) || strings.Contains(string(data), ": "+secret) || strings.Contains(string(data), secret+" SEED") {
				t.Fatalf("%s holds a secret (%s…)", f, secret)
			}
		}
	}

	conf := filepath.Join(host, "server.conf")
	operatorConf, _ := os.ReadFile(filepath.Join(secrets, operator.ServerConfFile))
	os.WriteFile(filepath.Join(host, operator.ServerConfFile), operatorConf, 0o644)
	os.WriteFile(conf, []byte("host: 127.0.0.1\nport: -1\njetstream { store_dir: \""+filepath.Join(host, "js")+"\" }\ninclude \""+operator.ServerConfFile+"\"\n"), 0o644)
	s := natstest.FromConfig(t, conf, false)

	// CI: secrets in the environment, nothing else.
	secret := func(name string) string { b, _ := os.ReadFile(filepath.Join(secrets, name)); return string(b) }
	t.Setenv(operator.SigningKeyVar, secret(operator.SigningFile))
	t.Setenv(operator.SystemCredsVar, secret(operator.SystemFile))
	t.Setenv("NATS_URL", s.ClientURL())
	controller, _ := os.ReadFile(filepath.Join(creds, "mesh-controller.creds"))
	token, kp, err := operator.ParseCreds(controller)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	t.Setenv("NATS_JWT", token)
	t.Setenv("NATS_SEED", string(seed))

	if said := run(exitFailed, "apply", dir); !strings.Contains(said, "holds no stream, and meshc never applied to it") || !strings.Contains(said, "--new-bus") {
		t.Fatalf("a first apply with no streams anywhere: %s", said)
	}
	// The refused apply pushed the mesh's account alone (the one push before the lock: the
	// controller lives there); the first that creates the streams pushes every other.
	said := run(exitOK, "apply", dir, "--new-bus")
	if !strings.Contains(said, "applied 28 change(s)") || (isolation == catalogue.IsolationPerModule && !strings.Contains(said, "accounts: pushed")) {
		t.Fatalf("first apply: %s", said)
	}
	if said := run(exitOK, "apply", dir); strings.Contains(said, "accounts: pushed") || !strings.Contains(said, "users and accounts: unchanged") {
		t.Fatalf("second apply pushed something: %s", said)
	}

	// plan reads the resolver as the system user (CI's secret is in the environment): nothing
	// differs, and a person gaining a tool is a change of the plan, exit 1, in its JSON too.
	if code, out, errs := meshc(t, "plan", dir); code != exitOK || !strings.Contains(out, "users and accounts: unchanged") {
		t.Fatalf("plan after the apply: %d\n%s%s", code, out, errs)
	}
	inventory0 := filepath.Join(dir, catalogue.InventoryFile)
	inv0, _ := os.ReadFile(inventory0)
	os.WriteFile(inventory0, []byte(strings.Replace(string(inv0), "may-call: [builder.build-now, audit-log.search]", "may-call: [builder.build-now, audit-log.search, catalog.lookup]", 1)), 0o644)
	code, out, errs := meshc(t, "plan", dir, "--format", "json")
	if code != exitFailed || !strings.Contains(out, `"name": "person.bob"`) || !strings.Contains(out, `"mesh.mod.catalog.tool.lookup"`) {
		t.Fatalf("plan of bob gaining a tool: %d\n%s%s", code, out, errs)
	}
	os.WriteFile(inventory0, inv0, 0o644)

	// keys.yaml loses the mesh account's line: lint says to mint, and mint records the key the
	// golden claims know, never a new one — the account under it holds every stream.
	keysPath := filepath.Join(dir, catalogue.KeysFile)
	keys0, _ := os.ReadFile(keysPath)
	meshKeyLine := regexp.MustCompile(`(?m)^  "novox": .*\n`)
	os.WriteFile(keysPath, meshKeyLine.ReplaceAll(keys0, nil), 0o644)
	run(exitOK, "mint", "--dir", dir, "--missing", "--out", t.TempDir())
	if keys1, _ := os.ReadFile(keysPath); !bytes.Equal(keys1, keys0) {
		t.Fatalf("mint --missing recorded another key for the mesh's account:\n%s\nwas:\n%s", keys1, keys0)
	}
	// Re-keyed by hand: apply refuses, naming the key the servers hold it under, and changes
	// nothing.
	newKey, _ := catalogue.MintAccountKey()
	oldKey := strings.Trim(strings.TrimSpace(strings.TrimPrefix(meshKeyLine.FindString(string(keys0)), `  "novox": `)), `"`)
	os.WriteFile(keysPath, []byte(strings.Replace(string(keys0), oldKey, newKey, 1)), 0o644)
	if said := run(exitFailed, "apply", dir); !strings.Contains(said, "recorded under a new key") || !strings.Contains(said, oldKey) || !strings.Contains(said, "EVENTS") {
		t.Fatalf("apply of a re-keyed mesh account: %s", said)
	}
	os.WriteFile(keysPath, keys0, 0o644)
	run(exitOK, "apply", dir)

	// Clients of the bus as it runs: each must stay connected through what follows.
	disconnects := map[string]*atomic.Int32{}
	disconnected := func(except ...string) (n int32) {
		for user, d := range disconnects {
			if !slices.Contains(except, user) {
				n += d.Load()
			}
		}
		return n
	}
	connect := func(user string, credsFile string) *nats.Conn {
		t.Helper()
		d := &atomic.Int32{}
		disconnects[user] = d
		nc, err := nats.Connect(s.ClientURL(), nats.UserCredentials(credsFile), nats.CustomInboxPrefix("_INBOX."+user),
			nats.DisconnectErrHandler(func(*nats.Conn, error) { d.Add(1) }))
		if err != nil {
			t.Fatalf("%s cannot connect: %v", user, err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	catalog := connect("serve.anchor.catalog", filepath.Join(creds, "serve.anchor.catalog.creds"))
	alice := connect("person.alice", filepath.Join(creds, "person.alice.creds"))
	if _, err := catalog.QueueSubscribe("mesh.mod.catalog.tool.lookup", "catalog", func(m *nats.Msg) { m.Respond([]byte("found")) }); err != nil {
		t.Fatal(err)
	}
	catalog.Flush()
	if m, err := alice.Request("mesh.mod.catalog.tool.lookup", nil, 2*time.Second); err != nil || string(m.Data) != "found" {
		t.Fatalf("alice's call before the change: %v", err)
	}

	// A module is added: its manifest, where it runs, its user minted; CI applies.
	os.WriteFile(filepath.Join(dir, "modules", "apps", "wiki.yaml"), []byte("module: wiki\nemits: [page.edited]\ntools: [search]\n"), 0o644)
	inventory := filepath.Join(dir, catalogue.InventoryFile)
	inv, _ := os.ReadFile(inventory)
	os.WriteFile(inventory, []byte(strings.Replace(string(inv), "runs: [nftables, host-exporter, nats,", "runs: [nftables, host-exporter, nats, wiki,", 1)), 0o644)
	wikiCreds, serveCreds := filepath.Join(creds, "mod.anchor.wiki.creds"), filepath.Join(creds, "serve.anchor.wiki.creds")
	os.WriteFile(wikiCreds, []byte(run(exitOK, "mint", "--dir", dir, "mod.anchor.wiki")), 0o600)
	os.WriteFile(serveCreds, []byte(run(exitOK, "mint", "--dir", dir, "serve.anchor.wiki")), 0o600)
	run(exitOK, "emit", dir)
	start := time.Now()
	said = run(exitOK, "apply", dir)
	wiki := connect("mod.anchor.wiki", wikiCreds)
	js, _ := jetstream.New(wiki)
	if _, err := js.Publish(t.Context(), "mesh.mod.wiki.event.page.edited", []byte("edited")); err != nil {
		t.Fatalf("the new module's event: %v", err)
	}
	wikiServer := connect("serve.anchor.wiki", serveCreds)
	if _, err := wikiServer.QueueSubscribe("mesh.mod.wiki.tool.search", "wiki", func(m *nats.Msg) { m.Respond([]byte("hit")) }); err != nil {
		t.Fatal(err)
	}
	wikiServer.Flush()
	if m, err := alice.Request("mesh.mod.wiki.tool.search", nil, 2*time.Second); err != nil || string(m.Data) != "hit" {
		t.Fatalf("alice, connected before, calling the new module's tool: %v", err)
	}
	t.Logf("module added: apply and the new user's first stored event and served call in %s (%s)", time.Since(start).Round(time.Millisecond), strings.TrimSpace(said))
	if n := disconnected(); n != 0 {
		t.Fatalf("%d client(s) were disconnected by adding a module", n)
	}
	if isolation == catalogue.IsolationPerModule && !strings.Contains(said, "pushed 3 account(s)") {
		t.Errorf("adding a module called by a person through a tool hub should push the instance's account, the module's and the hub: %s", said)
	}
	if isolation == catalogue.IsolationShared && !strings.Contains(said, "pushed 1 account(s)") {
		t.Errorf("adding a module to one account should push that account: %s", said)
	}
	if m, err := alice.Request("mesh.mod.catalog.tool.lookup", nil, 2*time.Second); err != nil || string(m.Data) != "found" {
		t.Fatalf("alice's call after the change: %v", err)
	}

	// A user is revoked: its connection is closed at once, and it cannot come back.
	bob := connect("person.bob", filepath.Join(creds, "person.bob.creds"))
	run(exitOK, "mint", "--dir", dir, "--revoke", "person.bob")
	run(exitOK, "emit", dir, "--allow-missing")
	run(exitOK, "apply", dir)
	testwait.For(t, "the revoked user's connection to be closed", 10*time.Second, func() bool { return !bob.IsConnected() })
	if nc, err := nats.Connect(s.ClientURL(), nats.UserCredentials(filepath.Join(creds, "person.bob.creds"))); err == nil {
		nc.Close()
		t.Fatal("the revoked user connected again")
	}

	// A module is removed: in an isolated mesh its account is deleted from the resolver.
	os.Remove(filepath.Join(dir, "modules", "apps", "wiki.yaml"))
	os.WriteFile(inventory, inv, 0o644)
	run(exitOK, "emit", dir, "--allow-missing")
	said = run(exitOK, "apply", dir)
	if isolation == catalogue.IsolationPerModule && !strings.Contains(said, "deleted 2 from the servers (mod.anchor.wiki, mod.wiki)") {
		t.Fatalf("removing a module in an isolated mesh (its instance's account and its own): %s", said)
	}
	for _, creds := range []string{wikiCreds, serveCreds} {
		if nc, err := nats.Connect(s.ClientURL(), nats.UserCredentials(creds)); err == nil {
			nc.Close()
			t.Fatal("the removed module's user connected")
		}
	}
	if disconnects["mod.anchor.wiki"].Load() == 0 || disconnects["serve.anchor.wiki"].Load() == 0 {
		t.Error("the removed module's clients stayed connected")
	}
	if n := disconnected("person.bob", "mod.anchor.wiki", "serve.anchor.wiki"); n != 0 {
		t.Fatalf("%d client(s) other than the revoked and the removed were disconnected", n)
	}
}
