package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
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

	"github.com/meshc-dev/meshc/apply"
	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/atomicfile"
	"github.com/meshc-dev/meshc/internal/localbus"
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
	if _, err := localbus.ComposeAccounts(*stateDir, plan, hashes(dev)); err != nil {
		say("%v", err)
		return exitCantRun
	}
	confPath, err := localbus.WriteServerConf(*stateDir, *port, "")
	if err != nil {
		say("%v", err)
		return exitCantRun
	}
	srv, err := localbus.Start(ctx, confPath, 10*time.Second)
	if err != nil {
		say("%v", err)
		return exitCantRun
	}
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	url := srv.ClientURL()
	say("nats-server %s with JetStream at %s (state in %s)", server.VERSION, url, *stateDir)

	controller := localbus.ControllerEndpoint(url, dev[compiler.ControllerUser].Password)
	changes, err := interruptible(ctx, func() (change.Changes, error) { return localbus.Apply(ctx, controller, plan) })
	if err != nil {
		say("%v", err)
		return exitCantRun
	}
	fmt.Fprintf(stdout, "applied: %s\n", changes.Summary())
	contexts, err := writeContexts(*stateDir, url, plan, dev)
	if err != nil {
		say("%v", err)
		return exitCantRun
	}

	if *once {
		if _, err := interruptible(ctx, func() (any, error) { return nil, proveSampleFlow(url, plan, dev, stdout) }); errors.Is(err, errInterrupted) {
			say("%v", err)
			return exitCantRun
		} else if err != nil {
			say("the sample flow failed: %v", err)
			return exitFailed
		}
		again, err := interruptible(ctx, func() (change.Changes, error) { return localbus.Apply(ctx, controller, plan) })
		if err != nil {
			say("%v", err)
			return exitCantRun
		}
		if !again.Empty() {
			say("a second apply still found changes: %s", again.Summary())
			return exitFailed
		}
		fmt.Fprintf(stdout, "second apply: %s\n", again.Summary())
		// The bus stops as this returns: no way to connect to it is printed.
		return exitOK
	}
	printConnect(stdout, url, contexts, plan)
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

// hashes are the development credentials' hashes, by user.
func hashes(dev map[string]devCredential) map[string]string {
	out := make(map[string]string, len(dev))
	for user, c := range dev {
		out[user] = c.Hash
	}
	return out
}

// writeContexts writes a NATS CLI context per bus user, STATE/contexts/USER.json (mode 0600): the
// server, the user's development password and the inbox prefix its grant names. `nats --context
// FILE` and `meshc … --context FILE` take one by its path, so no password is ever printed on a
// command line, where shell history and process lists keep it.
func writeContexts(stateDir, url string, plan *compiler.Plan, dev map[string]devCredential) (map[string]string, error) {
	dir := filepath.Join(stateDir, "contexts")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	paths := map[string]string{}
	for _, u := range plan.Users {
		data, err := json.MarshalIndent(map[string]string{
			"description":  fmt.Sprintf("meshc up: %s on the %s mesh (development password)", u.Name, plan.Account),
			"url":          url,
			"user":         u.Name,
			"password":     dev[u.Name].Password,
			"inbox_prefix": compiler.InboxPrefix(u.Name),
		}, "", "  ")
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, u.Name+".json")
		if err := atomicfile.Write(path, append(data, '\n'), 0o600); err != nil {
			return nil, err
		}
		paths[u.Name] = path
	}
	return paths, nil
}

func printConnect(w io.Writer, url string, contexts map[string]string, plan *compiler.Plan) {
	fmt.Fprintf(w, "\nThe bus is at %s. Each user has a NATS CLI context (its development password and\n", url)
	fmt.Fprintf(w, "the inbox prefix its grant names) in %s; connect as one, for example:\n\n", filepath.Dir(contexts[compiler.ControllerUser]))
	shown := 0
	for _, u := range plan.Users {
		if u.Kind == compiler.KindController || (u.Kind == compiler.KindModule && shown < 3) || u.Kind == compiler.KindPerson && shown < 4 {
			fmt.Fprintf(w, "  nats --context %s ...\n", contexts[u.Name])
			shown++
		}
	}
	fmt.Fprintf(w, "  meshc plan --context %s\n\n", contexts[compiler.ControllerUser])
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
	reader := consumer.User

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	connect := func(user string) (*nats.Conn, jetstream.JetStream, error) {
		nc, err := apply.Dial(url, nats.UserInfo(user, dev[user].Password), nats.CustomInboxPrefix(compiler.InboxPrefix(user)))
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
		accountsPath := filepath.Join(stateDir, "accounts.conf")
		before, _ := os.ReadFile(accountsPath)
		changed, err := localbus.ComposeAccounts(stateDir, plan, hashes(dev))
		if err != nil {
			say("%v", err)
			continue
		}
		if changed {
			after, err := os.ReadFile(accountsPath)
			if err != nil {
				say("%v", err)
				continue
			}
			twice, err := localbus.Reload(srv, before, after)
			if err != nil {
				say("reloading the accounts: %v", err)
				continue
			}
			if twice {
				say("reloaded the accounts in place, twice: the change added accounts, whose service imports the server wires on the second reload")
			} else {
				say("reloaded the accounts in place")
			}
		}
		changes, err := interruptible(ctx, func() (change.Changes, error) {
			return localbus.Apply(ctx, localbus.ControllerEndpoint(url, dev[compiler.ControllerUser].Password), plan)
		})
		if errors.Is(err, errInterrupted) {
			say("stopping")
			return exitOK
		}
		if err != nil {
			say("%v", err)
			continue
		}
		say("applied: %s", changes.Summary())
		// A user the change added gets its context too.
		if _, err := writeContexts(stateDir, url, plan, dev); err != nil {
			say("%v", err)
		}
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
