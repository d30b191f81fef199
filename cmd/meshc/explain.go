package main

import (
	"flag"
	"fmt"

	"github.com/meshc-dev/meshc/internal/suggest"
	"github.com/meshc-dev/meshc/lint"
)

var explainCommand = command{
	name:    "explain",
	summary: "say why a lint rule exists, how to silence it, and a before/after fix",
	usage: `Usage: meshc explain RULE
`,
	help: `Prints what a rule of meshc lint catches, why it exists, how a catalogue may turn it off or
change its severity (mesh.yaml's lint.rules, a # meshc:ignore comment), and a catalogue that
fires it beside the same catalogue fixed. 'meshc lint --list' names the rules; the same text is
in docs/rules.md.
`,
	run:  runExplain,
	args: []string{"@rules"},
}

func runExplain(inv *invocation, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	rest, exit, done := parseArgs(fs, args, inv)
	if done {
		return exit
	}
	if len(rest) != 1 {
		fmt.Fprintf(stderr, "meshc explain: name one rule; 'meshc lint --list' lists them\n")
		return exitCantRun
	}
	r := lint.Lookup(rest[0])
	if r == nil {
		ids := make([]string, len(lint.Rules))
		for i, r := range lint.Rules {
			ids[i] = r.ID
		}
		hint := ""
		if near := suggest.Closest(rest[0], ids); near != "" {
			hint = " (did you mean " + near + "?)"
		}
		fmt.Fprintf(stderr, "meshc explain: no rule %q%s; 'meshc lint --list' lists them\n", rest[0], hint)
		return exitCantRun
	}
	if err := lint.Explain(stdout, r); err != nil {
		fmt.Fprintf(stderr, "meshc explain: %v\n", err)
		return exitCantRun
	}
	return exitOK
}
