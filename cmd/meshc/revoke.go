package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/meshc-dev/meshc/catalogue"
)

const revokeHelp = `Usage: meshc revoke [--dir DIR] USER...

Revokes bus users: removes what credentials.yaml records for each (a hash, an nkey, or with
'auth: operator' the public key of the user's signing key), every other line left as it was.
The bus refuses the user once it has the change: with 'auth: operator', 'meshc apply' pushes the
user's account without its key, and the server closes every connection that key signed, at once
and with no reload; otherwise 'meshc emit' and 'meshc apply --accounts … --reload' drop it from
the accounts file. 'meshc mint USER' admits the user again, with new credentials.

Exit status:
  0  revoked (or nothing was recorded)
  2  meshc could not run: a bad flag, DIR is not a catalogue, credentials.yaml cannot be written
`

func runRevoke(inv *invocation, args []string) int {
	stderr := inv.stderr
	fs := flag.NewFlagSet("revoke", flag.ContinueOnError)
	fs.Usage = func() { io.WriteString(fs.Output(), revokeHelp) }
	dir := fs.String("dir", ".", "the catalogue `DIR`")
	users, exit, done := parseArgs(fs, args, inv)
	if done {
		return exit
	}
	if len(users) == 0 {
		fmt.Fprintf(stderr, "meshc revoke: name the users to revoke; 'meshc help revoke' says more\n")
		return exitCantRun
	}
	edit, err := catalogue.EditCredentials(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "meshc revoke: %v\n", err)
		return exitCantRun
	}
	defer edit.Close()
	removed, err := edit.Remove(users)
	if err != nil {
		fmt.Fprintf(stderr, "meshc revoke: %v\n", err)
		return exitCantRun
	}
	fmt.Fprintf(stderr, "meshc revoke: removed %d of %d user(s) from %s; `meshc emit` and `meshc apply` take it to the bus\n", len(removed), len(users), catalogue.CredentialsFile)
	return exitOK
}
