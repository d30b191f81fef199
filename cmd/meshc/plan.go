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

	"github.com/meshc-dev/meshc/apply"
	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/internal/atomicfile"
	"github.com/meshc-dev/meshc/internal/buildinfo"
	"github.com/meshc-dev/meshc/internal/output"
	"github.com/meshc-dev/meshc/lint"
	"github.com/meshc-dev/meshc/review"
)

const planHelp = `Usage: meshc plan [DIR] [--format text|json|markdown] [--prune] [--against REF | connection flags [--save FILE]]

Says what applying the catalogue in DIR (default: the current directory) would change, per
stream and consumer: + create, ~ update (each changed field), -/+ replace (a change the server
cannot make in place), - delete (only with --prune), and what is kept on purpose.

With no server, it compares against the committed golden plan (DIR/golden/plan.json, or -o):
what a pull request changes. With --server, --context or NATS_URL, it compares against the
live server, reading it with the paged list API (a handful of requests, however many objects),
and says when the users and permissions on the bus may differ from the catalogue's, and what
that rests on (the delivery meshc apply --accounts recorded on the bus, the server's
config_digest with --monitor, or nothing the bus records).

With --against REF, it compares against the base catalogue at REF (the pull request's base
branch) and shows everything the change does to a bus running the base: streams and consumers,
then bus users added and removed and, per user, every grant gained and lost (pub, sub and
responses) with the manifest line that declares it, a widening called out (a new wildcard, a
new person, another module's subject); then what the change breaks (replay, retention,
widening, contract: see meshc lint --list), with the approvals mesh.yaml's approve: list gives.
The markdown is what CI posts on the pull request:

    meshc plan --against origin/main --format markdown > plan.md

Flags:
  --format FORMAT  text (default): a summary a reviewer scans, then one line per change;
                   json: a stable shape for scripts; markdown: for a pull request comment
  --prune          show objects the plan no longer has as deletes
  -o DIR           the golden directory to compare against (default DIR/golden)
  --monitor URL    with a server, its monitoring endpoint: /varz config_digest says whether
                   the server still runs the accounts file meshc apply --accounts delivered
  --save FILE      with a server: also save the plan to FILE for 'meshc apply FILE', which
                   applies exactly this change set and refuses, naming what moved, if the
                   catalogue's files or the objects it changes on the bus changed since
` + againstHelp + `

` + connectHelp + `
Exit status:
  0  nothing would change
  1  something would change, or the catalogue has errors
  2  meshc could not run: a bad flag, DIR is not a catalogue, the server cannot be reached
  3  nothing would change in what the bus let it read, but the server reported objects missing
     or offline (a cluster's node down): the bus may still differ there
`

// againstHelp is the --against flag of plan and lint.
const againstHelp = `  --against REF    compare with the base: the catalogue at REF, a git commit, branch or tag
                   read with git from the catalogue's own repository (HEAD~1, origin/main),
                   or a directory holding the base catalogue`

func runPlan(inv *invocation, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.Usage = func() { io.WriteString(fs.Output(), planHelp) }
	formatName := choice(fs, "format", "text", "output `format`: text, json or markdown", output.Names(change.Formats...)...)
	prune := fs.Bool("prune", false, "show objects the plan no longer has as deletes")
	goldenDir := fs.String("o", "", "the golden `DIR` to compare against")
	against := fs.String("against", "", "compare with the base catalogue at `REF` (a git ref or a directory)")
	save := fs.String("save", "", "save the plan to `FILE` for meshc apply FILE")
	monitor := fs.String("monitor", "", "with a server, its monitoring `URL`: its config_digest says whether it runs the accounts meshc delivered")
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
	var count func(change.Changes) error
	server := ""
	if conn.explicit() {
		bus, state, exit, ok := readLive("plan", &conn, plan, 2*time.Minute, stderr)
		if !ok {
			return exit
		}
		defer bus.Close()
		live, server = state, bus.Conn.ConnectedUrlRedacted()
		if js, err := bus.JetStream(); err == nil {
			if said := apply.AccountsStatus(context.Background(), js, plan, *monitor); said != "" {
				fmt.Fprintf(stderr, "meshc plan: %s\n", said)
			}
		}
		count = func(cs change.Changes) error {
			return apply.CountDrops(context.Background(), bus, cs, apply.ReadOptions{APIPrefix: bus.APIPrefix})
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
	}
	changes := change.Diff(live, plan, change.DiffOptions{Prune: *prune})
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
		if err := savePlan(*save, dir, changes, *prune, server, live); err != nil {
			fmt.Fprintf(stderr, "meshc plan: --save: %v\n", err)
			return exitCantRun
		}
		fmt.Fprintf(stderr, "meshc plan: saved to %s; 'meshc apply %s' applies exactly this\n", *save, *save)
	}
	if changes.Empty() {
		if n := changes.Unreadable(); n > 0 {
			fmt.Fprintf(stderr, "meshc plan: %v\n", apply.LeftUnread(n))
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
func connectLive(cmd string, conn *connectFlags, plan *compiler.Plan, stderr io.Writer) (*apply.Bus, apply.Connection, int, bool) {
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
func readLive(cmd string, conn *connectFlags, plan *compiler.Plan, timeout time.Duration, stderr io.Writer) (*apply.Bus, *change.State, int, bool) {
	bus, c, exit, ok := connectLive(cmd, conn, plan, stderr)
	if !ok {
		return nil, nil, exit, false
	}
	ctx, cancel := bus.Watch(context.Background())
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	defer cancelTimeout()
	live, err := apply.Read(ctx, bus, apply.ReadOptions{RequestTimeout: c.RequestTimeout, APIPrefix: bus.APIPrefix})
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

// savePlan writes the plan for `meshc apply FILE`: the change set, the catalogue's files'
// digests and what the bus held of each object it changes.
func savePlan(path, dir string, cs change.Changes, prune bool, server string, live *change.State) error {
	files, err := catalogue.FileDigests(dir)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(change.NewSaved(buildinfo.Version(), cs, prune, dir, files, server, live), "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(data, '\n'), 0o644)
}

// readSaved reads a saved plan and checks the catalogue it names is still the one it was made
// from. The plan's directory is the catalogue's, as given to meshc plan.
func readSaved(path string) (*change.Saved, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	saved, err := change.ReadSaved(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	files, err := catalogue.FileDigests(saved.Catalogue.Dir)
	if err != nil {
		return nil, fmt.Errorf("%s: the catalogue it was made from: %w", path, err)
	}
	if moved := saved.CatalogueMoved(files); len(moved) > 0 {
		return nil, change.Moved("the catalogue in "+saved.Catalogue.Dir, moved, path)
	}
	return saved, nil
}
