package review

import (
	"fmt"
	"strings"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/lint"
)

// The review as text and markdown show it: sections of rows, made here in one walk of the
// review, so what each row says — its sign, its words, the declarations behind it — is decided
// once and the two formats are only two layouts of it (write.go). A new kind of change is one
// more row where it belongs: both formats show it.

// section is one heading of the review: what it is about, the sentence that counts it, and its
// rows, grouped as the markdown's tables group them.
type section struct {
	title, counted string
	// always: the section is shown when it has no rows ("0 breaking changes, …").
	always bool
	// lines are what the text format shows under the heading, when they differ from the rows'
	// own (the breaks: one list of findings sorted together, where markdown has two tables).
	lines  []string
	tables []table
}

// table is rows under one header in markdown.
type table struct {
	header []string
	rows   []row
}

// row is one line of the review: text shows its lines (a grant's first, then what widens it and
// its subjects), markdown its cells under the table's header.
type row struct {
	text  []string
	cells []cell
}

// cell is a markdown table cell, written span by span.
type cell []span

// span is part of a cell: words, a code span, words in bold, or a line break.
type span struct {
	s    string
	kind spanKind
}

type spanKind int

const (
	words spanKind = iota
	code
	strong
	br
)

func plain(s string) cell { return cell{{s: s}} }
func coded(s string) cell { return cell{{s: s, kind: code}} }

// text is the section's text lines: its own when it has them, else its rows'.
func (s section) text() []string {
	if s.lines != nil {
		return s.lines
	}
	var out []string
	for _, t := range s.tables {
		for _, r := range t.rows {
			out = append(out, r.text...)
		}
	}
	return out
}

// shown reports whether the section is shown: always, or when it has rows.
func (s section) shown() bool {
	for _, t := range s.tables {
		if len(t.rows) > 0 {
			return true
		}
	}
	return s.always
}

// sections is the review after its change set, in the order a reviewer reads it.
func (r Review) sections() []section {
	n := r.Count()
	return []section{r.reads(n), r.users(n), r.accounts(), r.keys(), r.breaks(n)}
}

// plural is "1 user", "2 users".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// mark is how a user or an account changed: + added, - removed, ~ changed.
func mark(added, removed bool) string {
	switch {
	case added:
		return "+"
	case removed:
		return "-"
	}
	return "~"
}

// minus is markdown's sign of a loss: a minus sign, which a table cell shows as one.
const minus = "−"

// reads: who may now read what, each entry behind a consumer's filters with its manifest line.
func (r Review) reads(n Counts) section {
	s := section{title: "Who reads what", counted: fmt.Sprintf("%s gained, %d lost", plural(n.ReadsGained, "event read", "events read"), n.ReadsLost)}
	t := table{header: []string{"", "who may now read what", "declared by", "consumer"}}
	for _, rc := range r.Reads {
		for _, side := range []struct {
			sign, mdSign, may string
			gs                []compiler.Grant
		}{{"+", "+", " may now ", rc.Gained}, {"-", minus, " may no longer ", rc.Lost}} {
			for _, g := range side.gs {
				says := rc.Reader + side.may + g.Means
				t.rows = append(t.rows, row{
					text: []string{fmt.Sprintf("  %s %s   (%s %s; consumer %s)", side.sign, says, g.Source, g.Because, rc.Consumer)},
					cells: []cell{coded(side.mdSign), plain(says),
						{{s: g.Source.String(), kind: code}, {s: " " + g.Because}}, coded(rc.Consumer)},
				})
			}
		}
	}
	if len(t.rows) > 0 {
		// Under the heading's sentence, apart from it.
		t.rows[0].text = append([]string{""}, t.rows[0].text...)
	}
	s.tables = []table{t}
	return s
}

// users: every user added, removed or changed, a row per meaning of what it gains or loses.
func (r Review) users(n Counts) section {
	s := section{title: "Users and permissions", always: true,
		counted: fmt.Sprintf("%s added, %d removed, %d with changed permissions, %d widened, %d re-minted",
			plural(n.UsersAdded, "user", "users"), n.UsersRemoved, n.UsersChanged, n.UsersWidened, n.UsersReminted)}
	t := table{header: []string{"", "user", "may", "declared by", "subjects"}}
	for _, uc := range r.Users {
		note := fmt.Sprintf(" (%s)", uc.Kind)
		switch {
		case uc.Added:
			note = fmt.Sprintf(" (%s, new)", uc.Kind)
		case uc.Removed:
			note = fmt.Sprintf(" (%s, removed)", uc.Kind)
		}
		m := mark(uc.Added, uc.Removed)
		header := []string{"", fmt.Sprintf("%3s user %s%s", m, uc.User, note)}
		if c := uc.Credential; c != nil {
			// Whoever minted the new credential (or holds the other user's) logs in as this user.
			means := c.Means(uc.User)
			t.rows = append(t.rows, row{text: append(header, fmt.Sprintf("      ~ %s %s   (%s)", uc.User, means, catalogue.CredentialsFile)),
				cells: []cell{coded("~"), {{s: uc.User, kind: code}, {s: note}}, {{s: means, kind: strong}}, coded(catalogue.CredentialsFile), plain("")}})
			header = nil
		}
		for _, g := range uc.Meanings() {
			sign, mdSign, says := "+", "+", g.Means
			if !g.Gained {
				sign, mdSign, says = "-", minus, "no longer "+g.Means
			}
			declared := make([]string, len(g.Declared))
			var by cell
			for i, d := range g.Declared {
				declared[i] = d.Source.String() + " " + d.Because
				if i > 0 {
					by = append(by, span{kind: br})
				}
				by = append(by, span{s: d.Source.String(), kind: code}, span{s: " " + d.Because})
			}
			may := plain(mdSign + " " + says)
			text := append(header, fmt.Sprintf("      %s may %s   (%s)", sign, says, strings.Join(declared, "; ")))
			header = nil
			if len(g.Widening) > 0 {
				widens := strings.Join(g.Widening, ", ")
				text = append(text, "        widens: "+widens)
				may = append(may, span{s: " "}, span{s: "widens: " + widens, kind: strong})
			}
			text = append(text, "        subjects: "+strings.Join(g.Subjects, ", "))
			var subjects cell
			for i, x := range g.Subjects {
				if i > 0 {
					subjects = append(subjects, span{kind: br})
				}
				subjects = append(subjects, span{s: x, kind: code})
			}
			t.rows = append(t.rows, row{text: text,
				cells: []cell{coded(m), {{s: uc.User, kind: code}, {s: note}}, may, by, subjects}})
		}
		if header != nil {
			// A user with nothing gained or lost (one added with no grants) still has its line.
			t.rows = append(t.rows, row{text: header})
		}
	}
	s.tables = []table{t}
	return s
}

// accounts: an isolated mesh's accounts (every account in operator mode), a row per export,
// import, user or key gained or lost.
func (r Review) accounts() section {
	added, removed, changed := 0, 0, 0
	for _, ac := range r.Accounts {
		switch {
		case ac.Added:
			added++
		case ac.Removed:
			removed++
		default:
			changed++
		}
	}
	s := section{title: "Accounts, exports and imports",
		counted: fmt.Sprintf("%s added, %d removed, %d with changed exports or imports", plural(added, "account", "accounts"), removed, changed)}
	t := table{header: []string{"", "account", "change"}}
	for _, ac := range r.Accounts {
		m := mark(ac.Added, ac.Removed)
		header := []string{"", fmt.Sprintf("%3s account %s", m, ac.Account)}
		for _, side := range []struct {
			sign, mdSign string
			lines        []string
		}{{"+", "+", ac.Gained}, {"-", minus, ac.Lost}} {
			for _, l := range side.lines {
				t.rows = append(t.rows, row{text: append(header, fmt.Sprintf("      %s %s", side.sign, l)),
					cells: []cell{coded(m), coded(ac.Account), {{s: side.mdSign + " "}, {s: l, kind: code}}}})
				header = nil
			}
		}
		if header != nil {
			t.rows = append(t.rows, row{text: header})
		}
	}
	s.tables = []table{t}
	return s
}

// keys: keys.yaml's keys the change moves, each with what it does to a bus running the base.
func (r Review) keys() section {
	s := section{title: "Keys", counted: fmt.Sprintf("%s changed in %s", plural(len(r.Keys), "key", "keys"), catalogue.KeysFile)}
	t := table{header: []string{"key", "was", "now", "what it means"}}
	for i, k := range r.Keys {
		text := []string{fmt.Sprintf("  ~ %s: %s → %s: %s", k.What, k.Was, k.Now, k.Means)}
		if i == 0 {
			text = append([]string{""}, text...)
		}
		t.rows = append(t.rows, row{text: text, cells: []cell{plain(k.What), coded(k.Was), coded(k.Now), plain(k.Means)}})
	}
	s.tables = []table{t}
	return s
}

// breaks: what the change breaks, each at its reported severity with the approval that accepts
// it, and the approvals that accept nothing. Text lists them as lint does, one list of findings;
// markdown has a table of each.
func (r Review) breaks(n Counts) section {
	counted := fmt.Sprintf("%s, %d of them approved", plural(n.Breaks, "breaking change", "breaking changes"), n.Approved)
	if n.Unmatched > 0 {
		counted += fmt.Sprintf("; %s matching no break", plural(n.Unmatched, "approval", "approvals"))
	}
	s := section{title: "What this change breaks", counted: counted, always: true, lines: []string{}}
	if findings := r.Findings(); len(findings) > 0 {
		s.lines = append(s.lines, "")
		for _, x := range findings {
			s.lines = append(s.lines, "  "+x.String())
		}
	}
	breaks := table{header: []string{"rule", "severity", "where", "what", "approved"}}
	for _, x := range r.Breaks {
		breaks.rows = append(breaks.rows, row{cells: []cell{coded(x.Rule), plain(x.ReportedSeverity().String()), coded(x.Pos.String()), plain(x.Message), approved(x)}})
	}
	unmatched := table{header: []string{"rule", "severity", "where", "what"}}
	for _, x := range r.Unmatched {
		unmatched.rows = append(unmatched.rows, row{cells: []cell{coded(x.Rule), plain(x.Severity.String()), coded(x.Pos.String()), plain(x.Message)}})
	}
	s.tables = []table{breaks, unmatched}
	return s
}

// approved is where a break was approved and why, or nothing.
func approved(b lint.Break) cell {
	if b.Approval == nil {
		return plain("")
	}
	return cell{{s: b.Approval.Pos.String(), kind: code}, {s: ": " + b.Approval.Reason.Value}}
}
