package catalogue

import (
	"cmp"
	"fmt"
	"path/filepath"
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

// Under shows a position relative to the catalogue as a path from where meshc was run, the
// catalogue being at dir: a terminal or an editor opens it as printed, and GitHub resolves
// annotations and SARIF from the repository's root, where CI runs `meshc lint path/to/catalogue`.
func (p Pos) Under(dir string) Pos {
	if p.File != "" && filepath.Clean(dir) != "." {
		p.File = filepath.ToSlash(filepath.Join(dir, filepath.FromSlash(p.File)))
	}
	return p
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
	// Suppressed is set when the catalogue silenced the finding: it no longer counts or prints,
	// and SARIF keeps it as a suppression so code scanning shows who silenced what and why.
	Suppressed *Suppression `json:"suppressed,omitempty"`
}

// Suppression says how a finding was silenced: InSource by a `# meshc:ignore` comment, External
// by mesh.yaml's lint.rules (SARIF's two kinds), with the reason given.
type Suppression struct {
	InSource bool
	Reason   string
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

// HasErrors reports whether any finding that is not suppressed is an error.
// Under is the findings with every position, related ones too, shown from where meshc was run
// (Pos.Under).
func (fs Findings) Under(dir string) Findings {
	if filepath.Clean(dir) == "." {
		return fs
	}
	out := make(Findings, len(fs))
	for i, f := range fs {
		f.Pos = f.Pos.Under(dir)
		if f.Related != nil {
			related := make([]Related, len(f.Related))
			for j, r := range f.Related {
				r.Pos = r.Pos.Under(dir)
				related[j] = r
			}
			f.Related = related
		}
		out[i] = f
	}
	return out
}

func (fs Findings) HasErrors() bool {
	return slices.ContainsFunc(fs, func(f Finding) bool { return f.Severity == Error && f.Suppressed == nil })
}

// Count returns how many findings that are not suppressed have the given severity.
func (fs Findings) Count(s Severity) int {
	n := 0
	for _, f := range fs {
		if f.Severity == s && f.Suppressed == nil {
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
	// Firm is set on a rule whose finding means the plan meshc would write is wrong, not only
	// doubtful (a broken file, a name the server refuses, two users with one name): such a
	// finding is never turned off, lowered or ignored by the catalogue.
	Firm bool
}

// At makes a finding of this rule at pos.
func (r *Rule) At(pos Pos, format string, args ...any) Finding {
	return Finding{Pos: pos, Rule: r.ID, Severity: r.Severity, Message: fmt.Sprintf(format, args...)}
}
