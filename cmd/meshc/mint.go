package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/internal/suggest"
	"github.com/meshc-dev/meshc/lint"
	"github.com/meshc-dev/meshc/operator"
)

var mintCommand = command{
	name:    "mint",
	summary: "mint (or --revoke) passwords, nkeys or operator-mode credentials for bus users, recording only public halves",
	usage: `Usage: meshc mint [--dir DIR] [--out CREDS] USER...
       meshc mint [--dir DIR] [--out CREDS] --missing
       meshc mint [--dir DIR] --revoke USER...
`,
	help: `Mints a random password for each bus USER (mesh-controller, node.<node>, mod.<node>.<module>,
serve.<node>.<module>, enrol.<node>, person.<name>), records its bcrypt hash in DIR/credentials.yaml, and prints
'USER PASSWORD' on stdout, one line each. With 'auth: nkey' in mesh.yaml it mints an nkey
instead: credentials.yaml records the public key, and the line printed is 'USER SEED'. The
password is printed once and kept nowhere: hand it to whoever runs as that user now. Minting a
user again rotates its password.

With 'auth: operator' it issues each user's credentials file, printed (or with --out written to
CREDS/USER.creds, outside the catalogue), signed by a new key of the user's account whose public
key credentials.yaml records: minting again rotates it. --revoke removes USERs' records; the next
apply (in operator mode, with no reload) closes their connections.

credentials.yaml holds hashes only (written atomically, mode 0600 when new, every other line
left as it was; a file using anchors, aliases or flow style is refused rather than rewritten),
so it may be committed. Concurrent mints on one catalogue wait for each other. The passwords
are printed before their hashes are recorded: if stdout cannot be written, nothing is
recorded. The hashes are bcrypt at cost 6, on purpose: the server checks the hash on every
connect and for every connected client on every reload, and a 256-bit random password gains
nothing from a higher cost.

`,
	exits: `Exit status:
  0  minted (or nothing was missing)
  1  a USER is not a bus user of this catalogue, or the catalogue has errors (other than
     credential-invalid, which minting fixes)
  2  meshc could not run: a bad flag, DIR is not a catalogue, credentials.yaml cannot be written
`,
	run: runMint,
}

func runMint(inv *invocation, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	fs := flag.NewFlagSet("mint", flag.ContinueOnError)
	dir := catalogueFlag(fs)
	missing := fs.Bool("missing", false, "mint every user the catalogue derives that has no recorded hash, or whose recorded value is not what the mesh's auth records (a bcrypt hash left in a mesh switched to auth: nkey, or the reverse): switching auth is this command")
	out := fs.String("out", "", "with auth: operator, write each user's credentials into `CREDS`/USER.creds, a directory outside the catalogue")
	revoke := fs.Bool("revoke", false, "remove the USERs' records: revoke them")
	users, exit, done := parseArgs(fs, args, inv)
	if done {
		return exit
	}
	if *missing == (len(users) > 0) {
		fmt.Fprintf(stderr, "meshc mint: name the users to mint, or give --missing (not both); 'meshc help mint' says more\n")
		return exitCantRun
	}

	// Mint is how a credential that does not fit the mesh's auth is replaced: those errors are
	// what it fixes, not a reason to refuse.
	plan, code := compileCatalogue("mint", *dir, stderr, lint.RuleCredentialInvalid, lint.RuleCredentialDuplicate)
	if plan == nil {
		return code
	}
	known := make([]string, 0, len(plan.Users))
	for _, u := range plan.Users {
		known = append(known, u.Name)
	}
	// From here to the write, credentials.yaml is locked: a second mint waits rather than
	// reading a file this one is about to replace, and --missing sees what it recorded.
	creds, err := catalogue.EditCredentials(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "meshc mint: %v\n", err)
		return exitCantRun
	}
	defer creds.Close()
	defer sayUnclaimed(stderr, creds, plan)
	if *revoke {
		removed, err := creds.Remove(users)
		if err != nil {
			fmt.Fprintf(stderr, "meshc mint: %v\n", err)
			return exitCantRun
		}
		fmt.Fprintf(stderr, "meshc mint: revoked %d of %d user(s) in %s; `meshc emit` and `meshc apply` take it to the bus\n", len(removed), len(users), catalogue.CredentialsFile)
		return exitOK
	}
	if plan.Operator == nil && *out != "" {
		fmt.Fprintf(stderr, "meshc mint: --out writes credentials files, which only a mesh with auth: operator has; without it mint prints each secret\n")
		return exitCantRun
	}
	creds.Header = catalogue.CredentialsHeader(plan.NKeys)
	fits := func(v string) error { return catalogue.CredentialFits(plan.NKeys, v) }
	if plan.Operator != nil {
		creds.Header, fits = catalogue.OperatorHeader, catalogue.CredentialFitsOperator
	}
	if *missing {
		// Missing, or recorded in a form the mesh's auth does not take (hashes left from
		// before a switch to auth: nkey): switching auth is this one command.
		for _, u := range plan.Users {
			if (u.Credential() == "" && !creds.Recorded(u.Name)) || (u.Credential() != "" && fits(u.Credential()) != nil) {
				users = append(users, u.Name)
			}
		}
		if len(users) == 0 {
			fmt.Fprintf(stderr, "meshc mint: every bus user already has a recorded %s\n", recordedWhat(plan))
			if plan.Operator != nil {
				if _, err := operator.RecordAccountKeys(*dir, plan, goldenAccountKeys(*dir)); err != nil {
					fmt.Fprintf(stderr, "meshc mint: %v\n", err)
					return exitCantRun
				}
			}
			return exitOK
		}
	}
	slices.Sort(users)
	users = slices.Compact(users)
	for _, u := range users {
		if !slices.Contains(known, u) {
			hint := ""
			if near := suggest.Closest(u, known); near != "" {
				hint = fmt.Sprintf("; did you mean %s?", near)
			}
			fmt.Fprintf(stderr, "meshc mint: %s is not a bus user of this catalogue%s (users are derived: %s, node.<node>, mod.<node>.<module>, serve.<node>.<module>, enrol.<node>, person.<name>; golden/permissions.md lists them)\n",
				catalogue.Excerpt(u), hint, compiler.ControllerUser)
			return exitFailed
		}
	}

	if plan.Operator != nil {
		said, err := operator.Issue(creds, *dir, plan, users, *out, goldenAccountKeys(*dir), stdout)
		if err != nil {
			fmt.Fprintf(stderr, "meshc mint: %v\n", err)
			return exitCantRun
		}
		fmt.Fprintf(stderr, "meshc mint: %s\n", said)
		return exitOK
	}
	hashes := map[string]string{}
	var printed strings.Builder
	// With auth: nkey the secret is a seed and the record its public key.
	mintOne, secrets, records := catalogue.MintPassword, "passwords", "hash(es)"
	if plan.NKeys {
		mintOne, secrets, records = catalogue.MintNKey, "seeds", "public key(s)"
	}
	minted, err := catalogue.MintEach(len(users), mintOne)
	if err != nil {
		fmt.Fprintf(stderr, "meshc mint: minting: %v; nothing was printed or recorded, so mint again\n", err)
		return exitCantRun
	}
	for i, u := range users {
		hashes[u] = minted[i].Record
		fmt.Fprintf(&printed, "%s %s\n", u, minted[i].Secret)
	}
	// Printed before anything is recorded: a hash recorded for a password nobody saw (stdout a
	// full disk, a closed pipe) would replace a working credential with one nobody has. The
	// other order's failure — printed, then not recorded — is said, so the passwords are thrown
	// away rather than handed out.
	if _, err := io.WriteString(stdout, printed.String()); err != nil {
		fmt.Fprintf(stderr, "meshc mint: the %s could not be printed (%v), so nothing was recorded; mint again with stdout writable\n", secrets, err)
		return exitCantRun
	}
	if err := creds.Record(hashes); err != nil {
		fmt.Fprintf(stderr, "meshc mint: %v\nmeshc mint: the %s printed above were NOT recorded and will not work: discard them, fix the cause and mint again\n", err, secrets)
		return exitCantRun
	}
	fmt.Fprintf(stderr, "meshc mint: recorded %d %s in %s; run `meshc emit` so accounts.conf carries them\n",
		len(users), records, catalogue.CredentialsFile)
	return exitOK
}

// recordedWhat is what credentials.yaml records of a user under the mesh's auth.
func recordedWhat(plan *compiler.Plan) string {
	switch {
	case plan.Operator != nil:
		return "signing key"
	case plan.NKeys:
		return "nkey public key"
	}
	return "hash"
}

// goldenAccountKeys are the account keys the committed golden/claims.json records, by account
// name: what mint records for an account whose line keys.yaml lost, rather than a new key — an
// account's key is its identity, and the mesh's streams live under the mesh account's.
func goldenAccountKeys(dir string) map[string]string {
	data, err := os.ReadFile(filepath.Join(dir, catalogue.GoldenDir, emit.ClaimsFile))
	if err != nil {
		return nil
	}
	claims, err := emit.ReadClaims(data)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, ac := range claims {
		out[ac.Name] = ac.Subject
	}
	return out
}

// sayUnclaimed names the records of users the catalogue no longer derives, and the command that
// drops them: a machine or person removed from the inventory keeps its record until revoked, and
// after a switch of auth that record is one `meshc mint --missing` cannot replace. After a revoke
// it says only what is still left. It runs before the lock is released, so it reads the file as
// this mint left it.
func sayUnclaimed(w io.Writer, creds *catalogue.CredentialsEdit, plan *compiler.Plan) {
	var gone []string
	for _, u := range creds.Users() {
		if plan.User(u) == nil && creds.Recorded(u) {
			gone = append(gone, u)
		}
	}
	if len(gone) == 0 {
		return
	}
	fmt.Fprintf(w, "meshc mint: %s records %d user(s) the catalogue no longer has: %s; `meshc mint --revoke %s` drops them\n",
		catalogue.CredentialsFile, len(gone), strings.Join(gone, ", "), strings.Join(gone, " "))
}
