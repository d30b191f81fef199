package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/operator"
)

const operatorHelp = `Usage: meshc operator init --secrets DIR [--dir CATALOGUE] [--resolver-dir PATH] [--resolver-interval D]

Makes the operator of a mesh with 'auth: operator' (mesh.yaml), once: the keys its servers trust,
and a key for every account. The public keys are recorded in CATALOGUE/keys.yaml, to commit. The
secrets go into DIR, which must be outside the catalogue, mode 0700, and are never written again:

  operator.nk    the operator's identity seed: keep it offline; only a change of the operator's
                 signing key needs it
  signing.nk     the operator's signing key seed: it signs every account. Give it to CI as the
                 secret MESHC_OPERATOR_SIGNING_KEY (meshc apply reads it, or --operator-key FILE)
  system.creds   the system user's credentials: it pushes the accounts. Give it to CI as the
                 secret MESHC_SYSTEM_CREDS (or --system-creds FILE)
  operator.conf  no secret: the part of every server's configuration that trusts the operator
                 and keeps the accounts pushed to it (a full resolver in --resolver-dir, deletes
                 allowed, the system account preloaded). Include it in each server's file.

Then 'meshc mint --missing --out CREDS' issues every user's credentials, and 'meshc apply'
pushes the accounts: no accounts file on the servers' hosts, and no reload.

A bus that ran from an accounts file keeps its streams under the mesh's account name; in operator
mode they are under the account's key (keys.yaml). Before its first start in operator mode, with
the server stopped, move STORE/jetstream/<mesh> to STORE/jetstream/<the mesh account's key>;
meshc apply refuses to create the mesh's streams on a resolver new to the mesh until then (or
--new-bus says the bus is new).

Flags:
  --secrets DIR          where the secrets and operator.conf are written (outside the catalogue)
  --dir CATALOGUE        the catalogue (default: the current directory)
  --resolver-dir PATH    where each server keeps the accounts (default: jwt, from its working
                         directory)
  --resolver-interval D  how often a cluster's servers catch up with each other (default 1m)

Exit status:
  0  made
  1  the catalogue has errors
  2  meshc could not run: a bad flag, an operator already recorded, a secret already there
`

func runOperator(inv *invocation, args []string) int {
	stderr := inv.stderr
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	fs.Usage = func() { io.WriteString(fs.Output(), operatorHelp) }
	dir := fs.String("dir", ".", "the catalogue `DIR`")
	secrets := fs.String("secrets", "", "write the secrets into `DIR`, outside the catalogue")
	resolverDir := fs.String("resolver-dir", "jwt", "where each server keeps the accounts")
	interval := fs.Duration("resolver-interval", time.Minute, "how often a cluster's servers catch up")
	rest, exit, done := parseArgs(fs, args, inv)
	if done {
		return exit
	}
	if len(rest) != 1 || rest[0] != "init" || *secrets == "" {
		fmt.Fprintf(stderr, "meshc operator: say `meshc operator init --secrets DIR`; 'meshc help operator' says more\n")
		return exitCantRun
	}
	plan, code := compileCatalogue("operator", *dir, stderr)
	if plan == nil {
		return code
	}
	if plan.Operator == nil {
		fmt.Fprintf(stderr, "meshc operator: %s does not say `auth: operator`: set it first\n", catalogue.MeshFile)
		return exitCantRun
	}
	paths, err := operator.Init(*dir, *secrets, plan, operator.ResolverOptions{Dir: *resolverDir, Interval: *interval})
	if err != nil {
		fmt.Fprintf(stderr, "meshc operator: %v\n", err)
		return exitCantRun
	}
	for _, p := range paths {
		fmt.Fprintf(stderr, "meshc operator: wrote %s\n", p)
	}
	fmt.Fprintf(stderr, "meshc operator: recorded the operator and %d account key(s) in %s; keep %s offline, give %s and %s to CI as secrets, include %s in each server's configuration, then `meshc mint --missing --out CREDS`\n",
		len(plan.OperatorAccounts()), catalogue.KeysFile, operator.IdentityFile, operator.SigningFile, operator.SystemFile, operator.ServerConfFile)
	return exitOK
}
