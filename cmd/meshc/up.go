package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/lint"
	"github.com/meshc-dev/meshc/up"
)

var upCommand = command{
	name:    "up",
	summary: "run the catalogue on an embedded NATS server, nothing installed",
	usage: `Usage: meshc up [DIR] [--once] [--state DIR] [--port N]
`,
	help: `Runs the catalogue in DIR (default: the current directory) on an embedded NATS server with
JetStream, on 127.0.0.1, with nothing installed:

  1. mints a development password for every bus user, kept in STATE/dev-credentials.yaml
     (mode 0600; never the catalogue's credentials.yaml or golden files);
  2. composes accounts.conf from the catalogue with those passwords' hashes, and a server
     configuration that includes it (STATE/server.conf);
  3. starts the server and applies the plan (streams and consumers) as mesh-controller;
  4. prints how to connect as any user;
  5. watches the catalogue and, when a manifest changes, recomposes the accounts, reloads the
     server in place (existing connections stay) and applies again. Ctrl-C stops it.

With auth: operator it runs a development operator (STATE/dev-keys.yaml) and pushes the accounts
as apply does, again on a change, with no reload; streams stored from an accounts file are moved.

With --once it applies, proves a sample flow (a module emits an event, the stream stores it,
the consuming module's own consumer delivers it and the ack is accepted, with the permissions
alone), checks a second apply has nothing to change, and exits.

One meshc up per state directory: a second is refused, naming the first's PID. The state
directory gets a .gitignore of its own, so nothing in it is ever committed. Ctrl-C stops meshc
up at any step, start-up and --once included.

`,
	exits: `Exit status: 0 up (or, with --once, proven); 1 the catalogue has errors or the flow failed;
2 meshc could not run (bad flags, DIR is not a catalogue, the server would not start, the state
directory is in use, interrupted before --once finished).
`,
	run: runUp,
}

func runUp(inv *invocation, args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runUpUntil(ctx, inv, args)
}

// runUpUntil is meshc up until ctx ends (Ctrl-C, or a test).
func runUpUntil(ctx context.Context, inv *invocation, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	once := fs.Bool("once", false, "apply, prove a sample flow, and exit")
	stateDir := fs.String("state", "", "where the server's store, its configuration and the development credentials live: a `DIR` (default DIR/.meshc; keep it out of git)")
	port := fs.Int("port", 0, "the client port (default 0: a free one, printed)")
	rest, exit, done := parseArgs(fs, args, inv)
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
	release, err := up.Claim(*stateDir)
	if err != nil {
		say("%v", err)
		return exitCantRun
	}
	defer release()

	// up runs on development passwords of its own: credentials.yaml's are not its concern.
	plan, code := compileCatalogue("up", dir, stderr, lint.RuleCredentialInvalid)
	if plan == nil {
		return code
	}
	bus, changes, err := up.Start(ctx, plan, up.Options{State: *stateDir, Port: *port})
	if err != nil {
		say("%v", err)
		return exitCantRun
	}
	defer bus.Stop()
	say("nats-server %s with JetStream at %s (state in %s)", server.VERSION, bus.URL, *stateDir)
	fmt.Fprintf(stdout, "applied: %s\n", changes.Summary())
	for _, d := range up.Dropped(changes) {
		say("%s", d)
	}
	contexts, err := bus.WriteContexts()
	if err != nil {
		say("%v", err)
		return exitCantRun
	}

	if *once {
		if _, err := up.Interruptible(ctx, func() (any, error) { return nil, bus.SampleFlow(stdout) }); errors.Is(err, up.ErrInterrupted) {
			say("%v", err)
			return exitCantRun
		} else if err != nil {
			say("the sample flow failed: %v", err)
			return exitFailed
		}
		again, err := up.Interruptible(ctx, func() (change.Changes, error) { return bus.Apply(ctx) })
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
	bus.PrintConnect(stdout, contexts, dir)
	up.Watch(ctx, dir, bus, func() *compiler.Plan {
		plan, _ := compileCatalogue("up", dir, stderr, lint.RuleCredentialInvalid)
		return plan
	}, say)
	return exitOK
}
