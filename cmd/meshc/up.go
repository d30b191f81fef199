package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.yaml.in/yaml/v3"

	"meshc/apply"
	"meshc/catalogue"
	"meshc/compiler"
	"meshc/emit"
	"meshc/internal/atomicfile"
)

const upHelp = `Usage: meshc up [DIR] [--once] [--state DIR] [--port N]

Runs the catalogue in DIR (default: the current directory) on an embedded NATS server with
JetStream, on 127.0.0.1, with nothing installed:

  1. mints a development password for every bus user, kept in STATE/dev-credentials.yaml
     (mode 0600; never the catalogue's credentials.yaml or golden files);
  2. composes accounts.conf from the catalogue with those passwords' hashes, and a server
     configuration that includes it (STATE/server.conf);
  3. starts the server and applies the plan (streams and consumers) as mesh-controller;
  4. prints how to connect as any user;
  5. watches the catalogue and, when a manifest changes, recomposes the accounts, reloads the
     server in place (existing connections stay) and applies again. Ctrl-C stops it.

With --once it applies, proves a sample flow (a module emits an event, the stream stores it,
the consuming module's own consumer delivers it and the ack is accepted, with the permissions
alone), checks a second apply has nothing to change, and exits.

Flags:
  --once        apply, prove a sample flow, and exit
  --state DIR   where the server's store, its configuration and the development credentials
                live (default DIR/.meshc; keep it out of git)
  --port N      the client port (default 0: a free one, printed)

One meshc up per state directory: a second is refused, naming the first's PID. The state
directory gets a .gitignore of its own, so nothing in it is ever committed. Ctrl-C stops meshc
up at any step, start-up and --once included.

Exit status: 0 up (or, with --once, proven); 1 the catalogue has errors or the flow failed;
2 meshc could not run (bad flags, DIR is not a catalogue, the server would not start, the state
directory is in use, interrupted before --once finished).
`

func runUp(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return up(ctx, args, stdout, stderr)
}

// up is meshc up until ctx ends (Ctrl-C, or a test).
func up(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	fs.Usage = func() { io.WriteString(fs.Output(), upHelp) }
	once := fs.Bool("once", false, "apply, prove a sample flow, and exit")
	stateDir := fs.String("state", "", "the state `DIR` (default DIR/.meshc)")
	port := fs.Int("port", 0, "the client `port` (0: a free one)")
	rest, exit, done := parseArgs(fs, args, stdout, stderr)
	if done {
		return exit
	}
	dir, exit, ok := catalogueArg(fs, rest, stderr)
	if !ok {
		return exit
	}
	if *stateDir == "" {
		*stateDir = filepath.Join(dir, ".meshc")
	}
	say := func(format string, args ...any) { fmt.Fprintf(stderr, "meshc up: "+format+"\n", args...) }
	release, err := claimState(*stateDir)
	if err != nil {
		say("%v", err)
		return exitCantRun
	}
	defer release()

	plan, code := compileCatalogue("up", dir, stderr)
	if plan == nil {
		return code
	}
	dev, err := interruptible(ctx, func() (map[string]devCredential, error) { return developmentCredentials(*stateDir, plan) })
	if err != nil {
		say("%v", err)
		return exitCantRun
	}
	if err := checkServerCanStart(*stateDir, *port); err != nil {
		say("%v", err)
		return exitCantRun
	}
	if _, err := composeLocal(*stateDir, plan, dev); err != nil {
		say("%v", err)
		return exitCantRun
	}
	confPath, err := writeServerConf(*stateDir, *port)
	if err != nil {
		say("%v", err)
		return exitCantRun
	}
	opts, err := server.ProcessConfigFile(confPath)
	if err != nil {
		say("the composed server configuration %s was refused: %v", confPath, err)
		return exitCantRun
	}
	opts.NoSigs = true
	opts.NoLog = true
	srv, err := server.NewServer(opts)
	if err != nil {
		say("starting the server: %v", err)
		return exitCantRun
	}
	go srv.Start()
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	if !srv.ReadyForConnections(10 * time.Second) {
		say("the embedded server did not become ready in 10 s")
		return exitCantRun
	}
	url := srv.ClientURL()
	say("nats-server %s with JetStream at %s (state in %s)", server.VERSION, url, *stateDir)

	changes, err := interruptible(ctx, func() (apply.Changes, error) { return applyLocal(url, plan, dev) })
	if err != nil {
		say("%v", err)
		return exitCantRun
	}
	fmt.Fprintf(stdout, "applied: %s\n", changes.Summary())
	printConnect(stdout, url, *stateDir, plan, dev)

	if *once {
		if _, err := interruptible(ctx, func() (any, error) { return nil, proveSampleFlow(url, plan, dev, stdout) }); errors.Is(err, errInterrupted) {
			say("%v", err)
			return exitCantRun
		} else if err != nil {
			say("the sample flow failed: %v", err)
			return exitFailed
		}
		again, err := interruptible(ctx, func() (apply.Changes, error) { return applyLocal(url, plan, dev) })
		if err != nil {
			say("%v", err)
			return exitCantRun
		}
		if !again.Empty() {
			say("a second apply still found changes: %s", again.Summary())
			return exitFailed
		}
		fmt.Fprintf(stdout, "second apply: %s\n", again.Summary())
		return exitOK
	}
	return watch(ctx, dir, *stateDir, srv, url, stderr, say)
}

// developmentCredentials returns a development password and hash for every user of the plan,
// minting those it does not have yet into STATE/dev-credentials.yaml. The hash is kept beside the
// password so accounts.conf stays byte-stable across runs (bcrypt salts are random).
func developmentCredentials(stateDir string, plan *compiler.Plan) (map[string]devCredential, error) {
	path := filepath.Join(stateDir, "dev-credentials.yaml")
	creds := map[string]devCredential{}
	if data, err := os.ReadFile(path); err == nil {
		if err := yaml.Unmarshal(data, &creds); err != nil {
			return nil, fmt.Errorf("%s is not readable (%v); delete it and run meshc up again", path, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	minted := false
	for _, u := range plan.Users {
		if _, ok := creds[u.Name]; ok {
			continue
		}
		pw, hash, err := catalogue.MintPassword()
		if err != nil {
			return nil, err
		}
		creds[u.Name] = devCredential{Password: pw, Hash: hash}
		minted = true
	}
	if minted {
		data, err := yaml.Marshal(creds)
		if err != nil {
			return nil, err
		}
		header := []byte("# Development passwords for `meshc up`: plaintext, for this machine only. Never commit.\n")
		if err := atomicfile.Write(path, append(header, data...), 0o600); err != nil {
			return nil, err
		}
	}
	return creds, nil
}

type devCredential struct {
	Password string `yaml:"password"`
	Hash     string `yaml:"hash"`
}

// composeLocal writes STATE/accounts.conf for the plan with the development hashes, only when
// its bytes change, and reports whether they did.
func composeLocal(stateDir string, plan *compiler.Plan, dev map[string]devCredential) (bool, error) {
	local := *plan
	local.Users = slices.Clone(plan.Users)
	for i := range local.Users {
		local.Users[i].Hash = dev[local.Users[i].Name].Hash
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

// writeServerConf writes the server's own half: listener, JetStream store, and the accounts by a
// relative include (an absolute include path is resolved relative to this file's directory).
func writeServerConf(stateDir string, port int) (string, error) {
	store, err := filepath.Abs(filepath.Join(stateDir, "jetstream"))
	if err != nil {
		return "", err
	}
	if port == 0 {
		port = -1
	}
	conf := fmt.Sprintf("# Written by meshc up.\nhost: \"127.0.0.1\"\nport: %d\njetstream {\n  store_dir: %q\n}\ninclude \"accounts.conf\"\n", port, store)
	path := filepath.Join(stateDir, "server.conf")
	return path, atomicfile.Write(path, []byte(conf), 0o600)
}

// applyLocal reads the embedded server as mesh-controller and asserts the plan on it.
func applyLocal(url string, plan *compiler.Plan, dev map[string]devCredential) (apply.Changes, error) {
	nc, err := apply.Dial(url, nats.UserInfo(compiler.ControllerUser, dev[compiler.ControllerUser].Password),
		nats.CustomInboxPrefix("_INBOX."+compiler.ControllerUser))
	if err != nil {
		return apply.Changes{}, err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	live, err := apply.Read(ctx, nc, apply.ReadOptions{})
	if err != nil {
		return apply.Changes{}, err
	}
	changes := apply.Diff(live, plan, apply.DiffOptions{})
	if changes.Empty() {
		return changes, nil
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return changes, err
	}
	if _, err := apply.Apply(ctx, js, changes, apply.Options{}); err != nil {
		return changes, err
	}
	return changes, nil
}

func printConnect(w io.Writer, url, stateDir string, plan *compiler.Plan, dev map[string]devCredential) {
	fmt.Fprintf(w, "\nThe bus is at %s. Every user's development password is in %s.\n",
		url, filepath.Join(stateDir, "dev-credentials.yaml"))
	fmt.Fprintf(w, "Connect as a user with its own inbox prefix, for example with the NATS CLI:\n\n")
	shown := 0
	for _, u := range plan.Users {
		if u.Kind == compiler.KindController || (u.Kind == compiler.KindModule && shown < 3) || u.Kind == compiler.KindPerson && shown < 4 {
			fmt.Fprintf(w, "  nats --server %s --user %s --password %s --inbox-prefix _INBOX.%s ...\n",
				url, u.Name, dev[u.Name].Password, u.Name)
			shown++
		}
	}
	fmt.Fprintln(w)
}

// proveSampleFlow finds a module event that another module's consumer filters on exactly, and
// proves the whole path with each side's own permissions: the emitter publishes, EVENTS stores
// it, the consumer's durable delivers it, and the ack is accepted.
func proveSampleFlow(url string, plan *compiler.Plan, dev map[string]devCredential, w io.Writer) error {
	emitter, subject, consumer := "", "", compiler.Consumer{}
	for _, c := range plan.Consumers {
		if c.Stream != compiler.EventsStream || c.Config.Durable == compiler.ControllerUser {
			continue
		}
		filters := append([]string{c.Config.FilterSubject}, c.Config.FilterSubjects...)
		for _, f := range filters {
			if f == "" || strings.ContainsAny(f, "*>") {
				continue
			}
			for _, u := range plan.Users {
				if u.Kind == compiler.KindModule && slices.Contains(u.Publish.Allow, f) {
					emitter, subject, consumer = u.Name, f, c
					break
				}
			}
			if emitter != "" {
				break
			}
		}
		if emitter != "" {
			break
		}
	}
	if emitter == "" {
		fmt.Fprintln(w, "sample flow: no module consumes another module's event by name; nothing to prove")
		return nil
	}
	node, module, _ := strings.Cut(consumer.Config.Durable, "_")
	reader := compiler.ModuleUserName(node, module)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	connect := func(user string) (*nats.Conn, jetstream.JetStream, error) {
		nc, err := apply.Dial(url, nats.UserInfo(user, dev[user].Password), nats.CustomInboxPrefix("_INBOX."+user))
		if err != nil {
			return nil, nil, err
		}
		js, err := jetstream.New(nc)
		return nc, js, err
	}
	enc, ejs, err := connect(emitter)
	if err != nil {
		return err
	}
	defer enc.Close()
	payload := fmt.Sprintf("meshc up sample %x", sha256.Sum256([]byte(time.Now().String())))
	if _, err := ejs.Publish(ctx, subject, []byte(payload)); err != nil {
		return fmt.Errorf("%s publishing %s: %w", emitter, subject, err)
	}
	rnc, rjs, err := connect(reader)
	if err != nil {
		return err
	}
	defer rnc.Close()
	cons, err := rjs.Consumer(ctx, compiler.EventsStream, consumer.Config.Durable)
	if err != nil {
		return fmt.Errorf("%s binding its consumer %s: %w", reader, consumer.Config.Durable, err)
	}
	// Earlier runs may have left messages before ours; each is acknowledged on the way.
	for range 1000 {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return fmt.Errorf("%s fetching from %s: %w", reader, consumer.Config.Durable, err)
		}
		got := false
		for m := range batch.Messages() {
			got = true
			if err := m.DoubleAck(ctx); err != nil {
				return fmt.Errorf("%s acknowledging on %s: %w", reader, consumer.Config.Durable, err)
			}
			if string(m.Data()) == payload {
				fmt.Fprintf(w, "sample flow: %s published %s; EVENTS stored it; %s's consumer %s delivered it and the ack was accepted\n",
					emitter, subject, reader, consumer.Config.Durable)
				return nil
			}
		}
		if err := batch.Error(); err != nil {
			return fmt.Errorf("%s fetching from %s: %w", reader, consumer.Config.Durable, err)
		}
		if !got {
			return fmt.Errorf("%s's consumer %s delivered nothing within 5 s; run meshc up again, or delete the state directory to start from an empty bus", reader, consumer.Config.Durable)
		}
	}
	return fmt.Errorf("the sample message never reached %s: a thousand older messages were ahead of it; delete the state directory to start from an empty bus", consumer.Config.Durable)
}

// watch polls the catalogue and, on a change, recompiles, recomposes the accounts, reloads the
// server in place and applies again, until interrupted.
func watch(ctx context.Context, dir, stateDir string, srv *server.Server, url string, stderr io.Writer, say func(string, ...any)) int {
	say("watching %s for changes; Ctrl-C stops the bus", dir)
	last := catalogueDigest(dir)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			say("stopping")
			return exitOK
		case <-tick.C:
		}
		digest := catalogueDigest(dir)
		if digest == last {
			continue
		}
		last = digest
		plan, _ := compileCatalogue("up", dir, stderr)
		if plan == nil {
			say("the catalogue has errors; the bus keeps running as it was")
			continue
		}
		dev, err := developmentCredentials(stateDir, plan)
		if err != nil {
			say("%v", err)
			continue
		}
		changed, err := composeLocal(stateDir, plan, dev)
		if err != nil {
			say("%v", err)
			continue
		}
		if changed {
			if err := srv.Reload(); err != nil {
				say("reloading the accounts: %v", err)
				continue
			}
			say("reloaded the accounts in place")
		}
		changes, err := interruptible(ctx, func() (apply.Changes, error) { return applyLocal(url, plan, dev) })
		if errors.Is(err, errInterrupted) {
			say("stopping")
			return exitOK
		}
		if err != nil {
			say("%v", err)
			continue
		}
		say("applied: %s", changes.Summary())
	}
}

// catalogueDigest fingerprints every catalogue file's name, size and modification time.
func catalogueDigest(dir string) string {
	h := sha256.New()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && (d.Name() == ".meshc" || d.Name() == "golden" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if info, err := d.Info(); err == nil && !d.IsDir() {
			fmt.Fprintf(h, "%s %d %d\n", p, info.Size(), info.ModTime().UnixNano())
		}
		return nil
	})
	return fmt.Sprintf("%x", h.Sum(nil))
}
