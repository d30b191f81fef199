package examples

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/meshc-dev/meshc/apply"
	"github.com/meshc-dev/meshc/apply/wire"
	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/internal/natstest"
	"github.com/meshc-dev/meshc/internal/testwait"
	"github.com/meshc-dev/meshc/up"
)

// The modules of docs/modules.md, written with nats.go (modules/go) and nats.js (modules/js), run
// as a team would run them: against their catalogue on the bus `meshc up` runs, each connecting
// as its own bus user with nothing but the grants meshc derived, in each auth: a password, an
// nkey seed file, and in operator mode a credentials file. The indexer serves its tool, binds its consumer and takes
// its seat's work; the uploader publishes, submits and calls; every photo must be indexed and
// rendered, and neither may see a permissions violation.
//
// nats.js comes from npm (`npm ci` in modules/js, which .ci/run does). Without node or without
// the package the JavaScript half is skipped, unless MESHC_MODULE_EXAMPLES=all says it must run.
func TestTheModulesPageRunsOnABus(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the Go module and starts a bus per auth: not in -short")
	}
	goBin := filepath.Join(t.TempDir(), "modules")
	if out, err := exec.Command(goTool(t), "build", "-o", goBin, "./modules/go").CombinedOutput(); err != nil {
		t.Fatalf("building modules/go: %v\n%s", err, out)
	}
	languages := map[string][]string{"nats.go": {goBin}}
	if node, ok := nodeModules(t); ok {
		main, _ := filepath.Abs(filepath.Join("modules", "js", "main.mjs"))
		languages["nats.js"] = []string{node, main}
	}
	for _, auth := range []string{catalogue.AuthPassword, catalogue.AuthNKey, catalogue.AuthOperator} {
		t.Run("auth "+auth, func(t *testing.T) {
			url, credential := startModulesBus(t, auth)
			for _, lang := range slices.Sorted(maps.Keys(languages)) {
				t.Run(lang, func(t *testing.T) {
					photos := []string{lang + "-" + auth + "-cat.jpg", lang + "-" + auth + "-dog.jpg"}
					runModules(t, url, credential, languages[lang], photos)
				})
			}
		})
	}
}

// startModulesBus runs modules/catalogue on a bus with the given auth, and returns where it is
// and each user's credential as its deployment gives it: which kind (PASSWORD, NKEY, CREDS) and
// its value, a password or a file's path. Passwords and
// operator mode run on `meshc up` (a password; a credentials file); with nkeys, which up does not
// run (seeds belong to their holders), on a server loading the accounts file meshc emits for
// nkey users minted here, the plan applied as mesh-controller by its own seed.
func startModulesBus(t *testing.T, auth string) (string, credential) {
	t.Helper()
	c, _, err := catalogue.Load(filepath.Join("modules", "catalogue"))
	if err != nil {
		t.Fatal(err)
	}
	c.Mesh.Auth.Value = auth
	plan, findings := compiler.Compile(catalogue.NewIndex(c))
	for _, f := range findings {
		if f.Severity == catalogue.Error {
			t.Fatalf("the modules' catalogue: %s", f)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if auth == catalogue.AuthNKey {
		return startNKeyBus(ctx, t, plan)
	}
	bus, _, err := up.Start(ctx, plan, up.Options{State: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bus.Stop)
	contexts, err := bus.WriteContexts()
	if err != nil {
		t.Fatal(err)
	}
	return bus.URL, func(user string) (string, string) {
		if auth == catalogue.AuthOperator {
			return "CREDS", strings.TrimSuffix(contexts[user], ".json") + ".creds"
		}
		return "PASSWORD", bus.Password(user)
	}
}

// credential is a user's credential as its deployment holds it: its kind, the end of the
// environment variable the examples read it from (PASSWORD, NKEY, CREDS), and its value.
type credential func(user string) (kind, value string)

func startNKeyBus(ctx context.Context, t *testing.T, plan *compiler.Plan) (string, credential) {
	state := t.TempDir()
	seeds := map[string]string{}
	for i := range plan.Users {
		seed, public, err := catalogue.MintNKey()
		if err != nil {
			t.Fatal(err)
		}
		plan.Users[i].NKey = public
		seeds[plan.Users[i].Name] = filepath.Join(state, plan.Users[i].Name+".nk")
		if err := os.WriteFile(seeds[plan.Users[i].Name], []byte(seed+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	accounts, err := emit.Accounts(plan, emit.AccountsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, emit.AccountsFile), accounts, 0o600); err != nil {
		t.Fatal(err)
	}
	conf, err := up.WriteServerConf(state, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	s := natstest.FromConfig(t, conf, false)
	seed, err := nats.NkeyOptionFromSeed(seeds[compiler.ControllerUser])
	if err != nil {
		t.Fatal(err)
	}
	bus, err := wire.Connect(wire.Endpoint{URL: s.ClientURL(), User: compiler.ControllerUser,
		Options: []nats.Option{seed, nats.CustomInboxPrefix(compiler.InboxPrefix(compiler.ControllerUser))}})
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	live, err := wire.Read(ctx, bus, wire.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	js, err := bus.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := apply.Apply(ctx, js, change.Diff(live, plan, change.DiffOptions{}), apply.Options{}); err != nil {
		t.Fatal(err)
	}
	return s.ClientURL(), func(user string) (string, string) { return "NKEY", seeds[user] }
}

// runModules runs the indexer until it is ready, the uploader to its end, and checks the
// indexer indexed and rendered every photo before it is stopped. Each module is given its user's
// credential in NATS_<kind>, and the indexer, which serves a tool, its serving user's in
// NATS_SERVE_<kind>.
func runModules(t *testing.T, url string, credential credential, command []string, photos []string) {
	env := func(module string) []string {
		env := append(os.Environ(), "MESH_MACHINE=box", "NATS_URL="+url)
		for _, kind := range []string{"CREDS", "NKEY", "PASSWORD"} {
			env = append(env, "NATS_"+kind+"=", "NATS_SERVE_"+kind+"=")
		}
		kind, value := credential(compiler.ModuleUserName("box", module))
		env = append(env, "NATS_"+kind+"="+value)
		if module == "indexer" {
			kind, value := credential(compiler.ServingUser("box", module))
			env = append(env, "NATS_SERVE_"+kind+"="+value)
		}
		return env
	}
	indexer := exec.Command(command[0], append(command[1:], "indexer")...)
	indexer.Env = env("indexer")
	var said lines
	stdout, _ := indexer.StdoutPipe()
	var stderr strings.Builder
	indexer.Stderr = &stderr
	if err := indexer.Start(); err != nil {
		t.Fatal(err)
	}
	read := make(chan struct{})
	go func() { said.read(stdout); close(read) }()
	defer func() {
		if indexer.ProcessState == nil {
			indexer.Process.Kill()
			indexer.Wait()
		}
	}()
	testwait.For(t, "the indexer to say it is ready", 30*time.Second, func() bool { return said.has("indexer: ready") || indexer.ProcessState != nil })
	if !said.has("indexer: ready") {
		t.Fatalf("the indexer did not start:\n%s%s", said.String(), stderr.String())
	}

	uploader := exec.Command(command[0], append(append(command[1:], "uploader"), photos...)...)
	uploader.Env = env("uploader")
	out, err := uploader.CombinedOutput()
	if err != nil {
		t.Fatalf("the uploader: %v\n%s\nthe indexer said:\n%s%s", err, out, said.String(), stderr.String())
	}
	for _, p := range photos {
		if !strings.Contains(string(out), "uploaded "+p) || !strings.Contains(string(out), p) {
			t.Errorf("the uploader did not upload and find %s:\n%s", p, out)
		}
	}
	if !strings.Contains(string(out), "search: ") {
		t.Errorf("the uploader's search was never answered:\n%s", out)
	}
	for _, p := range photos {
		testwait.For(t, "the indexer to index and render "+p, 30*time.Second, func() bool {
			return said.has("indexed "+p) && said.has("rendered "+p)
		})
	}
	indexer.Process.Signal(syscall.SIGTERM)
	<-read
	if err := indexer.Wait(); err != nil {
		t.Errorf("the indexer stopped with %v:\n%s%s", err, said.String(), stderr.String())
	}
	for _, w := range []string{stderr.String(), string(out)} {
		if strings.Contains(strings.ToLower(w), "permissions violation") {
			t.Errorf("a module met a permissions violation:\n%s", w)
		}
	}
}

// lines is what a process printed, line by line, as it prints it.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) read(r io.Reader) {
	s := bufio.NewScanner(r)
	for s.Scan() {
		l.mu.Lock()
		l.all = append(l.all, s.Text())
		l.mu.Unlock()
	}
}

func (l *lines) has(line string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.all, line)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n") + "\n"
}

// goTool is the go command of the toolchain running the test.
func goTool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	t.Skip("no go command to build the Go module with")
	return ""
}

// nodeModules finds node and nats.js installed in modules/js (npm ci); the test must run them
// when MESHC_MODULE_EXAMPLES=all.
func nodeModules(t *testing.T) (string, bool) {
	t.Helper()
	must := os.Getenv("MESHC_MODULE_EXAMPLES") == "all"
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join("modules", "js", "node_modules", "@nats-io", "transport-node"))
	}
	if err != nil {
		if must {
			t.Fatalf("MESHC_MODULE_EXAMPLES=all, but node or nats.js is missing (%v): run npm ci in examples/modules/js", err)
		}
		t.Logf("the nats.js modules are not run: %v (npm ci in examples/modules/js installs nats.js)", fmt.Sprint(err))
		return "", false
	}
	return node, true
}
