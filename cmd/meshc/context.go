package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/jsm.go/natscontext"
	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"golang.org/x/crypto/bcrypt"

	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/atomicfile"
	"github.com/meshc-dev/meshc/internal/suggest"
)

var contextCommand = command{
	name:    "context",
	summary: "write a NATS CLI context for one bus user of a real bus: its credential and inbox prefix, checked",
	usage: `Usage: meshc context USER --server URL [--dir DIR] (--stdin | --creds FILE | --nkey FILE)
                     [--name NAME | --out FILE] [--js-domain DOMAIN] [--select] [--no-check]
`,
	help: `Writes a NATS CLI context for one bus user of the catalogue in DIR, on a real bus: the server, the
user's credential, and the inbox prefix its grant names (_INBOX.<user>), which every request of
a restricted user needs and a context written by hand usually lacks (a serving user,
serve.<machine>.<module>, has no inbox: it only answers, and its context names none). 'nats --context NAME …' and
'meshc … --context NAME' then connect as that user. (meshc up writes one per user of its own bus.)

The credential is what 'meshc mint USER' gave, piped in with --stdin so it never reaches a
terminal or a shell's history:

    meshc mint --dir cat mod.box.indexer | meshc context --dir cat mod.box.indexer --stdin --server nats://bus:4222

  auth: password  the password (the line 'USER PASSWORD' mint prints), kept in the context
  auth: nkey      the seed (the line 'USER SEED'), written to NAME.nk beside the context
  auth: operator  the credentials file mint prints, written to NAME.creds beside the context
--creds FILE or --nkey FILE names a file the user already has instead. Before writing, the
credential is checked against what credentials.yaml records for USER (the hash, the public key,
the signing key), so a context for the wrong credential is never written.

Then meshc connects with the context it wrote, as the user, and proves the server takes the
credential and lets the user receive in its inbox (a serving user: takes the credential, since
subscribing its tools would take a share of live calls); --no-check skips that (a bus not reachable
from here, or one that does not have the user yet).

`,
	exits: `Exit status:
  0  written (and, without --no-check, the user connected)
  1  the credential is not the one credentials.yaml records, or the bus refused it
  2  meshc could not run: a bad flag, USER is not a bus user, DIR is not a catalogue
`,
	run:  runContext,
	args: []string{"@users"},
}

func runContext(inv *invocation, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	fs := flag.NewFlagSet("context", flag.ContinueOnError)
	dir := catalogueFlag(fs)
	server := fs.String("server", "", "the bus's `URL` (default: $NATS_URL)")
	fromStdin := fs.Bool("stdin", false, "read the credential from standard input, as meshc mint prints it")
	creds := fs.String("creds", "", "a credentials `FILE` (auth: operator)")
	nkeyFile := fs.String("nkey", "", "an nkey seed `FILE` (auth: nkey)")
	name := fs.String("name", "", "the context's `NAME` (default: USER@MESH), written where the NATS CLI keeps contexts ($XDG_CONFIG_HOME/nats/context, else ~/.config/nats/context)")
	out := fs.String("out", "", "write the context to `FILE` (a .json path) instead of by name")
	domain := fs.String("js-domain", "", "the JetStream `DOMAIN` the bus runs")
	sel := fs.Bool("select", false, "make it the NATS CLI's selected context")
	noCheck := fs.Bool("no-check", false, "write it without connecting")
	rest, exit, done := parseArgs(fs, args, inv)
	if done {
		return exit
	}
	if len(rest) != 1 {
		fmt.Fprintf(stderr, "meshc context: name one bus user; 'meshc help context' says more\n")
		return exitCantRun
	}
	user := rest[0]
	if given := countTrue(*fromStdin, *creds != "", *nkeyFile != ""); given != 1 {
		fmt.Fprintf(stderr, "meshc context: give the user's credential once: --stdin (pipe `meshc mint %s` into it), --creds FILE or --nkey FILE\n", user)
		return exitCantRun
	}
	if *name != "" && *out != "" {
		fmt.Fprintf(stderr, "meshc context: --name and --out both say where the context goes; give one\n")
		return exitCantRun
	}
	if *server == "" {
		*server = os.Getenv("NATS_URL")
	}
	if *server == "" {
		fmt.Fprintf(stderr, "meshc context: no server given: --server URL (or NATS_URL)\n")
		return exitCantRun
	}
	plan, code := compileCatalogue("context", *dir, stderr)
	if plan == nil {
		return code
	}
	u := plan.User(user)
	if u == nil {
		names := make([]string, 0, len(plan.Users))
		for _, u := range plan.Users {
			names = append(names, u.Name)
		}
		hint := ""
		if near := suggest.Closest(user, names); near != "" {
			hint = "; did you mean " + near + "?"
		}
		fmt.Fprintf(stderr, "meshc context: %s is not a bus user of this catalogue%s (golden/permissions.md lists them)\n", user, hint)
		return exitCantRun
	}

	// Where the context goes, and the files beside it.
	path := *out
	if path == "" {
		if *name == "" {
			*name = user + "@" + plan.Account
		}
		if err := natscontext.ValidateName(*name); err != nil {
			fmt.Fprintf(stderr, "meshc context: --name: %v\n", err)
			return exitCantRun
		}
		p, err := natscontext.ContextPath(*name)
		if err != nil {
			fmt.Fprintf(stderr, "meshc context: where the NATS CLI keeps contexts: %v\n", err)
			return exitCantRun
		}
		path = p
	}
	path, _ = filepath.Abs(path)
	if !strings.HasSuffix(path, ".json") {
		fmt.Fprintf(stderr, "meshc context: --out %s: a context file's name ends in .json, which is how the NATS CLI and meshc tell a path from a name\n", path)
		return exitCantRun
	}
	side := strings.TrimSuffix(path, ".json")

	ctx := map[string]string{
		"description": fmt.Sprintf("meshc context: %s on the %s mesh", user, plan.Account),
		"url":         *server,
	}
	replies := "no inbox: it only answers the calls it receives"
	if u.HasInbox() {
		ctx["inbox_prefix"] = compiler.InboxPrefix(user)
		replies = "replies in " + compiler.InboxPrefix(user) + ".>"
	}
	if *domain != "" {
		ctx["jetstream_domain"] = *domain
	}
	var secret struct {
		file string // a file to write beside the context
		data []byte
	}
	switch {
	case *creds != "":
		data, err := os.ReadFile(*creds)
		if err != nil {
			fmt.Fprintf(stderr, "meshc context: --creds: %v\n", err)
			return exitCantRun
		}
		if why := credentialMismatch(plan, u, "", data); why != "" {
			fmt.Fprintf(stderr, "meshc context: %s\n", why)
			return exitFailed
		}
		ctx["creds"], _ = filepath.Abs(*creds)
	case *nkeyFile != "":
		data, err := os.ReadFile(*nkeyFile)
		if err != nil {
			fmt.Fprintf(stderr, "meshc context: --nkey: %v\n", err)
			return exitCantRun
		}
		if why := credentialMismatch(plan, u, strings.TrimSpace(string(data)), nil); why != "" {
			fmt.Fprintf(stderr, "meshc context: %s\n", why)
			return exitFailed
		}
		ctx["nkey"], _ = filepath.Abs(*nkeyFile)
	default:
		data, err := io.ReadAll(io.LimitReader(inv.stdin, 1<<20))
		if err != nil {
			fmt.Fprintf(stderr, "meshc context: reading the credential from standard input: %v\n", err)
			return exitCantRun
		}
		if plan.Operator != nil {
			if why := credentialMismatch(plan, u, "", data); why != "" {
				fmt.Fprintf(stderr, "meshc context: %s\n", why)
				return exitFailed
			}
			secret.file, secret.data, ctx["creds"] = side+".creds", data, side+".creds"
			break
		}
		value, ok := mintedSecret(data, user)
		if !ok {
			fmt.Fprintf(stderr, "meshc context: standard input holds no credential for %s: pipe in the line `meshc mint %s` prints (USER SECRET)\n", user, user)
			return exitFailed
		}
		if why := credentialMismatch(plan, u, value, nil); why != "" {
			fmt.Fprintf(stderr, "meshc context: %s\n", why)
			return exitFailed
		}
		if plan.NKeys {
			secret.file, secret.data, ctx["nkey"] = side+".nk", []byte(value+"\n"), side+".nk"
		} else {
			ctx["user"], ctx["password"] = user, value
		}
	}

	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		fmt.Fprintf(stderr, "meshc context: %v\n", err)
		return exitCantRun
	}
	if secret.file != "" {
		if err := atomicfile.Write(secret.file, secret.data, 0o600); err != nil {
			fmt.Fprintf(stderr, "meshc context: %v\n", err)
			return exitCantRun
		}
	}
	data, _ := json.MarshalIndent(ctx, "", "  ")
	if err := atomicfile.Write(path, append(data, '\n'), 0o600); err != nil {
		fmt.Fprintf(stderr, "meshc context: %v\n", err)
		return exitCantRun
	}
	ref := path
	if *name != "" {
		ref = *name
	}
	fmt.Fprintf(stderr, "meshc context: wrote %s (%s): %s at %s, %s\n", ref, path, user, *server, replies)
	if *sel && *name != "" {
		if err := natscontext.SelectContext(*name); err != nil {
			fmt.Fprintf(stderr, "meshc context: selecting %s: %v\n", *name, err)
			return exitCantRun
		}
	}
	if !*noCheck {
		if err := checkContext(path, u); err != nil {
			fmt.Fprintf(stderr, "meshc context: the context is written, but connecting with it as %s failed: %v\n", user, err)
			return exitFailed
		}
		if u.HasInbox() {
			fmt.Fprintf(stderr, "meshc context: connected as %s: the bus takes its credential and lets it receive in its inbox\n", user)
		} else {
			fmt.Fprintf(stderr, "meshc context: connected as %s: the bus takes its credential\n", user)
		}
	}
	fmt.Fprintln(stdout, ref)
	return exitOK
}

// mintedSecret reads what `meshc mint USER` printed: the line "USER SECRET", or the secret alone.
func mintedSecret(data []byte, user string) (string, bool) {
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if u, v, ok := strings.Cut(line, " "); ok && u == user && v != "" {
			return strings.TrimSpace(v), true
		}
		if line != "" && !strings.Contains(line, " ") {
			return line, true
		}
	}
	return "", false
}

// credentialMismatch says why a credential is not the one credentials.yaml records for u, ""
// when it is: a password against its bcrypt hash, a seed against its public key, a credentials
// file's JWT against the signing key recorded (and the user it names).
func credentialMismatch(plan *compiler.Plan, u *compiler.User, secret string, creds []byte) string {
	recorded := u.Credential()
	if recorded == "" {
		return fmt.Sprintf("credentials.yaml records nothing for %s: run `meshc mint %s` and pipe what it prints into this command", u.Name, u.Name)
	}
	switch {
	case plan.Operator != nil:
		token, err := jwt.ParseDecoratedJWT(creds)
		if err != nil {
			return fmt.Sprintf("that is not a credentials file (%v): give what `meshc mint %s` wrote", err, u.Name)
		}
		claims, err := jwt.DecodeUserClaims(token)
		if err != nil {
			return fmt.Sprintf("the credentials file's JWT does not decode (%v)", err)
		}
		if claims.Issuer != recorded {
			return fmt.Sprintf("the credentials file is signed by %s, not by the key credentials.yaml records for %s: it is another user's, or an older mint's", claims.Issuer, u.Name)
		}
		if claims.Name != u.Name {
			return fmt.Sprintf("the credentials file is %s's, not %s's", claims.Name, u.Name)
		}
	case plan.NKeys:
		kp, err := nkeys.FromSeed([]byte(secret))
		if err != nil {
			return fmt.Sprintf("that is not an nkey seed (%v): give what `meshc mint %s` printed", err, u.Name)
		}
		public, _ := kp.PublicKey()
		if public != recorded {
			return fmt.Sprintf("that seed's public key is not the one credentials.yaml records for %s: it is another user's, or an older mint's", u.Name)
		}
	default:
		if bcrypt.CompareHashAndPassword([]byte(recorded), []byte(secret)) != nil {
			return fmt.Sprintf("that password is not the one credentials.yaml records for %s: it is another user's, or an older mint's (`meshc mint %s` mints a new one)", u.Name, u.Name)
		}
	}
	return ""
}

// checkContext connects with the context file as natscli would read it and subscribes in the
// user's inbox: the server refuses a credential it does not have at connect, and an inbox the
// grants do not name as a violation before the flush's answer. A serving user, which has no
// inbox, is checked by its connection alone: its only grants are its module's tools, and a
// subscription to one would take a share of the live calls.
func checkContext(path string, u *compiler.User) error {
	nctx, err := natscontext.NewFromFile(path)
	if err != nil {
		return err
	}
	violations := make(chan error, 1)
	nc, err := nctx.Connect(nats.Timeout(5*time.Second), nats.NoReconnect(), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case violations <- err:
		default:
		}
	}))
	if err != nil {
		return err
	}
	defer nc.Close()
	if u.HasInbox() {
		if _, err := nc.SubscribeSync(compiler.InboxPrefix(u.Name) + ".meshc-context"); err != nil {
			return err
		}
	}
	if err := nc.FlushTimeout(5 * time.Second); err != nil {
		return err
	}
	// The client records a violation as the connection's last error while reading, before the
	// flush's PONG; the error handler runs a moment later on a goroutine of its own, so it alone
	// can miss one (docs/nats.md, "Denials arrive asynchronously").
	if err := nc.LastError(); errors.Is(err, nats.ErrPermissionViolation) {
		return err
	}
	select {
	case err := <-violations:
		return err
	default:
	}
	return nil
}

// countTrue counts the conditions that hold.
func countTrue(conds ...bool) int {
	return len(slices.DeleteFunc(conds, func(b bool) bool { return !b }))
}
