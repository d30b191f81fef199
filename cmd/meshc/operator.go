package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/meshc-dev/meshc/lint"
	"github.com/meshc-dev/meshc/operator"
)

var operatorCommand = command{
	name:    "operator",
	summary: "make the operator of a mesh with auth: operator: its keys, and the servers' configuration",
	usage: `Usage: meshc operator init --secrets SECRETS [--dir DIR] [--resolver-dir PATH] [--resolver-interval DURATION]
`,
	help: `Makes the operator of a mesh with 'auth: operator', once: the keys its servers trust, and a key
for every account. The public keys go into DIR/keys.yaml, to commit; the secrets into
SECRETS (outside the catalogue, mode 0600, never overwritten):

  operator.nk    the operator's identity seed: keep it offline
  signing.nk     the signing key's seed, which signs every account: CI's MESHC_OPERATOR_SIGNING_KEY
  system.creds   the system user, which pushes the accounts: CI's MESHC_SYSTEM_CREDS
  operator.conf  no secret: include it in each server's configuration (the operator trusted, a
                 full resolver in --resolver-dir with deletes allowed, the system account)

Then 'meshc mint --missing --out CREDS' issues the users' credentials and 'meshc apply' pushes
the accounts. A bus that ran from an accounts file keeps its streams under STORE/jetstream/<mesh>;
operator mode looks under the mesh account's key: 'meshc apply' says how to move them.

`,
	exits: `Exit status: 0 made; 1 the catalogue has errors; 2 meshc could not run (a bad flag, an operator
already recorded, a secret already there).
`,
	run: runOperator,
}

func runOperator(inv *invocation, args []string) int {
	stderr := inv.stderr
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	dir := catalogueFlag(fs)
	secrets := fs.String("secrets", "", "where the secrets and operator.conf go: `SECRETS`, a directory outside the catalogue")
	resolverDir := fs.String("resolver-dir", "jwt", "where each server keeps the accounts: a `PATH` from its working directory")
	interval := fs.Duration("resolver-interval", time.Minute, "how often a cluster's servers catch up with each other")
	rest, exit, done := parseArgs(fs, args, inv)
	if done {
		return exit
	}
	if len(rest) != 1 || rest[0] != "init" || *secrets == "" {
		fmt.Fprintf(stderr, "meshc operator: say `meshc operator init --secrets DIR`; 'meshc help operator' says more\n")
		return exitCantRun
	}
	// Making the operator is the first step of switching a catalogue to auth: operator, whose
	// recorded passwords' hashes are then credential-invalid until mint replaces them: that error
	// is the switch's, not a reason to refuse its first step.
	plan, code := compileCatalogue("operator", *dir, stderr, lint.RuleCredentialInvalid)
	if plan == nil {
		return code
	}
	said, err := operator.Init(*dir, *secrets, plan, operator.ResolverOptions{Dir: *resolverDir, Interval: *interval})
	if err != nil {
		fmt.Fprintf(stderr, "meshc operator: %v\n", err)
		return exitCantRun
	}
	fmt.Fprintf(stderr, "meshc operator: %s\n", said)
	return exitOK
}
