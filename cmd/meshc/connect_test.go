package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/meshc-dev/meshc/apply/wire"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/internal/natstest"
	"github.com/meshc-dev/meshc/up"
)

// Every test here connects the way a user does, as the user meshc composed, to a real server
// running the accounts.conf `meshc emit` wrote with the passwords `meshc mint` printed: never as an
// all-powerful test user, which once hid a plan and apply that could not run as mesh-controller.

// quickly is the bound on a refusal or misconfiguration being said: it used to take 67 s of
// retries. Far above what it takes, so a loaded machine does not fail it; far below a minute.
const quickly = 30 * time.Second

// emittedBus extracts the catalogue, mints every user, emits the golden files and starts a server
// whose users are golden/accounts.conf as emitted. serverConf, when given, is the server's own
// half (it must include accounts.conf); otherwise `meshc up`'s.
func emittedBus(t *testing.T, serverConf func(state string) string) (dir, url string, pw map[string]string) {
	return emittedBusWith(t, serverConf, nil)
}

// emittedBusWith is emittedBus with the accounts file edited first: a server still running an
// older meshc's file. The machine's NATS settings are kept out by hermetic.Run for the whole
// process; a test that writes a context or sets a variable isolates itself
// (isolateNATSSettings), and cannot be parallel.
func emittedBusWith(t *testing.T, serverConf func(state string) string, edit func([]byte) []byte) (dir, url string, pw map[string]string) {
	t.Helper()
	dir = cataloguetest.Extract(t, "testdata/up.txtar")
	pw = mint(t, dir, "--missing")
	if code, _, errs := meshc(t, "emit", dir); code != 0 {
		t.Fatalf("emit: %d %s", code, errs)
	}
	state := t.TempDir()
	accounts, err := os.ReadFile(filepath.Join(dir, "golden", "accounts.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		accounts = edit(accounts)
	}
	if err := os.WriteFile(filepath.Join(state, "accounts.conf"), accounts, 0o600); err != nil {
		t.Fatal(err)
	}
	var conf string
	if serverConf == nil {
		conf, err = up.WriteServerConf(state, 0, "")
		if err != nil {
			t.Fatal(err)
		}
	} else {
		conf = filepath.Join(state, "server.conf")
		if err := os.WriteFile(conf, []byte(serverConf(state)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir, natstest.FromConfig(t, conf, false).ClientURL(), pw
}

// isolateNATSSettings keeps the machine's own NATS settings out of a test: no variable, and a
// configuration directory of the test's own (no selected context).
func isolateNATSSettings(t *testing.T) string {
	t.Helper()
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	for _, e := range connectEnv {
		t.Setenv(e.env, "")
	}
	return config
}

// writeContext writes a NATS CLI context as `nats context save` would.
func writeContext(t *testing.T, config, name string, fields map[string]string) {
	t.Helper()
	dir := filepath.Join(config, "nats", "context")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(fields)
	if err := os.WriteFile(filepath.Join(dir, name+".json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func firstLine(s string) string { line, _, _ := strings.Cut(s, "\n"); return line }

// The CI job meshc is built for, whose only secrets are NATS_URL, NATS_USER=mesh-controller and
// NATS_PASSWORD, plans and applies against a bus running meshc's own accounts.conf.
func TestPlanAndApplyAsTheMeshControllerByEnvironment(t *testing.T) {
	dir, url, pw := emittedBus(t, nil)
	t.Setenv("NATS_URL", url)
	t.Setenv("NATS_USER", "mesh-controller")
	t.Setenv("NATS_PASSWORD", pw["mesh-controller"])

	start := time.Now()
	code, out, errs := meshc(t, "plan", dir)
	if code != 1 || !strings.Contains(out, "to create") {
		t.Fatalf("plan by environment: %d\n%s%s", code, out, errs)
	}
	if want := "meshc plan: comparing with the bus at " + url + " as mesh-controller"; firstLine(errs) != want {
		t.Fatalf("plan's first line is %q, want %q", firstLine(errs), want)
	}
	if code, out, errs = meshc(t, "apply", dir); code != 0 {
		t.Fatalf("apply by environment: %d\n%s%s", code, out, errs)
	}
	code, out, errs = meshc(t, "plan", dir)
	if code != 0 || !strings.Contains(out, "0 to create, 0 to change, 0 to replace, 0 to delete") {
		t.Fatalf("plan after apply: %d\n%s%s", code, out, errs)
	}
	if d := time.Since(start); d > quickly {
		t.Fatalf("plan, apply and plan took %s", d)
	}
	if strings.Contains(out+errs, pw["mesh-controller"]) {
		t.Fatal("the password was printed")
	}
}

func TestPlanAndApplyAsTheMeshControllerByFlags(t *testing.T) {
	dir, url, pw := emittedBus(t, nil)
	code, out, errs := meshc(t, "apply", dir, "--server", url, "--user", "mesh-controller", "--password", pw["mesh-controller"])
	if code != 0 || !strings.Contains(errs, "applied") {
		t.Fatalf("apply by flags: %d\n%s%s", code, out, errs)
	}
	if !strings.HasPrefix(errs, "meshc apply: comparing with the bus at "+url+" as mesh-controller\n") {
		t.Fatalf("apply does not say first what it compared with:\n%s", errs)
	}
	// A flag overrides its variable: a wrong password in the environment is not used.
	t.Setenv("NATS_PASSWORD", "wrong")
	code, out, errs = meshc(t, "plan", dir, "--server", url, "--user", "mesh-controller", "--password", pw["mesh-controller"])
	if code != 0 {
		t.Fatalf("plan by flags over a wrong variable: %d\n%s%s", code, out, errs)
	}
	// And the variable is used when no flag says otherwise: the server refuses it, and says so.
	code, _, errs = meshc(t, "plan", dir, "--server", url, "--user", "mesh-controller")
	if code != 2 || !strings.Contains(errs, "the server refused user mesh-controller") {
		t.Fatalf("plan with NATS_PASSWORD=wrong: %d %s", code, errs)
	}
}

// A context is read by jsm.go's natscontext as the NATS CLI reads it, by --context, by
// NATS_CONTEXT and as the CLI's selected context; the inbox prefix comes from the catalogue when
// the context names none, from the context's inbox_prefix when it does, and a flag overrides both.
func TestPlanAsTheMeshControllerByContext(t *testing.T) {
	config := isolateNATSSettings(t)
	dir, url, pw := emittedBus(t, nil)
	writeContext(t, config, "ci", map[string]string{"url": url, "user": "mesh-controller", "password": pw["mesh-controller"]})

	code, out, errs := meshc(t, "plan", dir, "--context", "ci")
	if code != 1 || !strings.Contains(out, "to create") || !strings.Contains(firstLine(errs), "as mesh-controller (context ci)") {
		t.Fatalf("plan --context ci: %d\n%s%s", code, out, errs)
	}
	t.Setenv("NATS_CONTEXT", "ci")
	if code, out, errs = meshc(t, "apply", dir); code != 0 {
		t.Fatalf("apply with NATS_CONTEXT=ci: %d\n%s%s", code, out, errs)
	}

	// The CLI's selected context: apply uses it as `nats` would; plan, with no server named,
	// compares with the golden file and says so, first.
	t.Setenv("NATS_CONTEXT", "")
	if err := os.WriteFile(filepath.Join(config, "nats", "context.txt"), []byte("ci"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = meshc(t, "apply", dir)
	if code != 0 || !strings.Contains(firstLine(errs), "(the NATS CLI's selected context ci)") {
		t.Fatalf("apply with a selected context: %d\n%s%s", code, out, errs)
	}
	code, _, errs = meshc(t, "plan", dir)
	if !strings.HasPrefix(firstLine(errs), "meshc plan: comparing with "+filepath.Join(dir, "golden", "plan.json")+", the committed plan") {
		t.Fatalf("plan without a server does not say it compared with the golden file: %d %s", code, errs)
	}

	// A context's inbox_prefix is honoured (here a wrong one, refused at once), and the flag
	// overrides it.
	writeContext(t, config, "odd", map[string]string{"url": url, "user": "mesh-controller", "password": pw["mesh-controller"], "inbox_prefix": "_INBOX.odd"})
	code, _, errs = meshc(t, "plan", dir, "--context", "odd")
	if code != 2 || !strings.Contains(errs, `a subscription to "_INBOX.odd.`) {
		t.Fatalf("a context's inbox_prefix was not used: %d %s", code, errs)
	}
	if code, out, errs = meshc(t, "plan", dir, "--context", "odd", "--inbox-prefix", "_INBOX.mesh-controller"); code != 0 {
		t.Fatalf("--inbox-prefix over the context's: %d\n%s%s", code, out, errs)
	}

	// A context by its file's path, as `nats --context FILE` takes one.
	path := filepath.Join(config, "nats", "context", "ci.json")
	if code, out, errs = meshc(t, "plan", dir, "--context", path); code != 0 {
		t.Fatalf("plan --context %s: %d\n%s%s", path, code, out, errs)
	}
	code, _, errs = meshc(t, "plan", dir, "--context", "nope")
	if code != 2 || !strings.Contains(errs, `context "nope" not found`) {
		t.Fatalf("plan --context nope: %d %s", code, errs)
	}
}

// A refusal of any kind ends the command within seconds, exit 2, naming the user, the subject and
// the grant it lacks; it is never retried as if the server were down.
func TestARefusalStopsAtOnceAndSaysWhichGrantIsMissing(t *testing.T) {
	t.Parallel()
	dir, url, pw := emittedBus(t, nil)

	t.Run("a module's user trying to apply", func(t *testing.T) {
		start := time.Now()
		code, _, errs := meshc(t, "apply", dir, "--server", url, "--user", "mod.anchor.catalog", "--password", pw["mod.anchor.catalog"])
		if code != 2 {
			t.Fatalf("apply as a module: exit %d, want 2\n%s", code, errs)
		}
		for _, want := range []string{"mod.anchor.catalog", `publishing to "$JS.API.INFO"`, `lacks the grant publish "$JS.API.INFO"`, "connect as mesh-controller"} {
			if !strings.Contains(errs, want) {
				t.Errorf("the refusal does not say %q:\n%s", want, errs)
			}
		}
		if d := time.Since(start); d > quickly {
			t.Fatalf("the refusal took %s", d)
		}
	})

	t.Run("the controller on an inbox it is not granted", func(t *testing.T) {
		start := time.Now()
		code, _, errs := meshc(t, "plan", dir, "--server", url, "--user", "mesh-controller", "--password", pw["mesh-controller"], "--inbox-prefix", "_INBOX.shared")
		if code != 2 {
			t.Fatalf("plan on the wrong inbox: exit %d, want 2\n%s", code, errs)
		}
		for _, want := range []string{`refused mesh-controller a subscription to "_INBOX.shared.`, `lacks the grant subscribe "_INBOX.shared.>"`, "--inbox-prefix _INBOX.mesh-controller"} {
			if !strings.Contains(errs, want) {
				t.Errorf("the refusal does not say %q:\n%s", want, errs)
			}
		}
		if d := time.Since(start); d > quickly {
			t.Fatalf("the refusal took %s", d)
		}
	})
}

// A server still running an accounts file from before mesh-controller was granted the apply
// lock's bucket refuses the controller; the message says the file is stale and how to deliver it,
// not to connect as the user it already is.
func TestAStaleAccountsFileIsSaidToBeStale(t *testing.T) {
	t.Parallel()
	dir, url, pw := emittedBusWith(t, nil, func(b []byte) []byte {
		return bytes.ReplaceAll(b, []byte(`"$KV.meshc.>"`), []byte(`"$KV.elsewhere.>"`))
	})
	code, _, errs := meshc(t, "apply", dir, "--server", url, "--user", "mesh-controller", "--password", pw["mesh-controller"])
	if code != 2 {
		t.Fatalf("apply on a stale accounts file: exit %d, want 2\n%s", code, errs)
	}
	for _, want := range []string{`mesh-controller lacks the grant publish "$KV.meshc.`, "meshc apply --accounts PATH --reload PID"} {
		if !strings.Contains(errs, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, errs)
		}
	}
}

// The apply lock works as mesh-controller with the emitted accounts file: a second apply waits,
// then exits 2 naming the holder; --break-lock says whose it was; the next apply goes through.
func TestTheApplyLockAsTheMeshController(t *testing.T) {
	t.Parallel()
	dir, url, pw := emittedBus(t, nil)
	bus, err := wire.Connect(wire.Endpoint{URL: url, User: "mesh-controller", Options: []nats.Option{
		nats.UserInfo("mesh-controller", pw["mesh-controller"]), nats.CustomInboxPrefix("_INBOX.mesh-controller")}})
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	js, err := bus.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	held, err := wire.AcquireLock(t.Context(), js, wire.LockOptions{Holder: "the other apply"})
	if err != nil {
		t.Fatalf("mesh-controller could not take the lock: %v", err)
	}
	defer held.Release(context.Background())
	as := []string{"--server", url, "--user", "mesh-controller", "--password", pw["mesh-controller"]}
	code, _, errs := meshc(t, append([]string{"apply", dir, "--lock-timeout", "500ms"}, as...)...)
	if code != 2 || !strings.Contains(errs, "the other apply") {
		t.Fatalf("apply while another holds the lock: %d %s", code, errs)
	}
	code, _, errs = meshc(t, append([]string{"apply", dir, "--break-lock"}, as...)...)
	if code != 0 || !strings.Contains(errs, "the other apply") {
		t.Fatalf("--break-lock: %d %s", code, errs)
	}
	if code, _, errs = meshc(t, append([]string{"apply", dir}, as...)...); code != 0 {
		t.Fatalf("apply after the lock was broken: %d %s", code, errs)
	}
}

// Misconfigurations are answered within seconds with what to do, and a password in a URL is
// never printed.
func TestMisconfigurationsAreSaidAtOnce(t *testing.T) {
	isolateNATSSettings(t)
	dir := cataloguetest.Extract(t, "testdata/up.txtar")

	t.Run("a server without JetStream", func(t *testing.T) {
		s := natstest.Start(t, &server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
		start := time.Now()
		code, _, errs := meshc(t, "plan", dir, "--server", s.ClientURL())
		if code != 2 || !strings.Contains(errs, "the server runs without JetStream") {
			t.Fatalf("plan against a server without JetStream: %d %s", code, errs)
		}
		// The server's INFO says it has none, so "no responders" is waited for a second, not
		// the connection timeout (7.8 s before).
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("took %s", d)
		}
	})

	t.Run("a password in the URL", func(t *testing.T) {
		code, _, errs := meshc(t, "plan", dir, "--server", "nats://mesh-controller:hunter2secret@127.0.0.1:1")
		if code != 2 || strings.Contains(errs, "hunter2secret") || !strings.Contains(errs, "nats://xxxxx@127.0.0.1:1") {
			t.Fatalf("a URL's password was printed, or the failure not said: %d %s", code, errs)
		}
	})

	t.Run("a timeout that is not a duration", func(t *testing.T) {
		t.Setenv("NATS_TIMEOUT", "soon")
		code, _, errs := meshc(t, "plan", dir, "--server", "nats://127.0.0.1:1")
		if code != 2 || !strings.Contains(errs, `NATS_TIMEOUT) "soon" is not a duration`) {
			t.Fatalf("NATS_TIMEOUT=soon: %d %s", code, errs)
		}
	})

	t.Run("home and variables expand in a context's paths and in flags", func(t *testing.T) {
		// ~ is the home the user database gives (natscontext asks os/user, as meshc's own
		// flags do), not $HOME: a HOME that differs, as here, must not change the answer.
		t.Setenv("HOME", t.TempDir())
		u, err := user.Current()
		if err != nil || u.HomeDir == "" {
			t.Skip("no home directory to expand ~ to")
		}
		home := u.HomeDir
		writeContext(t, os.Getenv("XDG_CONFIG_HOME"), "ops", map[string]string{"url": "nats://127.0.0.1:1", "nkey": "~/meshc-test-ops.nk"})
		code, _, errs := meshc(t, "plan", dir, "--context", "ops")
		if code != 2 || !strings.Contains(errs, filepath.Join(home, "meshc-test-ops.nk")) {
			t.Fatalf("a context's ~/ops.nk was not expanded: %d %s", code, errs)
		}
		t.Setenv("MESHC_TEST_DIR", t.TempDir())
		code, _, errs = meshc(t, "plan", dir, "--server", "nats://127.0.0.1:1", "--nkey", "$MESHC_TEST_DIR/ci.nk")
		if code != 2 || !strings.Contains(errs, filepath.Join(os.Getenv("MESHC_TEST_DIR"), "ci.nk")) {
			t.Fatalf("--nkey $MESHC_TEST_DIR/ci.nk was not expanded: %d %s", code, errs)
		}
	})

	t.Run("apply with no server anywhere", func(t *testing.T) {
		code, _, errs := meshc(t, "apply", dir)
		if code != 2 || !strings.Contains(errs, "no server given") {
			t.Fatalf("apply with nothing to connect to: %d %s", code, errs)
		}
	})
}

// A JetStream domain is honoured: requests go to $JS.<domain>.API, and the controller's grant
// $JS.API.> is enough, because the server maps the domain's API subject onto $JS.API before it
// checks permissions (parser.go selectMappedSubject, then the publish check). A wrong domain is
// said at once.
func TestAJetStreamDomainIsHonoured(t *testing.T) {
	t.Parallel()
	dir, url, pw := emittedBus(t, func(state string) string {
		return "host: \"127.0.0.1\"\nport: -1\njetstream {\n  store_dir: \"" + filepath.Join(state, "js") + "\"\n  domain: hub\n}\ninclude \"accounts.conf\"\n"
	})
	as := []string{"--server", url, "--user", "mesh-controller", "--password", pw["mesh-controller"]}
	code, out, errs := meshc(t, append([]string{"apply", dir, "--js-domain", "hub"}, as...)...)
	if code != 0 {
		t.Fatalf("apply --js-domain hub: %d\n%s%s", code, out, errs)
	}
	code, out, errs = meshc(t, append([]string{"plan", dir, "--js-domain", "hub"}, as...)...)
	if code != 0 || !strings.Contains(out, "0 to create, 0 to change") {
		t.Fatalf("plan --js-domain hub after apply: %d\n%s%s", code, out, errs)
	}
	start := time.Now()
	code, _, errs = meshc(t, append([]string{"plan", dir, "--js-domain", "elsewhere"}, as...)...)
	if code != 2 || !strings.Contains(errs, "$JS.elsewhere.API.INFO") || !strings.Contains(errs, "--js-domain") {
		t.Fatalf("plan --js-domain elsewhere: %d %s", code, errs)
	}
	if d := time.Since(start); d > quickly {
		t.Fatalf("a wrong domain took %s to say", d)
	}
	code, _, errs = meshc(t, append([]string{"plan", dir, "--js-domain", "hub", "--js-api-prefix", "$JS.x.API"}, as...)...)
	if code != 2 || !strings.Contains(errs, "give one") {
		t.Fatalf("a domain and an API prefix together: %d %s", code, errs)
	}
}
