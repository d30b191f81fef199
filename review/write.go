package review

import (
	"fmt"
	"io"
	"strings"

	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/internal/output"
	"github.com/meshc-dev/meshc/internal/safetext"
)

// Write renders the review: the change set as change renders it, then who may now read what,
// who may now do what, the accounts, and what the change breaks, in the same format and with
// the same counts. JSON is one document (Document). Whatever came from the catalogue — a path,
// a name, a reason — is made safe for a CI log and a terminal as lint makes it (safetext).
func (r Review) Write(w io.Writer, f output.Format) error {
	if f == output.JSON {
		return output.WriteJSON(w, r.Document())
	}
	if err := change.Render(w, r.Changes, f); err != nil {
		return err
	}
	var b strings.Builder
	for _, s := range r.sections() {
		if !s.shown() {
			continue
		}
		if f == output.Markdown {
			writeMarkdown(&b, s)
		} else {
			writeText(&b, s)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeText writes a section as a heading that counts it, then its lines, each made one safe
// line: a layout's own characters are safe, so escaping the line escapes each value in it.
func writeText(b *strings.Builder, s section) {
	fmt.Fprintf(b, "\n%s: %s.\n", s.title, s.counted)
	for _, l := range s.text() {
		b.WriteString(safetext.Line(l))
		b.WriteString("\n")
	}
}

// writeMarkdown writes a section as a heading, its count in bold, and a table for each group of
// rows that has any.
func writeMarkdown(b *strings.Builder, s section) {
	fmt.Fprintf(b, "\n### %s\n\n**%s**\n", s.title, mdText(s.counted))
	for _, t := range s.tables {
		if len(t.rows) == 0 {
			continue
		}
		b.WriteString("\n|")
		for _, h := range t.header {
			if h != "" {
				b.WriteString(" " + h)
			}
			b.WriteString(" |")
		}
		b.WriteString("\n|" + strings.Repeat(" --- |", len(t.header)) + "\n")
		for _, r := range t.rows {
			if r.cells == nil {
				continue
			}
			b.WriteString("|")
			for _, c := range r.cells {
				b.WriteString(" ")
				for _, x := range c {
					switch x.kind {
					case code:
						b.WriteString("`" + mdCode(x.s) + "`")
					case strong:
						b.WriteString("**" + mdText(x.s) + "**")
					case br:
						b.WriteString("<br>")
					default:
						b.WriteString(mdText(x.s))
					}
				}
				b.WriteString(" |")
			}
			b.WriteString("\n")
		}
	}
}

// mdText keeps text from breaking the table cell it sits in, the terminal it is read on or the
// CI log it passes through.
func mdText(s string) string {
	s = strings.ReplaceAll(safetext.Line(s), "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// mdCode is a value for inside backticks: a backtick cannot be escaped there.
func mdCode(s string) string { return strings.ReplaceAll(mdText(s), "`", "'") }
