package main

import (
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/internal/output"
	"github.com/meshc-dev/meshc/lint"
	"github.com/meshc-dev/meshc/review"
)

var lintCommand = command{
	name:    "lint",
	summary: "check a catalogue and report what is wrong, with the fix",
	usage: `Usage: meshc lint [DIR] [--format FORMAT] [--against REF] [--list [-v]]
`,
	help: `Checks the catalogue in DIR (default: the current directory, which must hold mesh.yaml) and
reports every finding with its place (file:line:col), its rule, its severity and what to do
about it. Paths are printed as DIR/file, so they open from where meshc was run.

Flags that do not combine (--list with --against, sarif or github) are refused.

Flags may come before or after DIR.

`,
	exits: `Exit status:
  0  no error (warnings and info do not fail)
  1  at least one error
  2  meshc could not lint: a bad flag, or DIR is not a catalogue (no mesh.yaml) or cannot be read
`,
	run: runLint,
}

func runLint(inv *invocation, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	fs := flag.NewFlagSet("lint", flag.ContinueOnError)
	formatName := choice(fs, "format", "text", `text: one line per finding, related places indented below, then a count ("1 error, 0 warnings, 2 info"); nothing when clean. json: {"findings": [...], "summary": {...}}, a stable shape. sarif: SARIF 2.1.0, for code scanning (github/codeql-action/upload-sarif). github: GitHub Actions annotations on the pull request's diff.`, output.Names(lint.Formats...)...)
	list := fs.Bool("list", false, `print every rule (id, severity, what it catches) and exit; it reads no catalogue, so it takes no DIR. With --format json, the table as JSON: {"rules": [{"id", "severity", "summary", "why", "configurable", "help"}]}.`)
	verbose := fs.Bool("v", false, "with --list, also say why each rule exists")
	against := againstFlag(fs, ", and also report what the change breaks: replay (a consumer renamed starts over), retention (a stream keeps less, or is replaced), widening (a user gains a grant), contract (an event, tool, seat or kind of work is gone). A break approved in mesh.yaml's approve: list is reported as info.")
	rest, exit, done := parseArgs(fs, args, inv)
	if done {
		return exit
	}
	format, err := output.Parse(*formatName, lint.Formats...)
	if err != nil {
		fmt.Fprintf(stderr, "meshc lint: --format: %v\n", err)
		return exitCantRun
	}
	if !refuseCombos(fs, stderr,
		combo{flag: "list", notWith: []string{"against"}, why: "--list prints the rule table and reads no catalogue"},
		combo{flag: "v", needs: []string{"list"}, why: "it says why each rule exists in the rule table"},
	) {
		return exitCantRun
	}
	if len(rest) > 1 {
		return tooMany(fs, stderr, rest[1:])
	}
	if *list {
		if len(rest) > 0 {
			fmt.Fprintf(stderr, "meshc lint: --list prints the rule table and reads no catalogue: drop %s\n", rest[0])
			return exitCantRun
		}
		if format != output.Text && format != output.JSON {
			fmt.Fprintf(stderr, "meshc lint: --list prints the rule table as text or json, not %s (which report findings)\n", format)
			return exitCantRun
		}
		if format == output.JSON {
			err = lint.WriteRulesJSON(stdout)
		} else {
			err = listRules(stdout, *verbose)
		}
		if err != nil {
			fmt.Fprintf(stderr, "meshc lint: %v\n", err)
			return exitCantRun
		}
		return exitOK
	}
	dir := "."
	if len(rest) == 1 {
		dir = rest[0]
	}

	c, loaded, ok := loadCatalogue("lint", dir, stderr)
	if !ok {
		return exitCantRun
	}
	if *against == "" {
		// The findings alone: no plan to read, so none is finished (lint.Run).
		return writeFindings(stdout, stderr, format, lint.Run(c, loaded).Under(dir))
	}
	// The head as lint compiles it: review loads only the base.
	found, plan := lint.Check(c, loaded)
	base, err := review.Load(dir, *against, lint.Side{Index: catalogue.NewIndex(c), Plan: plan})
	if err != nil {
		fmt.Fprintf(stderr, "meshc lint: %v\n", err)
		return exitCantRun
	}
	breaks, unmatched := base.Breaks()
	return writeFindings(stdout, stderr, format, append(append(found.Under(dir), lint.BreakFindings(breaks)...), unmatched...))
}

// writeFindings writes lint's findings in format, and is lint's exit status: 1 with an error.
func writeFindings(stdout, stderr io.Writer, format output.Format, findings catalogue.Findings) int {
	if err := lint.Write(stdout, format, findings); err != nil {
		fmt.Fprintf(stderr, "meshc lint: writing %s: %v\n", format, err)
		return exitCantRun
	}
	if findings.HasErrors() {
		return exitFailed
	}
	return exitOK
}

// listRules prints the rule table, the same one that drives the SARIF rule metadata.
func listRules(w io.Writer, verbose bool) error {
	if verbose {
		for i, r := range lint.Rules {
			if i > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "%s (%s)\n\t%s\n\tWhy: %s\n", r.ID, r.Severity, r.Summary, r.Why)
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tSEVERITY\tCATCHES")
	for _, r := range lint.Rules {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.ID, r.Severity, r.Summary)
	}
	return tw.Flush()
}
