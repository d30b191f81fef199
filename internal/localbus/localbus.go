// Package localbus runs a catalogue's bus on this machine: an embedded nats-server with JetStream
// on 127.0.0.1, configured from a state directory holding the accounts file meshc composes and
// the server's own half that includes it, with the plan applied as mesh-controller. `meshc up`,
// the permission proof in the tests and the benchmarks all start a bus this one way, so what the
// proof proves is what `up` runs.
package localbus

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/meshc-dev/meshc/apply"
	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/internal/atomicfile"
)

// ComposeAccounts writes STATE/accounts.conf for the plan with the given hashes (user → bcrypt
// hash) in place of the recorded ones, only when its bytes change, and reports whether they did:
// the server re-checks every connected client's password on a reload (NATS-FACTS §3).
func ComposeAccounts(stateDir string, plan *compiler.Plan, hashes map[string]string) (bool, error) {
	local := *plan
	local.Users = slices.Clone(plan.Users)
	for i := range local.Users {
		local.Users[i].Hash = hashes[local.Users[i].Name]
		// A local bus runs on development passwords whatever auth the mesh uses: the nkey
		// seeds are their holders', and never on this machine.
		local.Users[i].NKey = ""
	}
	data, err := emit.Accounts(&local, emit.AccountsOptions{})
	if err != nil {
		return false, err
	}
	path := filepath.Join(stateDir, "accounts.conf")
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	return true, atomicfile.Write(path, data, 0o600)
}

// WriteServerConf writes the server's own half, STATE/server.conf: the listener, the JetStream
// store, anything extra (a test's feature flags, a JetStream domain), and the accounts by a
// relative include (an absolute include path is resolved relative to this file's directory,
// NATS-FACTS §1). Port 0 is a free one.
func WriteServerConf(stateDir string, port int, extra string) (string, error) {
	store, err := filepath.Abs(filepath.Join(stateDir, "jetstream"))
	if err != nil {
		return "", err
	}
	if port == 0 {
		port = -1
	}
	if extra != "" && !strings.HasSuffix(extra, "\n") {
		extra += "\n"
	}
	conf := fmt.Sprintf("# Written by meshc.\nhost: \"127.0.0.1\"\nport: %d\njetstream {\n  store_dir: %q\n}\n%sinclude \"accounts.conf\"\n", port, store, extra)
	path := filepath.Join(stateDir, "server.conf")
	return path, atomicfile.Write(path, []byte(conf), 0o600)
}

// Start starts a server from a configuration file, as `nats-server -c` does, and waits until it
// takes connections. When it cannot start (a port in use, a store it cannot write) the error is
// the server's own reason, not a bare time-out. Ending ctx (Ctrl-C) stops the wait, and the server.
func Start(ctx context.Context, confPath string, ready time.Duration) (*server.Server, error) {
	opts, err := server.ProcessConfigFile(confPath)
	if err != nil {
		return nil, fmt.Errorf("the server configuration %s was refused: %w", confPath, err)
	}
	opts.NoSigs = true
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("starting the server: %w", err)
	}
	logs := &errorLog{}
	srv.SetLoggerV2(logs, false, false, false)
	go srv.Start()
	deadline := time.Now().Add(ready)
	// Asked in short steps, so an interrupt is heard while a large store is being recovered.
	for !srv.ReadyForConnections(100 * time.Millisecond) {
		stop := func(err error) (*server.Server, error) {
			srv.Shutdown()
			srv.WaitForShutdown()
			return nil, err
		}
		switch {
		case ctx.Err() != nil:
			return stop(fmt.Errorf("interrupted while the embedded server started: %w", context.Cause(ctx)))
		case time.Now().After(deadline) && logs.String() != "":
			return stop(fmt.Errorf("the embedded server did not start in %s: %s", ready, logs.String()))
		case time.Now().After(deadline):
			return stop(fmt.Errorf("the embedded server did not become ready in %s", ready))
		}
	}
	return srv, nil
}

// errorLog keeps the server's errors (its reason for not starting) and drops the rest: the
// bus's chatter is not meshc's output.
type errorLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *errorLog) add(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) < 5 {
		l.lines = append(l.lines, fmt.Sprintf(format, v...))
	}
}

func (l *errorLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "; ")
}

func (l *errorLog) Noticef(string, ...any)    {}
func (l *errorLog) Warnf(string, ...any)      {}
func (l *errorLog) Debugf(string, ...any)     {}
func (l *errorLog) Tracef(string, ...any)     {}
func (l *errorLog) Errorf(f string, v ...any) { l.add(f, v...) }
func (l *errorLog) Fatalf(f string, v ...any) { l.add(f, v...) }

// ControllerEndpoint is how mesh-controller reaches the bus at url: its password, and the inbox
// prefix its grant names.
func ControllerEndpoint(url, password string) apply.Endpoint {
	return apply.Endpoint{
		URL: url, User: compiler.ControllerUser,
		Options: []nats.Option{
			nats.Name("meshc up"),
			nats.UserInfo(compiler.ControllerUser, password),
			nats.CustomInboxPrefix(compiler.InboxPrefix(compiler.ControllerUser)),
		},
	}
}

// Apply reads the bus as mesh-controller, with the permissions the catalogue gives it and nothing
// more, and asserts the plan; it returns what it found to change.
func Apply(ctx context.Context, e apply.Endpoint, plan *compiler.Plan) (change.Changes, error) {
	bus, err := apply.Connect(e)
	if err != nil {
		return change.Changes{}, err
	}
	defer bus.Close()
	ctx, cancel := bus.Watch(ctx)
	defer cancel()
	if err := bus.CheckJetStream(ctx, 10*time.Second); err != nil {
		return change.Changes{}, err
	}
	live, err := apply.Read(ctx, bus, apply.ReadOptions{APIPrefix: bus.APIPrefix})
	if err != nil {
		return change.Changes{}, err
	}
	changes := change.Diff(live, plan, change.DiffOptions{})
	if changes.Empty() {
		return changes, nil
	}
	js, err := bus.JetStream()
	if err != nil {
		return changes, err
	}
	if _, err := apply.Apply(ctx, js, changes, apply.Options{}); err != nil {
		return changes, err
	}
	return changes, nil
}

// Reload makes srv load its configuration file again after the accounts file changed from before
// to after, and again when the change added accounts: the server wires an account's service
// imports only on the reload after the one that created it, and until then a module in a new
// account publishes into nothing (NATS-FACTS §12). It reports whether it reloaded twice.
func Reload(srv *server.Server, before, after []byte) (bool, error) {
	added, err := emit.AccountsAdded(before, after)
	if err != nil {
		return false, err
	}
	if err := srv.Reload(); err != nil {
		return false, err
	}
	if len(added) == 0 {
		return false, nil
	}
	return true, srv.Reload()
}
