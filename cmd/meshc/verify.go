package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/nats-io/nats.go"

	"github.com/meshc-dev/meshc/apply/wire"
	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/output"
	"github.com/meshc-dev/meshc/verify"
)

var verifyCommand = command{
	name:    "verify",
	summary: "prove least privilege on a real server: the golden files on a throwaway one, or a live bus",
	usage: `Usage: meshc verify [DIR] [--format text|json|sarif] [-o GOLDEN] [--sample N]
       meshc verify [DIR] --credentials DIR --server URL [connection flags]
`,
	help: `Proves the least privilege of the catalogue in DIR (default: the current directory) on a real
nats-server. The catalogue says what each principal may do; the golden files, as committed, are
what the server enforces. meshc verify starts a throwaway nats-server (embedded, 127.0.0.1, a
temporary store) on DIR/golden — accounts.conf, or claims.json with auth: operator — applies
golden/plan.json as mesh-controller, connects as every principal, and tries, each try judged by
the server's own answer (a Permissions Violation, never a timeout):

` + verifyClasses + `
The recorded hashes and public keys are their holders'; a proof has no password or seed of
theirs. So each principal gets generated credentials in their place (a password for a hash, an
nkey for an nkey), and everything else the server reads is the golden file's. In operator mode
every key claims.json records (accounts, scoped signing keys, the system account, the probe
key) is replaced by one meshc makes under an operator of its own, and the claims, permissions in
the scopes' templates included, are pushed as written.

A golden file edited by hand, or a bug in emit, is a failure naming the principal, the subject
and the golden line that let it through.

With --credentials, the same proof runs against the live bus --server (or NATS_URL) names, as
the principals whose credentials are in --credentials DIR: one file per principal, USER.json (a NATS CLI context, as meshc up
writes in .meshc/contexts/) or USER.creds. It changes nothing the proof does not need, and
leaves nothing behind: publishes are inert (an expected last sequence no stream reaches, so
nothing is stored), pulls ask past their consumer's expiry (so nothing is delivered), forged
acks carry +WPI, and tool calls, tool subscriptions, heartbeats, flows and connection floods
are not tried, since they would reach live code. In operator mode the CI secrets alone (the
operator's signing key) prove no principal: a user's credentials are signed by its own scoped
key, which meshc mint hands out and never keeps; give the users' .creds (meshc mint --out DIR).

`,
	exits: `Exit status:
  0  every try was answered as the catalogue calls for
  1  a failure, or the catalogue has errors
  2  meshc could not prove: a bad flag, DIR is not a catalogue, a golden file is missing, the
     server cannot start or be reached
`,
	run: runVerify,
}

// verifyClasses lists the proof's classes for the help text, from the table the SARIF rules
// are written from.
var verifyClasses = func() string {
	var b strings.Builder
	for _, c := range verify.Classes {
		line := fmt.Sprintf("  %-16s", c.ID)
		for _, word := range strings.Fields(c.Summary) {
			if len(line)+1+len(word) > 95 {
				b.WriteString(line + "\n")
				line = strings.Repeat(" ", 18)
			}
			line += " " + word
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}()

func runVerify(inv *invocation, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	formatName := choice(fs, "format", "text", `text: what each class tried, each failure as file:line: error: class: message, then a count; json: {"target", "principals", "classes", "failures": [{"class", "principal", "subject", "grant", "file", "line", "message"}]}; sarif: SARIF 2.1.0, a failure an alert at its golden line`, output.Names(verify.Formats...)...)
	goldenDir := fs.String("o", "", "the `GOLDEN` directory to prove (default DIR/golden)")
	sample := fs.Int("sample", 256, "tries each principal makes of other principals' subjects, and victims each attack tries")
	creds := fs.String("credentials", "", "prove the live bus --server names, as the principals whose credentials `DIR` holds: USER.json (a NATS CLI context) or USER.creds, one per principal")
	var conn connectFlags
	conn.registerWhere(fs)
	rest, exit, done := parseArgs(fs, args, inv)
	if done {
		return exit
	}
	format, err := output.Parse(*formatName, verify.Formats...)
	if err != nil {
		fmt.Fprintf(stderr, "meshc verify: --format: %v\n", err)
		return exitCantRun
	}
	if !refuseCombos(fs, stderr,
		combo{flag: "server", needs: []string{"credentials"}, why: "a live bus is proven as the principals whose credentials you give (USER.json contexts, as meshc up writes in .meshc/contexts/, or USER.creds files)"},
		combo{flag: "s", needs: []string{"credentials"}, why: "a live bus is proven as the principals whose credentials you give (USER.json contexts, as meshc up writes in .meshc/contexts/, or USER.creds files)"},
		combo{flag: "credentials", notWith: []string{"o"}, why: "a live bus runs what it runs; -o names the golden files a throwaway server runs"},
	) {
		return exitCantRun
	}
	if *sample <= 0 {
		fmt.Fprintf(stderr, "meshc verify: --sample %d: give a number of tries above 0\n", *sample)
		return exitCantRun
	}
	dir, exit, ok := catalogueArg(fs, rest, stderr)
	if !ok {
		return exit
	}
	plan, code := compileCatalogue("verify", dir, stderr)
	if plan == nil {
		return code
	}
	opts := verify.Options{Golden: *goldenDir, Sample: *sample}
	if opts.Golden == "" {
		opts.Golden = filepath.Join(dir, catalogue.GoldenDir)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *creds != "" {
		if conn.fromEnvironment(); conn.Server == "" {
			fmt.Fprintln(stderr, "meshc verify: --credentials proves a live bus: name it with --server URL or NATS_URL")
			return exitCantRun
		}
		if opts.Live, err = liveBus(&conn, plan, *creds); err != nil {
			fmt.Fprintf(stderr, "meshc verify: %v\n", err)
			return exitCantRun
		}
		fmt.Fprintf(stderr, "meshc verify: proving the bus at %s as %d principals\n", wire.RedactURL(opts.Live.URL), len(opts.Live.As))
	} else {
		fmt.Fprintf(stderr, "meshc verify: proving %s on a throwaway nats-server\n", opts.Golden)
	}
	result, err := verify.Run(ctx, plan, opts)
	if err != nil {
		fmt.Fprintf(stderr, "meshc verify: %v\n", err)
		return exitCantRun
	}
	if err := verify.Write(stdout, format, result); err != nil {
		fmt.Fprintf(stderr, "meshc verify: writing %s: %v\n", format, err)
		return exitCantRun
	}
	if result.Failed() {
		return exitFailed
	}
	return exitOK
}

// liveBus reads the principals' credentials: each USER.json a NATS CLI context, each USER.creds a
// credentials file, resolved as plan and apply resolve theirs, with the server and TLS of the
// flags. A file naming no principal of the catalogue is refused: it would prove nothing.
func liveBus(conn *connectFlags, plan *compiler.Plan, dir string) (*verify.Live, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("--credentials: %w", err)
	}
	conn.fromEnvironment()
	live := &verify.Live{As: map[string][]nats.Option{}}
	for _, e := range entries {
		name, settings := e.Name(), conn.Settings
		user, isContext := strings.CutSuffix(name, ".json")
		if isContext {
			settings.Context = filepath.Join(dir, name)
		} else if u, isCreds := strings.CutSuffix(name, ".creds"); isCreds {
			if _, err := os.Stat(filepath.Join(dir, u+".json")); err == nil {
				continue // its context, which names it, says the rest
			}
			user, settings.Creds = u, filepath.Join(dir, name)
		} else {
			continue
		}
		if plan.User(user) == nil {
			return nil, fmt.Errorf("--credentials: %s names %s, who is no principal of this catalogue; name each file USER.json or USER.creds", filepath.Join(dir, name), user)
		}
		c, err := wire.Resolve("verify", settings, plan)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", filepath.Join(dir, name), err)
		}
		if live.URL == "" {
			live.URL = c.Endpoint.URL
		}
		live.As[user] = c.Endpoint.Options
	}
	if len(live.As) == 0 {
		return nil, fmt.Errorf("--credentials: %s holds no USER.json or USER.creds of this catalogue's principals", dir)
	}
	return live, nil
}
