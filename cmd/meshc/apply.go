package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/jsm.go/natscontext"
	"golang.org/x/term"

	"github.com/meshc-dev/meshc/apply"
	"github.com/meshc-dev/meshc/apply/deliver"
	"github.com/meshc-dev/meshc/apply/wire"
	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/internal/output"
)

var applyCommand = command{
	name:    "apply",
	summary: "assert the streams and consumers on a live server, never losing data quietly",
	usage: `Usage: meshc apply [DIR] [--dry-run] [--allow-replace] [--prune] [--purge-non-empty] [--allow-discard] [--adopt]
                   [--accounts PATH [--reload TARGET] [--allow-missing]] [connection flags]
                   [--operator-key FILE] [--system-creds FILE] [--new-bus]
       meshc apply FILE [same flags but --prune]
`,
	help: `With FILE, a plan saved by 'meshc plan --save FILE', it applies exactly that plan: the change set
the plan shows, from the catalogue it was made from (the directory it names). It refuses, naming
what moved and applying nothing, when a file of the catalogue changed since, when an object the
change set is about changed on the bus since, or when the change set meshc makes now is not the
saved one. What a running bus moves on its own (messages, acknowledgements) is read afresh, and
the refusals below (--allow-replace, --purge-non-empty) apply as they would to a plan made now.

Asserts the catalogue's streams and consumers on a live NATS server or cluster: streams before
consumers, at most 64 requests in flight, and applying twice changes nothing. It
asserts rather than creates: a missing object is created, a differing one updated, and where a
consumer starts (deliver policy, start sequence or time) is its history and is carried across.
A push consumer whose delivery subject would move while a subscriber is bound keeps its subject,
keeps delivering, and is reported.

Nothing is lost quietly: a change the server cannot make in place (a stream's storage or
retention, a consumer's ack policy, pull <-> push) is refused unless --allow-replace; an object
the plan no longer has is deleted only with --prune; a stream holding messages is deleted or
replaced only with --purge-non-empty as well, and whether it holds any is checked by the server
at the delete; and a change the server makes by dropping stored messages (a limit lowered,
retention limits -> interest, discard new -> old) only with --allow-discard, the plan saying how
many it drops. A replaced consumer is paused first and its replacement starts after what it
acknowledged, as read once the acknowledgements in flight landed; a replace that would still
deliver acknowledged messages again is refused (nats-server 2.11 or later: it needs the pause).
Briefly unavailable JetStream (a cluster electing a leader)
is retried; anything else stops with what to do, and a rerun converges.

One apply at a time changes a bus: apply takes a lock on the bus itself (a key in the KV
bucket "meshc", recording holder, start and expiry) before it reads, renews it while it works,
and checks it still holds it before every write (a lock broken or taken over stops the writes
at the next one). A second apply says whom it waits for, waits up to --lock-timeout and then
exits 2 naming the holder. Ctrl-C or SIGTERM stops an apply and gives the lock back; a killed
apply's lock expires a minute after its last renewal; a stuck one's is removed with
--break-lock. --dry-run reads without the lock.

Ownership: every stream and consumer apply writes carries the metadata meshc.mesh: <mesh name>
and, when mesh.yaml has an id, meshc.catalogue: <id>. What the plan names and carries no mark
is taken as the mesh's only with --adopt (the plan says so); what carries another mesh's or
another catalogue's mark is never changed, whatever the flags. --prune deletes only objects
this catalogue marked that the plan no longer has; everything else (KV and object-store
buckets, other applications' streams, consumers other tools added) is listed as not managed
and never changed, whatever the flags.

With --accounts PATH it also writes the composed accounts file (the users, hashes and
permissions of golden/accounts.conf) to PATH, atomically and only when its bytes changed, after
every refusal was decided (a refused apply writes nothing) and under the bus's lock and a lock
on PATH's directory, deciding from what the file and the server hold then. A symlink is written
through to its target, and an existing file keeps its owner, group and mode (a new one is
0600). With --reload it checks first that the target is a running nats-server started from a
configuration file (-c, read from its command line) and that --monitor is that process's
endpoint; it refuses a PATH the configuration does not include, and says at once, without
signalling, a configuration the server would refuse. Then it signals the server (SIGHUP, as
'nats-server --signal reload') until the server is proven to serve the file: /varz shows the
configuration on disk (config_digest) loaded after the signal (config_load_time), and every
service import of the file's accounts is wired (/accountz, /subsz: an account a reload creates
has dead imports until the next reload). So a rerun after a failed, refused or interrupted
reload reloads as often as the server still needs. A reload the server refused exits 2 with
the server's own words as soon as its log (a log_file, or its standard error redirected to a
file) says so. New users can connect at once and existing connections stay. A reload
re-checks the password of every connected client, which is why an unchanged file is never
rewritten. With --accounts and no server, only the file is written. With a server, the
delivery is recorded on the bus (the file's digest, and the server's config_digest when
--monitor reads it), so a later plan or apply without --accounts can say whether the users
and permissions on the bus are still the catalogue's.

Without --accounts, apply delivers streams and consumers only, and shows the users and accounts
that differ from the delivery recorded on the bus ("not by this apply"), or says it cannot tell
when nothing is recorded or the server's config_digest (--monitor) moved since.

A saved plan applied again once its changes are on the bus (a CI job re-run) does nothing and
exits 0; one made against another bus is refused.

Users, credentials and accounts are changes of the plan like streams and consumers: shown,
counted, saved, refused before anything is written, delivered under the lock (after the refusals,
before the streams), and removed last. With 'auth: operator' there is no accounts file: as the
system user, apply reads what the servers' resolver holds, pushes the account JWTs that differ
(exporters first, each proven by a user of it connecting), and removes the accounts the catalogue
dropped — revoked first, deleted once every server answers, never one holding streams or tagged
by another catalogue; a mesh account recorded under a new key is refused. The one push before the
lock is the mesh's own account on servers that hold none (secrets: MESHC_OPERATOR_SIGNING_KEY,
MESHC_SYSTEM_CREDS, or the flags).

`,
	exits: `Exit status:
  0  applied (or nothing to change)
  1  the catalogue has errors, the plan needs --allow-replace/--prune/--purge-non-empty/
     --allow-discard/--adopt to proceed or names another mesh's object, a stream to delete
     received messages since the plan was read, or --accounts finds a user with no recorded
     hash (see --allow-missing)
  2  meshc could not run: a bad flag, DIR is not a catalogue, the server cannot be reached or
     refused a request, another apply held the lock past --lock-timeout, the accounts file
     cannot be written, or the server did not take the reload
  3  applied what the bus let it read, and left objects the server reported missing or offline
     (a cluster's node down) as they are: apply again when the cluster is whole
`,
	run: runApply,
}

func runApply(inv *invocation, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	fs := flag.NewFlagSet("apply", flag.ContinueOnError)
	dryRun := fs.Bool("dry-run", false, "print the plan and touch nothing")
	allowReplace := fs.Bool("allow-replace", false, "delete and re-make objects whose change cannot be made in place")
	prune := fs.Bool("prune", false, "delete objects the plan no longer has")
	purge := fs.Bool("purge-non-empty", false, "with --prune or --allow-replace: also streams that hold messages (lost)")
	allowDiscard := fs.Bool("allow-discard", false, "make changes that drop stored messages (a lowered limit: those beyond it)")
	adopt := fs.Bool("adopt", false, "take as the mesh's what the plan names but carries no meshc mark")
	concurrency := fs.Int("concurrency", 64, "requests in flight")
	formatName := choice(fs, "format", "text", "how the plan is printed: text, json or markdown", output.Names(change.Formats...)...)
	accountsPath := fs.String("accounts", "", "write the composed accounts file to `PATH` when it changed")
	reload := fs.String("reload", "", "signal nats-server to reload the file, and confirm it: `TARGET` is its PID or its pid file")
	allowMissing := fs.Bool("allow-missing", false, "with --accounts: leave out users with no recorded hash (named in comments)")
	lockTimeout := fs.Duration("lock-timeout", time.Minute, "wait this long for another apply's lock, then exit 2 naming its holder")
	breakLock := fs.Bool("break-lock", false, "remove a stuck apply's lock, say whose it was, and apply nothing")
	monitor := fs.String("monitor", "http://127.0.0.1:8222", "the server's monitoring endpoint's `URL`: with --reload, where the reload is watched; with it named and no --accounts, where the server's config_digest says whether it still runs the accounts meshc delivered")
	reloadWait := fs.Duration("reload-timeout", 30*time.Second, "with --reload: how long the server may take to reload")
	operatorKey := fs.String("operator-key", "", "auth: operator: the operator's signing key seed `FILE` (else $MESHC_OPERATOR_SIGNING_KEY)")
	systemCreds := fs.String("system-creds", "", "auth: operator: the system user's credentials `FILE` (else $MESHC_SYSTEM_CREDS)")
	newBus := fs.Bool("new-bus", false, "auth: operator: create the streams of a mesh new to the servers")
	var conn connectFlags
	conn.register(fs)
	rest, exit, done := parseArgs(fs, args, inv)
	if done {
		return exit
	}
	const noLock = "--break-lock removes a stuck apply's lock and applies nothing"
	if !refuseCombos(fs, stderr,
		combo{flag: "break-lock", notWith: []string{"dry-run", "prune", "allow-replace", "purge-non-empty", "allow-discard", "adopt", "accounts", "reload", "format", "concurrency", "lock-timeout"}, why: noLock},
		combo{flag: "dry-run", notWith: []string{"accounts", "lock-timeout", "concurrency"}, why: "--dry-run prints the plan and touches nothing: it writes no file, takes no lock and sends no request"},
		combo{flag: "allow-missing", needs: []string{"accounts"}, why: "it leaves users with no hash out of the accounts file --accounts writes"},
		combo{flag: "purge-non-empty", needs: []string{"prune", "allow-replace"}, why: "it lets a delete or a replacement drop a stream's messages"},
		combo{flag: "reload", needs: []string{"accounts"}, why: "it signals the server to reload the file --accounts writes"},
		combo{flag: "reload-timeout", needs: []string{"reload"}, why: "it bounds the wait for the reload --reload asks for"},
	) {
		return exitCantRun
	}
	// A saved plan names its catalogue and decided --prune when it was made.
	var saved *change.Saved
	if len(rest) == 1 {
		if st, err := os.Stat(rest[0]); err == nil && st.Mode().IsRegular() {
			if given(fs)["prune"] {
				fmt.Fprintf(stderr, "meshc apply: %s is a saved plan, which decided --prune when it was made: drop --prune\n", rest[0])
				return exitCantRun
			}
			if saved, err = readSaved(rest[0]); err != nil {
				fmt.Fprintf(stderr, "meshc apply: %v\n", err)
				return exitFailed
			}
			rest, *prune = []string{saved.Catalogue.Dir}, saved.Prune
		}
	}
	_, format, c, plan, exit, ok := planCatalogue(fs, rest, *formatName, stderr)
	if !ok {
		return exit
	}
	if saved != nil {
		// The catalogue as this run loaded it: one read, so what is compiled is what was compared.
		if moved := saved.CatalogueMoved(c.Files); len(moved) > 0 {
			fmt.Fprintf(stderr, "meshc apply: %v\n", change.Moved("the catalogue in "+saved.Catalogue.Dir, moved, rest[0]))
			return exitFailed
		}
	}
	// Everything that can refuse is decided before anything is written: the accounts file's
	// bytes and place, the reload target, the lock and the plan's refusals.
	// Ctrl-C or SIGTERM ends the apply where it is, and the deferred releases give the locks
	// back rather than leaving them held to their expiry; a second one kills at once.
	sig, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	context.AfterFunc(sig, stopSignals)
	var accounts *deliver.AccountsDelivery
	if *accountsPath != "" {
		if plan.Operator != nil {
			fmt.Fprintf(stderr, "meshc apply: with auth: operator the servers have no accounts file: apply pushes the accounts over the bus; drop --accounts\n")
			return exitCantRun
		}
		var err error
		if accounts, err = deliver.AccountsFile(sig, plan, *accountsPath, *allowMissing, *reload, *monitor, *reloadWait); err != nil {
			fmt.Fprintf(stderr, "meshc apply: %v\n", err)
			return exitFor(err)
		}
		if !conn.explicit() {
			did, err := accounts.Deliver(sig)
			if err != nil {
				fmt.Fprintf(stderr, "meshc apply: %v\n", wire.WhyStopped(sig, err))
				return exitCantRun
			}
			fmt.Fprintf(stderr, "meshc apply: %s\n", fileDelivered(did))
			return exitOK
		}
	}
	// With no server named, the NATS CLI's selected context, as `nats` would: apply has nothing
	// else to compare with.
	if !conn.explicit() && natscontext.SelectedContext() == "" {
		fmt.Fprintf(stderr, "meshc apply: %v\n", errNoServer)
		return exitCantRun
	}
	if plan.Operator == nil {
		for _, f := range []string{"operator-key", "system-creds", "new-bus"} {
			if given(fs)[f] {
				fmt.Fprintf(stderr, "meshc apply: --%s is for a mesh with auth: operator, and this one has none: drop it\n", f)
				return exitCantRun
			}
		}
	}
	say := func(line string) { fmt.Fprintf(stderr, "meshc apply: %s\n", line) }
	var users deliver.Delivery
	meshNew := false
	switch {
	case *breakLock:
		// Breaking a lock pushes nothing and reads no accounts.
	case plan.Operator != nil:
		c, err := conn.resolve("apply", plan)
		var pusher *deliver.Pusher
		if err == nil {
			pusher, err = deliver.OpenPusher(sig, c, plan, *operatorKey, *systemCreds, *dryRun)
		}
		if err != nil {
			fmt.Fprintf(stderr, "meshc apply: %v\n", err)
			return exitCantRun
		}
		defer pusher.Close()
		// The servers hold no account under the mesh's key: its own is pushed alone, the one
		// push before the lock (which lives in it), or the apply is refused naming the key the
		// servers hold it under.
		if err := pusher.Bootstrap(sig, *dryRun); err != nil {
			say(err.Error())
			return exitFor(err)
		}
		if pusher.MeshNew && !*dryRun {
			say(fmt.Sprintf("the servers held no account %s: pushed it alone, so mesh-controller can connect and take the lock", plan.Account))
		}
		users, meshNew = pusher, pusher.MeshNew
	case accounts != nil:
		fd, err := deliver.NewFileDelivery(accounts, *monitor, "meshc apply --accounts")
		if err != nil {
			fmt.Fprintf(stderr, "meshc apply: %v\n", err)
			return exitCantRun
		}
		if *reload == "" && !given(fs)["monitor"] {
			fd.Monitor = ""
		}
		users = fd
	default:
		m := ""
		if given(fs)["monitor"] {
			m = *monitor
		}
		rd, err := deliver.NewRecordedDelivery(plan, m)
		if err != nil {
			fmt.Fprintf(stderr, "meshc apply: %v\n", err)
			return exitCantRun
		}
		users = rd
	}
	run := &apply.Run{
		Plan: plan, DryRun: *dryRun, Saved: saved,
		Options: apply.Options{AllowReplace: *allowReplace, Prune: *prune, PurgeNonEmpty: *purge, AllowDiscard: *allowDiscard, Adopt: *adopt, Concurrency: *concurrency},
		Lock: wire.LockOptions{Holder: wire.HolderName(plan.Account), Wait: *lockTimeout,
			Waiting: func(h wire.LockHolder) {
				say(fmt.Sprintf("waiting up to %s for the lock held by %s", *lockTimeout, h))
			},
			TookOver: func(h wire.LockHolder, why string) {
				say(fmt.Sprintf("took over the lock of %s: %s", h, why))
			}},
		Users: users, NewBus: *newBus,
		Out: stdout, Format: format, Say: say,
	}
	var bus *wire.Bus
	if *dryRun && meshNew {
		// Nothing to read as mesh-controller: its account is not on the servers yet.
		say(fmt.Sprintf("the servers hold no account %s yet: everything would be created", plan.Account))
	} else {
		var cn wire.Connection
		var exit int
		var ok bool
		if bus, cn, exit, ok = connectLive("apply", &conn, plan, stderr); !ok {
			return exit
		}
		defer bus.Close()
		run.Read = wire.ReadOptions{RequestTimeout: cn.RequestTimeout, APIPrefix: bus.APIPrefix}
	}
	// A refusal ends every request in flight at once: it will not pass by waiting.
	ctx, cancel := sig, context.CancelFunc(func() {})
	if bus != nil {
		ctx, cancel = bus.Watch(sig)
	}
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 30*time.Minute)
	defer cancelTimeout()
	if *breakLock {
		return runBreakLock(ctx, bus, stderr)
	}
	// Progress on a terminal only: a CI log gets the plan and the outcome, not a line per object.
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		run.Options.Progress = func(p apply.Progress) {
			fmt.Fprintf(stderr, "\r%d/%d %s %s\033[K", p.Done, p.Total, p.Change.Action, p.Change.Name())
			if p.Done == p.Total {
				fmt.Fprintln(stderr)
			}
		}
	}
	out, err := run.Do(ctx, bus)
	if out != nil {
		for _, line := range outcomeLines(out, *dryRun) {
			say(line)
		}
	}
	switch {
	case errors.Is(err, wire.ErrUnread):
		say(err.Error())
		return exitUnread
	case err != nil:
		say(err.Error())
		return exitFor(err)
	}
	return exitOK
}

// outcomeLines say what an apply did, a line each: the users and accounts delivered, the
// streams and consumers applied, the accounts removed.
func outcomeLines(out *apply.Outcome, dryRun bool) []string {
	var lines []string
	cs := out.Changes
	switch {
	case out.AlreadyApplied:
		return []string{"the saved plan's changes are all on the bus already (an earlier run applied them): nothing to do"}
	case dryRun:
		return nil
	}
	if d := out.Users; len(d.Pushed) > 0 || d.Path != "" {
		lines = append(lines, delivered(d))
	}
	if cs.Undelivered != "" && !cs.PrincipalsEmpty() {
		lines = append(lines, "users and accounts: "+cs.Undelivered)
	}
	if out.Applied != nil {
		lines = append(lines, fmt.Sprintf("applied %d change(s)", out.Applied.Applied))
	}
	if d := out.Removed; len(d.Revoked)+len(d.Deleted) > 0 {
		lines = append(lines, delivered(d))
	}
	return lines
}

// delivered says what a delivery of users and accounts did.
func delivered(d deliver.Delivered) string {
	if d.Path != "" {
		return fileDelivered(d)
	}
	var parts []string
	if len(d.Pushed) > 0 {
		parts = append(parts, fmt.Sprintf("pushed %d account(s)%s, each proven by a user of it connecting", len(d.Pushed), few(d.Pushed)))
	}
	if len(d.Revoked) > 0 {
		parts = append(parts, fmt.Sprintf("revoked %d account(s) the catalogue dropped%s", len(d.Revoked), few(d.Revoked)))
	}
	if len(d.Deleted) > 0 {
		parts = append(parts, fmt.Sprintf("deleted %d from the servers%s", len(d.Deleted), few(d.Deleted)))
	}
	if len(d.Missing) > 0 {
		parts = append(parts, fmt.Sprintf("%s did not answer and catch(es) up from the others within one resolver interval of coming back", strings.Join(d.Missing, ", ")))
	}
	return "accounts: " + strings.Join(parts, "; ")
}

func few(names []string) string {
	if len(names) == 0 || len(names) > 5 {
		return ""
	}
	return " (" + strings.Join(names, ", ") + ")"
}

// fileDelivered says what delivering an accounts file did.
func fileDelivered(d deliver.Delivered) string {
	verb := "wrote " + d.Path
	if !d.Written {
		verb = d.Path + " is current"
	}
	switch {
	case !d.Server && d.Written:
		return verb + "; reload the server to pick it up (--reload does)"
	case !d.Server:
		return verb
	case len(d.Why) == 0 && d.Reloads == 0:
		return verb + " and the server has loaded it (its configuration digest matches and every service import is wired); the server is not asked to reload"
	case d.Reloads == 1 && d.Written && d.Why[0] == deliver.NotLoaded:
		return "wrote " + d.Path + " and the server reloaded it"
	}
	times := fmt.Sprintf(" %d times", d.Reloads)
	switch d.Reloads {
	case 1:
		times = ""
	case 2:
		times = " twice"
	}
	return fmt.Sprintf("%s and the server reloaded it%s: %s", verb, times, strings.Join(d.Why, ", then "))
}

// runBreakLock removes a stuck apply's lock and says whose it was.
func runBreakLock(ctx context.Context, bus *wire.Bus, stderr io.Writer) int {
	js, err := bus.JetStream()
	var held *wire.LockHolder
	if err == nil {
		held, err = wire.BreakLock(ctx, js)
	}
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "meshc apply: %v\n", wire.WhyStopped(ctx, err))
		return exitCantRun
	case held == nil:
		fmt.Fprintf(stderr, "meshc apply: no apply holds the lock; nothing to break\n")
	default:
		fmt.Fprintf(stderr, "meshc apply: broke the lock of %s; if it is still running it stops at its next write\n", held)
	}
	return exitOK
}

// exitFor is the exit status of an apply that stopped with err: 1 for the plan's refusal, 2 for
// meshc unable to run.
func exitFor(err error) int {
	if errors.Is(err, wire.ErrRefused) {
		return exitFailed
	}
	return exitCantRun
}
