package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/meshc-dev/meshc/apply/deliver"
	"github.com/meshc-dev/meshc/apply/wire"
	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/internal/atomicfile"
	"github.com/meshc-dev/meshc/internal/buildinfo"
	"github.com/meshc-dev/meshc/internal/output"
	"github.com/meshc-dev/meshc/lint"
	"github.com/meshc-dev/meshc/operator"
	"github.com/meshc-dev/meshc/review"
)

var planCommand = command{
	name:    "plan",
	summary: "say what applying would change: against the golden plan, or a live server",
	usage: `Usage: meshc plan [DIR] [--format text|json|markdown] [--prune] [--against REF | connection flags [--save FILE]]
`,
	help: `Says what applying the catalogue in DIR (default: the current directory) would change, per
stream and consumer: + create, ~ update (each changed field), -/+ replace (a change the server
cannot make in place), - delete (only with --prune), and what is kept on purpose.

Users, credentials and accounts are part of the plan: each user and account that differs is a
row, created, changed (grants, imports, exports, limits, a credential re-minted) or deleted.

With no server, it compares against the committed golden files (DIR/golden/plan.json and
accounts.conf or claims.json, or -o): what a pull request changes. With --server, --context or
NATS_URL, it compares against the live server, reading it with the paged list API (a handful of
requests, however many objects), and the users and accounts against the delivery meshc apply
--accounts recorded on the bus (the server's config_digest with --monitor), or in operator mode
against the servers' resolver, read as the system user ($MESHC_SYSTEM_CREDS or --system-creds).

With --against REF, it compares against the base catalogue at REF (the pull request's base
branch) and shows everything the change does to a bus running the base: streams and consumers,
then bus users added and removed and, per user, every grant gained and lost (pub, sub and
responses) with the manifest line that declares it, a widening called out (a new wildcard, a
new person, another module's subject); then what the change breaks (replay, retention,
widening, contract: see meshc lint --list), with the approvals mesh.yaml's approve: list gives.
The markdown is what CI posts on the pull request:

    meshc plan --against origin/main --format markdown > plan.md

`,
	exits: `Exit status:
  0  nothing would change
  1  something would change, or the catalogue has errors
  2  meshc could not run: a bad flag, DIR is not a catalogue, the server cannot be reached
  3  nothing would change in what the bus let it read, but the server reported objects missing
     or offline (a cluster's node down): the bus may still differ there
`,
	run: runPlan,
}

// againstFlag declares --against, plan's and lint's: the base to compare with, and then what the
// command does with it.
func againstFlag(fs *flag.FlagSet, then string) *string {
	return fs.String("against", "", "compare with the base: the catalogue at `REF`, a git commit, branch or tag read with git from the catalogue's own repository (HEAD~1, origin/main), or a directory holding the base catalogue"+then)
}

func runPlan(inv *invocation, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	formatName := choice(fs, "format", "text", "text: a summary a reviewer scans, then one line per change; json: a stable shape for scripts; markdown: for a pull request comment", output.Names(change.Formats...)...)
	prune := fs.Bool("prune", false, "show objects the plan no longer has as deletes")
	goldenDir := fs.String("o", "", "the golden `DIR` to compare against (default DIR/golden)")
	against := againstFlag(fs, "")
	save := fs.String("save", "", "with a server: also save the plan to `FILE` for 'meshc apply FILE', which applies exactly this change set and refuses, naming what moved, if the catalogue's files or the objects it changes on the bus changed since")
	monitor := fs.String("monitor", "", "with a server, its monitoring endpoint's `URL`: /varz config_digest says whether the server still runs the accounts file meshc apply --accounts delivered")
	systemCreds := fs.String("system-creds", "", "auth: operator: the system user's credentials `FILE`, to compare the accounts the resolver holds (else $MESHC_SYSTEM_CREDS)")
	var conn connectFlags
	conn.register(fs)
	rest, exit, done := parseArgs(fs, args, inv)
	if done {
		return exit
	}
	if !refuseCombos(fs, stderr,
		combo{flag: "o", notWith: []string{"against"}, why: "-o names the golden plan to compare with, --against another catalogue; give one of them"},
		combo{flag: "save", notWith: []string{"against", "o"}, why: "a saved plan is a change to a live bus: it is made against a server"},
	) {
		return exitCantRun
	}
	if *save != "" && !conn.explicit() {
		fmt.Fprintf(stderr, "meshc plan: --save records what the bus holds: name the bus (--server, --context, NATS_URL or NATS_CONTEXT)\n")
		return exitCantRun
	}
	if *goldenDir != "" && conn.explicit() {
		fmt.Fprintf(stderr, "meshc plan: -o compares with the golden plan, a server (--server, --context, NATS_URL or NATS_CONTEXT) with a live bus: give one of them\n")
		return exitCantRun
	}
	dir, format, c, plan, exit, ok := planCatalogue(fs, rest, *formatName, stderr)
	if !ok {
		return exit
	}

	if *against != "" {
		if conn.explicit() {
			fmt.Fprintf(stderr, "meshc plan: --against compares two catalogues, a server compares one with a bus: give one of them\n")
			return exitCantRun
		}
		// The head as planCatalogue compiled it: review loads only the base.
		base, err := review.Load(dir, *against, lint.Side{Index: catalogue.NewIndex(c), Plan: plan})
		if err != nil {
			fmt.Fprintf(stderr, "meshc plan: %v\n", err)
			return exitCantRun
		}
		fmt.Fprintf(stderr, "meshc plan: comparing with the catalogue at %s\n", base.Label)
		r := base.Review(*prune)
		if err := r.Write(stdout, format); err != nil {
			fmt.Fprintf(stderr, "meshc plan: %v\n", err)
			return exitCantRun
		}
		if r.Empty() {
			return exitOK
		}
		return exitFailed
	}
	var live *change.State
	var err error
	var want *change.Principals
	var count func(change.Changes) error
	server, identity := "", ""
	if conn.explicit() {
		bus, state, exit, ok := readLive("plan", &conn, plan, 2*time.Minute, stderr)
		if !ok {
			return exit
		}
		defer bus.Close()
		live, server, identity = state, bus.Conn.ConnectedUrlRedacted(), bus.Identity()
		js, err := bus.JetStream()
		if err != nil {
			fmt.Fprintf(stderr, "meshc plan: %v\n", err)
			return exitCantRun
		}
		users, closeUsers, err := planDelivery(plan, &conn, *systemCreds, *monitor)
		if err != nil {
			fmt.Fprintf(stderr, "meshc plan: %v\n", err)
			return exitCantRun
		}
		defer closeUsers()
		// A request the server refuses is never answered: watched, it ends at once, saying what
		// was refused, instead of after its retries.
		watched, cancelWatch := bus.Watch(context.Background())
		defer cancelWatch()
		if users != nil {
			if live.Principals, err = users.Read(watched, js); err != nil {
				if r := bus.Refused(); r != nil {
					err = r
				}
				fmt.Fprintf(stderr, "meshc plan: %v\n", err)
				return exitCantRun
			}
			want = users.Wanted()
		} else {
			live.Principals = &change.Principals{Known: change.KnownNothing,
				From: fmt.Sprintf("with auth: operator they are the accounts the servers' resolver holds, read as the system user: give its credentials ($%s or --system-creds) to compare them", operator.SystemCredsVar)}
		}
		count = func(cs change.Changes) error {
			err := wire.CountDrops(watched, bus, cs, wire.ReadOptions{APIPrefix: bus.APIPrefix})
			if r := bus.Refused(); err != nil && r != nil {
				return r
			}
			return err
		}
	} else {
		if *goldenDir == "" {
			*goldenDir = filepath.Join(dir, catalogue.GoldenDir)
		}
		committed := filepath.Join(*goldenDir, emit.PlanFile)
		fmt.Fprintf(stderr, "meshc plan: comparing with %s, the committed plan (--server, --context, NATS_URL or NATS_CONTEXT compares with a live bus)\n", committed)
		if live, err = goldenState(committed); err != nil {
			fmt.Fprintf(stderr, "meshc plan: %v\n", err)
			return exitCantRun
		}
		if live.Principals, want, err = goldenPrincipals(*goldenDir, plan); err != nil {
			fmt.Fprintf(stderr, "meshc plan: %v\n", err)
			return exitCantRun
		}
	}
	changes := change.Diff(live, plan, change.DiffOptions{Prune: *prune, Principals: want})
	// Drops mesh.yaml approves are marked: a saved plan carries them to apply.
	lint.ApproveDrops(c, &changes)
	if count != nil {
		// What a change would drop is counted on the live bus only.
		if err := count(changes); err != nil {
			fmt.Fprintf(stderr, "meshc plan: %v\n", err)
			return exitCantRun
		}
	}
	if err := change.Render(stdout, changes, format); err != nil {
		fmt.Fprintf(stderr, "meshc plan: %v\n", err)
		return exitCantRun
	}
	if *save != "" {
		if err := savePlan(*save, dir, c.Files, changes, *prune, server, identity, live); err != nil {
			fmt.Fprintf(stderr, "meshc plan: --save: %v\n", err)
			return exitCantRun
		}
		fmt.Fprintf(stderr, "meshc plan: saved to %s; 'meshc apply %s' applies exactly this\n", *save, *save)
	}
	if changes.Empty() {
		if n := changes.Unreadable(); n > 0 {
			fmt.Fprintf(stderr, "meshc plan: %v\n", wire.LeftUnread(n))
			return exitUnread
		}
		return exitOK
	}
	return exitFailed
}

// planCatalogue is what plan and apply read first: the output format, the catalogue's directory,
// the catalogue and the plan it compiles to. ok is false when the command must exit with exit.
func planCatalogue(fs *flag.FlagSet, rest []string, formatName string, stderr io.Writer) (dir string, format output.Format, c *catalogue.Catalogue, plan *compiler.Plan, exit int, ok bool) {
	format, err := output.Parse(formatName, change.Formats...)
	if err != nil {
		fmt.Fprintf(stderr, "meshc %s: --format: %v\n", fs.Name(), err)
		return "", "", nil, nil, exitCantRun, false
	}
	if dir, exit, ok = catalogueArg(fs, rest, stderr); !ok {
		return "", "", nil, nil, exit, false
	}
	if c, plan, exit = compileLoaded(fs.Name(), dir, stderr); plan == nil {
		return "", "", nil, nil, exit, false
	}
	return dir, format, c, plan, exitOK, true
}

// connectLive resolves the connection settings, says which bus and as whom, connects and asks
// JetStream once. The caller closes the connection.
func connectLive(cmd string, conn *connectFlags, plan *compiler.Plan, stderr io.Writer) (*wire.Bus, wire.Connection, int, bool) {
	c, err := conn.resolve(cmd, plan)
	if err != nil {
		fmt.Fprintf(stderr, "meshc %s: %v\n", cmd, err)
		return nil, c, exitCantRun, false
	}
	fmt.Fprintf(stderr, "meshc %s: comparing with %s\n", cmd, c.Describe())
	bus, err := c.Dial()
	if err != nil {
		fmt.Fprintf(stderr, "meshc %s: %v\n", cmd, err)
		return nil, c, exitCantRun, false
	}
	return bus, c, exitOK, true
}

// readLive connects and reads everything the bus holds, within timeout. The caller closes the
// connection.
func readLive(cmd string, conn *connectFlags, plan *compiler.Plan, timeout time.Duration, stderr io.Writer) (*wire.Bus, *change.State, int, bool) {
	bus, c, exit, ok := connectLive(cmd, conn, plan, stderr)
	if !ok {
		return nil, nil, exit, false
	}
	ctx, cancel := bus.Watch(context.Background())
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	defer cancelTimeout()
	live, err := wire.Read(ctx, bus, wire.ReadOptions{RequestTimeout: c.RequestTimeout, APIPrefix: bus.APIPrefix})
	if err != nil {
		bus.Close()
		fmt.Fprintf(stderr, "meshc %s: %v\n", cmd, err)
		return nil, nil, exitCantRun, false
	}
	return bus, live, exitOK, true
}

// goldenState reads a committed plan.json as the state to compare with: what the bus holds once
// the committed plan was applied. No file is an empty bus.
func goldenState(path string) (*change.State, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &change.State{}, nil
	}
	if err != nil {
		return nil, err
	}
	committed, err := emit.ReadPlanJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return change.Applied(committed), nil
}

// savePlan writes the plan for `meshc apply FILE`: the change set, the digests of the catalogue's
// files as the plan's load read them, the bus it was made against and what the bus held of each
// object it changes.
func savePlan(path, dir string, files map[string]string, cs change.Changes, prune bool, server, identity string, live *change.State) error {
	data, err := json.MarshalIndent(change.NewSaved(buildinfo.Version(), cs, prune, dir, files, server, identity, live), "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(data, '\n'), 0o644)
}

// readSaved reads a saved plan; the command compares the catalogue it names with the saved
// digests once it has loaded it.
func readSaved(path string) (*change.Saved, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	saved, err := change.ReadSaved(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return saved, nil
}

// planDelivery is what plan reads the bus's users and accounts through: the resolver as the
// system user in operator mode (nil when its credentials are not given), else the record of the
// last accounts file delivered.
func planDelivery(plan *compiler.Plan, conn *connectFlags, systemCreds, monitor string) (deliver.Delivery, func(), error) {
	if plan.Operator == nil {
		d, err := deliver.NewRecordedDelivery(plan, monitor)
		return d, func() {}, err
	}
	if systemCreds == "" && os.Getenv(operator.SystemCredsVar) == "" {
		return nil, func() {}, nil
	}
	c, err := conn.resolve("plan", plan)
	if err != nil {
		return nil, nil, err
	}
	p, err := deliver.OpenPusher(context.Background(), c, plan, "", systemCreds, true)
	if err != nil {
		return nil, nil, err
	}
	return p, p.Close, nil
}

// goldenPrincipals are the users and accounts of the committed golden files (what the catalogue
// last emitted) and of the catalogue now, for a plan that compares with the golden files:
// accounts.conf, or in operator mode claims.json.
func goldenPrincipals(goldenDir string, plan *compiler.Plan) (held, want *change.Principals, err error) {
	if plan.Operator != nil {
		path := filepath.Join(goldenDir, emit.ClaimsFile)
		if want, err = change.WantedClaims(plan); err != nil {
			return &change.Principals{Known: change.KnownNothing, From: err.Error()}, nil, nil
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return &change.Principals{Known: change.KnownWhole, From: path + " (not there yet)"}, want, nil
		}
		if err != nil {
			return nil, nil, err
		}
		claims, err := emit.ReadClaims(data)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		// The golden claims are unsigned: they were the operator's signing key's to sign.
		for _, ac := range claims {
			ac.Issuer = plan.Operator.SigningKey
		}
		return change.FromClaims(claims, plan, path), want, nil
	}
	path := filepath.Join(goldenDir, emit.AccountsFile)
	data, err := emit.Accounts(plan, emit.AccountsOptions{AllowMissing: true})
	if err != nil {
		return nil, nil, err
	}
	if want, err = change.FromAccountsFile(data, "the catalogue"); err != nil {
		return nil, nil, err
	}
	committed, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &change.Principals{Known: change.KnownWhole, From: path + " (not there yet)"}, want, nil
	}
	if err != nil {
		return nil, nil, err
	}
	held, err = change.FromAccountsFile(committed, path)
	return held, want, err
}
