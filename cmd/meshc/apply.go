package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nats-io/jsm.go/natscontext"
	"golang.org/x/term"

	"meshc/apply"
)

const applyHelp = `Usage: meshc apply [DIR] [--dry-run] [--allow-replace] [--prune] [--purge-non-empty]
                   [--accounts PATH [--reload PID|PIDFILE] [--allow-missing]] [connection flags]

Asserts the catalogue's streams and consumers on a live NATS server or cluster: streams before
consumers, at most 64 requests in flight, and applying twice changes nothing. It
asserts rather than creates: a missing object is created, a differing one updated, and where a
consumer starts (deliver policy, start sequence or time) is its history and is carried across.
A push consumer whose delivery subject would move while a subscriber is bound keeps its subject,
keeps delivering, and is reported.

Nothing is lost quietly: a change the server cannot make in place (a stream's storage or
retention, a consumer's ack policy, pull <-> push) is refused unless --allow-replace; an object
the plan no longer has is deleted only with --prune; and a stream holding messages is deleted or
replaced only with --purge-non-empty as well. Briefly unavailable JetStream (a cluster electing a leader)
is retried; anything else stops with what to do, and a rerun converges.

With --accounts PATH it also writes the composed accounts file (the users, hashes and
permissions of golden/accounts.conf) to PATH, atomically and only when its bytes changed, before
the streams; with --reload it then signals the server to reload it in place (SIGHUP, as
'nats-server --signal reload'): new users can connect at once and existing connections stay. A
reload re-checks the password of every connected client, which is why an unchanged file is never
rewritten. With --accounts and no server, only the file is written.

Flags:
  --dry-run         print the plan and touch nothing
  --allow-replace   delete and re-make objects whose change cannot be made in place
  --prune           delete objects the plan no longer has
  --purge-non-empty with --prune or --allow-replace: also streams that hold messages (lost)
  --concurrency N   requests in flight (default 64)
  --format FORMAT   how the plan is printed: text (default), json, markdown
  --accounts PATH   write the composed accounts file there when it changed
  --reload TARGET   after writing it, signal nats-server (a PID or its pid file) to reload
  --allow-missing   with --accounts: leave out users with no recorded hash (named in comments)

` + connectHelp + `
Exit status:
  0  applied (or nothing to change)
  1  the catalogue has errors, or the plan needs --allow-replace/--prune/--purge to proceed
  2  meshc could not run: a bad flag, DIR is not a catalogue, the server cannot be reached or
     refused a request
`

func runApply(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("apply", flag.ContinueOnError)
	fs.Usage = func() { io.WriteString(fs.Output(), applyHelp) }
	dryRun := fs.Bool("dry-run", false, "print the plan and touch nothing")
	allowReplace := fs.Bool("allow-replace", false, "re-make objects whose change cannot be made in place")
	prune := fs.Bool("prune", false, "delete objects the plan no longer has")
	purge := fs.Bool("purge-non-empty", false, "also delete or replace streams holding messages")
	concurrency := fs.Int("concurrency", 64, "requests in flight")
	formatName := fs.String("format", "text", "output `format`: text, json or markdown")
	accountsPath := fs.String("accounts", "", "write the composed accounts file to `PATH`")
	reload := fs.String("reload", "", "signal nats-server (`PID` or pid file) to reload")
	allowMissing := fs.Bool("allow-missing", false, "with --accounts, leave out users with no hash")
	var conn connectFlags
	conn.register(fs)
	rest, exit, done := parseArgs(fs, args, stdout, stderr)
	if done {
		return exit
	}
	_, format, plan, exit, ok := planArgs(fs, rest, *formatName, stderr)
	if !ok {
		return exit
	}
	if *reload != "" && *accountsPath == "" {
		fmt.Fprintf(stderr, "meshc apply: --reload signals the server to reload the file --accounts writes; give --accounts PATH too\n")
		return exitCantRun
	}
	if *accountsPath != "" && !*dryRun {
		// Users first: a module whose consumer is about to exist should be able to connect.
		changed, err := deliverAccounts(plan, *accountsPath, *allowMissing)
		if err != nil {
			fmt.Fprintf(stderr, "meshc apply: %v\n", err)
			return exitFailed
		}
		switch {
		case !changed:
			fmt.Fprintf(stderr, "meshc apply: %s is current; the server is not asked to reload\n", *accountsPath)
		case *reload != "":
			if err := signalReload(*reload); err != nil {
				fmt.Fprintf(stderr, "meshc apply: %v\n", err)
				return exitCantRun
			}
			fmt.Fprintf(stderr, "meshc apply: wrote %s and asked the server to reload it\n", *accountsPath)
		default:
			fmt.Fprintf(stderr, "meshc apply: wrote %s; reload the server to pick it up (--reload does)\n", *accountsPath)
		}
		if !conn.explicit() {
			return exitOK
		}
	}
	// With no server named, the NATS CLI's selected context, as `nats` would: apply has nothing
	// else to compare with.
	if !conn.explicit() && natscontext.SelectedContext() == "" {
		fmt.Fprintf(stderr, "meshc apply: %v\n", errNoServer)
		return exitCantRun
	}
	bus, live, exit, ok := readLive("apply", &conn, plan, 30*time.Minute, stderr)
	if !ok {
		return exit
	}
	defer bus.Close()
	js, err := bus.JetStream()
	if err != nil {
		fmt.Fprintf(stderr, "meshc apply: %v\n", err)
		return exitCantRun
	}
	// A refusal ends every request in flight at once: it will not pass by waiting.
	ctx, cancel := bus.Watch(context.Background())
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 30*time.Minute)
	defer cancelTimeout()
	changes := apply.Diff(live, plan, apply.DiffOptions{Prune: *prune})
	if err := apply.Render(stdout, changes, format); err != nil {
		fmt.Fprintf(stderr, "meshc apply: %v\n", err)
		return exitCantRun
	}
	if *dryRun || changes.Empty() {
		return exitOK
	}
	opts := apply.Options{AllowReplace: *allowReplace, Prune: *prune, PurgeNonEmpty: *purge, Concurrency: *concurrency}
	// Progress on a terminal only: a CI log gets the plan and the outcome, not a line per object.
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		opts.Progress = func(p apply.Progress) {
			fmt.Fprintf(stderr, "\r%d/%d %s %s\033[K", p.Done, p.Total, p.Change.Action, p.Change.Name())
			if p.Done == p.Total {
				fmt.Fprintln(stderr)
			}
		}
	}
	result, err := apply.Apply(ctx, js, changes, opts)
	for _, n := range result.Notes {
		fmt.Fprintf(stderr, "meshc apply: note: %s\n", n)
	}
	if err != nil {
		fmt.Fprintf(stderr, "meshc apply: %v\n", err)
		if errors.Is(err, apply.ErrRefused) {
			return exitFailed
		}
		return exitCantRun
	}
	fmt.Fprintf(stderr, "meshc apply: applied %d change(s)\n", result.Applied)
	return exitOK
}
