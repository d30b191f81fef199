package deliver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/conf"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/meshc-dev/meshc/apply/wire"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/internal/filelock"
)

// Reloader is a running nats-server that loads its configuration file again when asked: a
// process signalled as `nats-server --signal reload` does (SignalledServer), or a server in
// meshc's own process (InProcess, meshc up's).
type Reloader interface {
	// ConfigFile is the configuration file the server reloads; it includes the accounts file.
	ConfigFile() string
	// Monitor answers a request to the server's monitoring endpoint: a path with its query.
	Monitor(ctx context.Context, pathAndQuery string) ([]byte, error)
	// Signal asks the server to reload. rejected, asked while the reload is awaited, returns the
	// server's own words once it has said it refused the reload: "" until then, and when its
	// log cannot be read. logFile is the log_file its configuration names, "" when none.
	Signal(ctx context.Context, logFile string) (rejected func() string, err error)
	// Where names the server in messages.
	Where() string
	// Wait bounds one reload.
	Wait() time.Duration
}

// AccountsDelivery is the composed accounts file, the place it goes and the server that must
// serve it. `meshc apply --accounts` and `meshc up` deliver through it alike, so the reload rule
// is written once. Everything it decides, it decides in Deliver from what is true then: under
// the apply's lock and a lock on the file's directory, never from a look taken before a wait.
type AccountsDelivery struct {
	data   []byte
	path   string
	server Reloader
	// accounts are the composed file's, as the server reads them.
	accounts []string
	// Fence, when set, is asked before each write (the file, each reload): the apply lock's
	// Check, so a lock lost stops the delivery too.
	Fence func(context.Context) error
}

// Path is where the accounts file is delivered.
func (d *AccountsDelivery) Path() string { return d.path }

// PrepareAccounts checks what can refuse without looking at what may change meanwhile: the
// place (a regular file, or a symlink to one, that meshc may replace keeping its owner) and the
// bytes, which the server must be able to read. srv may be nil: the file is then only written.
func PrepareAccounts(ctx context.Context, data []byte, path string, srv Reloader) (*AccountsDelivery, error) {
	if _, err := lookAtAccounts(path); err != nil {
		return nil, err
	}
	d := &AccountsDelivery{data: data, path: path, server: srv}
	o := &server.Options{}
	if err := o.ProcessConfigString(string(data)); err != nil {
		return nil, fmt.Errorf("the composed accounts file does not parse as the server reads it: %w", err)
	}
	for _, a := range o.Accounts {
		d.accounts = append(d.accounts, a.Name)
	}
	return d, nil
}

// maxReloads bounds the reloads one delivery makes: the second wires the service imports of
// accounts the first created, and a third means something else keeps them dead.
const maxReloads = 3

// Deliver writes the file when its bytes changed and has the server load it until the server is
// proven to serve it (docs/nats.md, "Reload and its cost"):
//
//   - the server's configuration, read from its file by the server's own parser, must serve the
//     users the file holds (or --accounts names a file it does not include), and must parse (or
//     the reload would be refused: said without signalling);
//   - the configuration the server has loaded (/varz config_digest) must be the one on disk,
//     loaded after the signal (config_load_time), so a rejected SIGHUP is never taken for a
//     reload and a monitoring endpoint of another server is found out;
//   - every service import of every account in the file must have its subscription on the
//     server (/accountz, /subsz). An account a reload creates has dead service imports until
//     the next reload, and a module in it publishes into nothing: what a rerun finds there is
//     what it reloads for, whatever an earlier run managed before it failed or was killed.
func (d *AccountsDelivery) Deliver(ctx context.Context) (Delivered, error) {
	f, err := lookAtAccounts(d.path)
	if err != nil {
		return Delivered{}, err
	}
	// One delivery at a time to one directory: two applies of two buses (or an apply with no
	// server, which takes no bus lock) must not write one file from two decisions.
	dir := filepath.Dir(f.target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Delivered{}, fmt.Errorf("--accounts %s: %w", d.path, err)
	}
	dirLock, err := filelock.Acquire(dir, false)
	if err != nil {
		return Delivered{}, fmt.Errorf("--accounts %s: lock its directory: %w", d.path, err)
	}
	defer dirLock.Unlock()
	if f, err = lookAtAccounts(d.path); err != nil {
		return Delivered{}, err
	}
	if d.server != nil {
		// Before writing: a file the server does not include is refused, not written and
		// "reloaded". (A configuration that does not load now is judged after the write, which
		// may be what mends it.)
		if _, _, err := d.served(f); err != nil && !errors.Is(err, errNotLoadable) {
			return Delivered{}, err
		}
	}
	if err := d.fence(ctx); err != nil {
		return Delivered{}, err
	}
	changed, err := f.write(d.data)
	if err != nil {
		return Delivered{}, err
	}
	did := Delivered{Written: changed, Path: d.path, Server: d.server != nil}
	if d.server == nil {
		return did, nil
	}
	digest, logFile, err := d.served(f)
	if err != nil {
		return did, err
	}
	for {
		st, err := d.loaded(ctx)
		if err != nil {
			return did, err
		}
		if st.digest == digest && len(st.dead) == 0 {
			break
		}
		if did.Reloads == maxReloads {
			return did, fmt.Errorf("%s still has dead service imports after %d reloads (%s); reload it by hand, and apply again", d.server.Where(), did.Reloads, strings.Join(st.dead, "; "))
		}
		switch {
		case st.digest != digest:
			did.Why = append(did.Why, NotLoaded)
		default:
			did.Why = append(did.Why, fmt.Sprintf("%d service import(s) of accounts a reload created were not wired yet (%s), which the server does on the next reload", len(st.dead), abbreviate(st.dead)))
		}
		if err := d.fence(ctx); err != nil {
			return did, err
		}
		if err := d.reload(ctx, digest, logFile, f); err != nil {
			if did.Reloads > 0 {
				err = fmt.Errorf("reload %d: %w", did.Reloads+1, err)
			}
			return did, err
		}
		did.Reloads++
	}
	return did, nil
}

// NotLoaded is why a server is reloaded that had not loaded the file as it is.
const NotLoaded = "it had not loaded the file as it is"

// abbreviate names the first few of a list.
func abbreviate(list []string) string {
	if len(list) <= 3 {
		return strings.Join(list, "; ")
	}
	return strings.Join(list[:3], "; ") + fmt.Sprintf("; and %d more", len(list)-3)
}

func (d *AccountsDelivery) fence(ctx context.Context) error {
	if d.Fence == nil {
		return nil
	}
	return d.Fence(ctx)
}

// errNotLoadable marks a server configuration that does not parse.
var errNotLoadable = errors.New("the server's configuration does not load")

// served reads the server's configuration as the server would on a reload: it must load (or
// the reload would be refused, which is said without signalling), and it must include the
// accounts file f (or what is written there is not what the server serves). It returns the
// configuration's digest, what /varz reports once the server has loaded it, and the log file it
// names.
func (d *AccountsDelivery) served(f *accountsFile) (digest, logFile string, err error) {
	config := d.server.ConfigFile()
	opts, err := server.ProcessConfigFile(config)
	if err != nil {
		return "", "", fmt.Errorf("%w: %s would refuse to reload %s: %v; fix it, then apply again", errNotLoadable, d.server.Where(), config, err)
	}
	if !f.exists || !includes(config, f.target) {
		return "", "", fmt.Errorf("--accounts %s: %s's configuration %s does not include this file, so what is written there is not what it serves; give --accounts the file its configuration includes",
			d.path, d.server.Where(), config)
	}
	return opts.ConfigDigest(), opts.LogFile, nil
}

// includes reports whether the configuration file, read by the server's own parser, takes any
// of its settings from target: every value the parser reads carries the file it came from.
func includes(config, target string) bool {
	m, err := conf.ParseFileWithChecks(config)
	if err != nil {
		return false
	}
	want, err := os.Stat(target)
	if err != nil {
		return false
	}
	seen := map[string]bool{}
	var found bool
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case interface {
			SourceFile() string
			Value() any
		}:
			if file := x.SourceFile(); !seen[file] {
				seen[file] = true
				if info, err := os.Stat(file); err == nil && os.SameFile(info, want) {
					found = true
				}
			}
			walk(x.Value())
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	for _, v := range m {
		walk(v)
	}
	return found
}

// loadedState is what the server has loaded, by its monitoring endpoint.
type loadedState struct {
	digest string
	// dead names each service import of the file's accounts with no subscription behind it.
	dead []string
}

type varz struct {
	Start          time.Time `json:"start"`
	HTTPPort       int       `json:"http_port"`
	ConfigLoadTime time.Time `json:"config_load_time"`
	ConfigDigest   string    `json:"config_digest"`
}

func varzOf(ctx context.Context, r Reloader) (varz, error) {
	var v varz
	data, err := r.Monitor(ctx, "/varz")
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(data, &v); err != nil || v.ConfigLoadTime.IsZero() {
		if err == nil {
			err = errors.New("no config_load_time")
		}
		return v, fmt.Errorf("%s: /varz is not a nats-server's (%v); give --monitor the server's monitoring URL (nats-server -m PORT, or http: in its configuration)", r.Where(), err)
	}
	return v, nil
}

func (d *AccountsDelivery) loaded(ctx context.Context) (loadedState, error) {
	v, err := varzOf(ctx, d.server)
	if err != nil {
		return loadedState{}, err
	}
	st := loadedState{digest: v.ConfigDigest}
	if st.dead, err = deadImports(ctx, d.server, d.accounts); err != nil {
		return loadedState{}, err
	}
	return st, nil
}

// deadImports names the service imports of the accounts with no subscription on the server: an
// import is wired by a subscription on its local subject in the importing account
// (docs/nats.md, "Reload and scale with many accounts").
func deadImports(ctx context.Context, r Reloader, accounts []string) ([]string, error) {
	var loaded struct {
		Accounts []string `json:"accounts"`
	}
	data, err := r.Monitor(ctx, "/accountz")
	if err == nil {
		err = json.Unmarshal(data, &loaded)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: /accountz: %w; give --monitor the server's monitoring URL (nats-server -m PORT, or http: in its configuration)", r.Where(), err)
	}
	var dead []string
	for _, account := range accounts {
		if !slices.Contains(loaded.Accounts, account) {
			continue // not loaded yet: the digest says so
		}
		var az struct {
			Account *struct {
				Imports []struct {
					Type         string `json:"type"`
					LocalSubject string `json:"local_subject"`
					Invalid      bool   `json:"invalid"`
				} `json:"imports"`
			} `json:"account_detail"`
		}
		data, err := r.Monitor(ctx, "/accountz?acc="+url.QueryEscape(account))
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(data, &az); err != nil {
			return nil, fmt.Errorf("%s: /accountz answered what meshc cannot read (%v): is --monitor a nats-server's monitoring URL?", r.Where(), err)
		}
		if az.Account == nil {
			continue // not loaded yet: the digest says so
		}
		var want []string
		for _, imp := range az.Account.Imports {
			if imp.Type == "service" && !imp.Invalid && !slices.Contains(want, imp.LocalSubject) {
				want = append(want, imp.LocalSubject)
			}
		}
		if len(want) == 0 {
			continue
		}
		var sz struct {
			Subs []struct {
				Subject string `json:"subject"`
			} `json:"subscriptions_list"`
		}
		if data, err = r.Monitor(ctx, "/subsz?subs=1&limit=1000000&acc="+url.QueryEscape(account)); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(data, &sz); err != nil {
			return nil, fmt.Errorf("%s: /subsz answered what meshc cannot read (%v): is --monitor a nats-server's monitoring URL?", r.Where(), err)
		}
		for _, subject := range want {
			if !slices.ContainsFunc(sz.Subs, func(s struct {
				Subject string `json:"subject"`
			}) bool {
				return s.Subject == subject
			}) {
				dead = append(dead, fmt.Sprintf("account %s imports %s", account, subject))
			}
		}
	}
	return dead, nil
}

// reload asks the server to reload and waits until its monitoring endpoint shows the
// configuration on disk loaded after the ask, the server says it refused it, or the wait ends.
func (d *AccountsDelivery) reload(ctx context.Context, digest, logFile string, f *accountsFile) error {
	// The server's clock is this machine's (a signal reaches only a local process), and it sets
	// config_load_time when it has loaded, after the signal arrived.
	sent := time.Now()
	rejected, err := d.server.Signal(ctx, logFile)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(d.server.Wait())
	for {
		v, verr := varzOf(ctx, d.server)
		switch {
		case verr == nil && v.ConfigLoadTime.After(sent) && v.ConfigDigest == digest:
			return nil
		case verr == nil && v.ConfigLoadTime.After(sent):
			return fmt.Errorf("%s loaded a configuration other than the one on disk (digest %s, not %s): something changed it meanwhile; apply again", d.server.Where(), v.ConfigDigest, digest)
		}
		if words := rejected(); words != "" {
			return fmt.Errorf("%s refused the reload: %s; it keeps the configuration it had, and apply reloads again on the next run", d.server.Where(), words)
		}
		if time.Now().After(deadline) {
			why := "it kept the configuration it loaded at " + v.ConfigLoadTime.Format(time.RFC3339Nano)
			if verr != nil {
				why = verr.Error()
			}
			err := fmt.Errorf("%s did not reload within %s: %s", d.server.Where(), d.server.Wait(), why)
			if s, ok := d.server.(*SignalledServer); ok {
				err = fmt.Errorf("%w. %s; its log says why (or --monitor is not its endpoint), and apply signals it again on the next run", err, readableBy(s.pid, f))
			}
			return err
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// InProcess is a server running in meshc's own process as a Reloader: meshc up's. It reloads
// when asked and answers monitoring requests through the server's own handlers.
type InProcess struct {
	Server *server.Server
	// Config is the configuration file it was started from.
	Config string
}

func (s InProcess) ConfigFile() string  { return s.Config }
func (s InProcess) Where() string       { return "the embedded server" }
func (s InProcess) Wait() time.Duration { return time.Minute }

// Signal reloads at once; the server's refusal is its answer.
func (s InProcess) Signal(context.Context, string) (func() string, error) {
	err := s.Server.Reload()
	return func() string {
		if err != nil {
			return err.Error()
		}
		return ""
	}, nil
}

// Monitor answers through the server's monitoring handlers, as its endpoint would.
func (s InProcess) Monitor(ctx context.Context, pathAndQuery string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://in-process"+pathAndQuery, nil)
	if err != nil {
		return nil, err
	}
	w := &response{header: http.Header{}}
	switch req.URL.Path {
	case "/varz":
		s.Server.HandleVarz(w, req)
	case "/accountz":
		s.Server.HandleAccountz(w, req)
	case "/subsz":
		s.Server.HandleSubsz(w, req)
	default:
		return nil, fmt.Errorf("the embedded server answers no %s", req.URL.Path)
	}
	if w.status != 0 && w.status != http.StatusOK {
		return nil, fmt.Errorf("the embedded server's %s answered %d: %s", req.URL.Path, w.status, w.body.String())
	}
	return w.body.Bytes(), nil
}

// response is the smallest http.ResponseWriter: the server's handlers write into it.
type response struct {
	header http.Header
	body   bytes.Buffer
	status int
}

func (r *response) Header() http.Header         { return r.header }
func (r *response) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *response) WriteHeader(status int)      { r.status = status }

// AccountsFile decides everything about delivering the plan's accounts file to path that can
// refuse, and writes nothing: the bytes (a user with no recorded hash is a refusal, unless
// allowMissing leaves it out), the place, and with reload (a PID or a pid file) the nats-server
// to signal, whose monitoring endpoint must answer within wait.
func AccountsFile(ctx context.Context, plan *compiler.Plan, path string, allowMissing bool, reload, monitor string, wait time.Duration) (*AccountsDelivery, error) {
	data, err := emit.Accounts(plan, emit.AccountsOptions{AllowMissing: allowMissing})
	if err != nil {
		return nil, wire.Refused{Err: err}
	}
	var server Reloader
	if reload != "" {
		if server, err = Signalled(ctx, reload, monitor, wait); err != nil {
			return nil, err
		}
	}
	return PrepareAccounts(ctx, data, path, server)
}
