package catalogue

import (
	"cmp"
	"fmt"
	"slices"
)

// Pos is a place in a catalogue file. File is slash-separated and relative to the catalogue's
// directory, so findings read the same on every machine. Line and Col are 1-based; 0 means
// unknown, and String falls back the way go/token does rather than printing a false column.
type Pos struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
	Col  int    `json:"column,omitempty"`
}

func (p Pos) String() string {
	switch {
	case p.File == "":
		return "-"
	case p.Line == 0:
		return p.File
	case p.Col == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Compare orders positions by file, then line, then column.
func (p Pos) Compare(q Pos) int {
	return cmp.Or(cmp.Compare(p.File, q.File), cmp.Compare(p.Line, q.Line), cmp.Compare(p.Col, q.Col))
}

// Severity says how much a finding matters. Only errors fail `meshc lint`.
type Severity int

const (
	Info Severity = iota
	Warning
	Error
)

func (s Severity) String() string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	}
	return "info"
}

// MarshalText makes a severity read as its word in JSON.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Related is another place a finding involves: the first declarer of a duplicated seat, say.
type Related struct {
	Pos     Pos    `json:"pos"`
	Message string `json:"message"`
}

// Finding is one thing wrong (or worth knowing) about a catalogue. Rule is a stable id from the
// rule table in package lint; Message says what to do, not only what is wrong.
type Finding struct {
	Pos      Pos       `json:"pos"`
	Rule     string    `json:"rule"`
	Severity Severity  `json:"severity"`
	Message  string    `json:"message"`
	Related  []Related `json:"related,omitempty"`
}

func (f Finding) String() string {
	return fmt.Sprintf("%s: %s: %s: %s", f.Pos, f.Severity, f.Rule, f.Message)
}

// Findings is a set of findings; Sorted returns them in a stable, diffable order.
type Findings []Finding

// Sorted orders findings by position, then rule, then message, and drops exact duplicates, so
// the same catalogue always reports the same lines in the same order.
func (fs Findings) Sorted() Findings {
	out := slices.Clone(fs)
	slices.SortFunc(out, func(a, b Finding) int {
		return cmp.Or(a.Pos.Compare(b.Pos), cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Message, b.Message))
	})
	return slices.CompactFunc(out, func(a, b Finding) bool {
		return a.Pos == b.Pos && a.Rule == b.Rule && a.Message == b.Message
	})
}

// HasErrors reports whether any finding is an error.
func (fs Findings) HasErrors() bool {
	return slices.ContainsFunc(fs, func(f Finding) bool { return f.Severity == Error })
}

// Count returns how many findings have the given severity.
func (fs Findings) Count(s Severity) int {
	n := 0
	for _, f := range fs {
		if f.Severity == s {
			n++
		}
	}
	return n
}

// Rule is one check, as a value declared beside the code that reports it: its id, how much it
// matters, what it catches and why it exists. A finding is made from its rule (At), so no call
// site types an id or decides a severity. The table of every rule (lint.Rules) drives `meshc
// lint --list`, the README's rule table and the SARIF rule metadata.
type Rule struct {
	// ID is stable: pre-commit configurations and code-scanning history refer to it.
	ID       string
	Severity Severity
	// Summary says what the rule catches, in a line.
	Summary string
	// Why is the failure the rule prevents: the reason survives the next person who wants to
	// delete the rule.
	Why string
}

// At makes a finding of this rule at pos.
func (r *Rule) At(pos Pos, format string, args ...any) Finding {
	return Finding{Pos: pos, Rule: r.ID, Severity: r.Severity, Message: fmt.Sprintf(format, args...)}
}
