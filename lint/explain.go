package lint

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// configuring says how a catalogue may change what a rule reports.
func configuring(r *Rule) string {
	switch {
	case slices.Contains(breakRules, r):
		return "A break made on purpose is approved in mesh.yaml, one at a time and with its reason: " +
			"`approve: [{rule: " + r.ID + ", on: <what breaks>, reason: <why it is wanted>}]`; it is then reported as info."
	case r.Firm:
		return "It cannot be turned off, lowered or ignored: its finding means the plan meshc would write is wrong."
	}
	return "Set it for the catalogue in mesh.yaml — `lint: {rules: {" + r.ID + ": off}}` (or info, warning, error) — " +
		"or silence one finding with `# meshc:ignore " + r.ID + " REASON` on the line above it, or after it on its line."
}

// Explain writes what `meshc explain RULE` prints: what the rule catches, why it exists, how a
// catalogue may change it, and its example, broken and fixed.
func Explain(w io.Writer, r *Rule) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s\n\n", r.ID, r.Severity, r.Summary)
	fmt.Fprintf(&b, "Why: %s\n\n%s\n", r.Why, configuring(r))
	e, err := ExampleOf(r)
	if err != nil {
		return err
	}
	if e.Base != "" {
		fmt.Fprintf(&b, "\nThe catalogue before the change (--against):\n\n%s", indent(e.Base))
	}
	if e.Before != "" {
		fmt.Fprintf(&b, "\nFires on:\n\n%s\nFixed:\n\n%s", indent(e.Before), indent(e.After))
	} else {
		b.WriteString("\nNo catalogue whose names are valid makes it fire: it guards the compiler's own derivation.\n")
	}
	fmt.Fprintf(&b, "\nMore: %s#%s\n", RulesDoc, r.ID)
	_, err = io.WriteString(w, b.String())
	return err
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n    ") + "\n"
}

// RulesPage writes docs/rules.md: every rule, as Explain says it, in markdown, with a section
// per rule whose anchor is the rule id (SARIF's helpUri points at it).
func RulesPage(w io.Writer) error {
	var b strings.Builder
	b.WriteString("<!-- Generated from lint.Rules by `go test ./lint -run TestRulesPage -update-docs`; edit the rules, not this file. -->\n")
	b.WriteString("# meshc's rules\n\n")
	b.WriteString("Every check `meshc lint` makes, with why it exists and a catalogue that fires it beside the same\n")
	b.WriteString("catalogue fixed (each example is linted by the tests, so it is what lint does). `meshc explain RULE`\n")
	b.WriteString("prints the same in a terminal. Examples are written as txtar archives: `-- path --` starts a file.\n\n")
	b.WriteString("| rule | severity | catches |\n| --- | --- | --- |\n")
	for _, r := range Rules {
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s |\n", r.ID, r.ID, r.Severity, strings.ReplaceAll(r.Summary, "|", `\|`))
	}
	for _, r := range Rules {
		fmt.Fprintf(&b, "\n## %s\n\n**%s** — %s\n\n%s\n\n%s\n", r.ID, r.Severity, r.Summary, r.Why, configuring(r))
		e, err := ExampleOf(r)
		if err != nil {
			return err
		}
		if e.Base != "" {
			fmt.Fprintf(&b, "\nThe catalogue before the change (`--against`):\n\n```\n%s```\n", e.Base)
		}
		if e.Before != "" {
			fmt.Fprintf(&b, "\nFires on:\n\n```\n%s```\n\nFixed:\n\n```\n%s```\n", e.Before, e.After)
		} else {
			b.WriteString("\nNo catalogue whose names are valid makes it fire: it guards the compiler's own derivation.\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
