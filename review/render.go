package review

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/output"
	"github.com/meshc-dev/meshc/lint"
)

// Review is everything a change does to a bus running its base: the streams and consumers, the
// users and their grants, an isolated mesh's accounts, and what it breaks.
type Review struct {
	Changes  change.Changes
	Users    []compiler.UserChange
	Accounts []compiler.AccountChange
	Breaks   []lint.Break
}

// Review compares the head with the base as a bus running the base would see it. With prune,
// the base's objects the head no longer has are shown as deletes.
func (c *Comparison) Review(prune bool) Review {
	// The breaking rules read the same diff and user comparison the review shows: computed once.
	compared := &lint.Compared{
		Changes: change.Diff(change.Applied(c.Base.Plan), c.Head.Plan, change.DiffOptions{Prune: prune}),
		Users:   compiler.CompareUsers(c.Base.Plan, c.Head.Plan),
	}
	breaks := c.breaks(compared)
	return Review{
		Changes: compared.Changes,
		// After the breaks: they read the grants' sources as compiled, and these are rewritten.
		Users:    c.shownUsers(compared.Users),
		Accounts: compiler.CompareAccounts(c.Base.Plan, c.Head.Plan),
		Breaks:   breaks,
	}
}

// Empty reports whether the change does nothing a reviewer needs to see.
func (r Review) Empty() bool {
	return r.Changes.Empty() && len(r.Users) == 0 && len(r.Accounts) == 0 && len(r.Breaks) == 0
}

// Write renders the review: the change set as change renders it, then who may now do what and
// what the change breaks, in the same format. JSON is one document: the change set's, with
// "users", "accounts" and "breaks" added.
func (r Review) Write(w io.Writer, f output.Format) error {
	if f == output.JSON {
		return writeJSON(w, r.Changes, r.Users, r.Accounts, r.Breaks)
	}
	if err := change.Render(w, r.Changes, f); err != nil {
		return err
	}
	if f == output.Markdown {
		return writeMarkdown(w, r.Users, r.Accounts, r.Breaks)
	}
	return writeText(w, r.Users, r.Accounts, r.Breaks)
}

func userSummary(ucs []compiler.UserChange) string {
	added, removed, changed, widening := 0, 0, 0, 0
	for _, uc := range ucs {
		switch {
		case uc.Added:
			added++
		case uc.Removed:
			removed++
		default:
			changed++
		}
		if slices.ContainsFunc(uc.Gained, func(g compiler.GrantChange) bool { return len(g.Widening) > 0 }) {
			widening++
		}
	}
	return fmt.Sprintf("%d users added, %d removed, %d with changed permissions, %d widened", added, removed, changed, widening)
}

func breakSummary(bs []lint.Break) string {
	approved := 0
	for _, b := range bs {
		if b.Approval != nil {
			approved++
		}
	}
	return fmt.Sprintf("%d breaking changes, %d of them approved", len(bs), approved)
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

func userNote(uc compiler.UserChange) string {
	switch {
	case uc.Added:
		return fmt.Sprintf(" (%s, new)", uc.Kind)
	case uc.Removed:
		return fmt.Sprintf(" (%s, removed)", uc.Kind)
	}
	return fmt.Sprintf(" (%s)", uc.Kind)
}

// declared is a grant change's declarations, "file:line:col what; …".
func declared(g compiler.GrantChange) string {
	var out []string
	for _, x := range g.Because {
		out = append(out, x.Source.String()+" "+x.Because)
	}
	return strings.Join(out, "; ")
}

// accountSummary counts what a change does to an isolated mesh's accounts.
func accountSummary(acs []compiler.AccountChange) string {
	added, removed, changed := 0, 0, 0
	for _, ac := range acs {
		switch {
		case ac.Added:
			added++
		case ac.Removed:
			removed++
		default:
			changed++
		}
	}
	return fmt.Sprintf("%d accounts added, %d removed, %d with changed exports or imports", added, removed, changed)
}

func writeText(w io.Writer, ucs []compiler.UserChange, acs []compiler.AccountChange, bs []lint.Break) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\nUsers and permissions: %s.\n", userSummary(ucs))
	for _, uc := range ucs {
		fmt.Fprintf(&b, "\n%3s user %s%s\n", mark(uc.Added, uc.Removed), uc.User, userNote(uc))
		for _, side := range []struct {
			mark string
			gs   []compiler.GrantChange
		}{{"+", uc.Gained}, {"-", uc.Lost}} {
			for _, g := range side.gs {
				fmt.Fprintf(&b, "      %s %s %s   (%s)\n", side.mark, g.Action, g.Subject, declared(g))
				if len(g.Widening) > 0 {
					fmt.Fprintf(&b, "        widens: %s\n", strings.Join(g.Widening, ", "))
				}
			}
		}
	}
	if len(acs) > 0 {
		fmt.Fprintf(&b, "\nAccounts, exports and imports: %s.\n", accountSummary(acs))
		for _, ac := range acs {
			fmt.Fprintf(&b, "\n%3s account %s\n", mark(ac.Added, ac.Removed), ac.Account)
			for _, l := range ac.Gained {
				fmt.Fprintf(&b, "      + %s\n", l)
			}
			for _, l := range ac.Lost {
				fmt.Fprintf(&b, "      - %s\n", l)
			}
		}
	}
	fmt.Fprintf(&b, "\nWhat this change breaks: %s.\n", breakSummary(bs))
	if len(bs) > 0 {
		b.WriteString("\n")
	}
	for _, x := range lint.BreakFindings(bs) {
		fmt.Fprintf(&b, "  %s\n", x)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeMarkdown(w io.Writer, ucs []compiler.UserChange, acs []compiler.AccountChange, bs []lint.Break) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\n### Users and permissions\n\n**%s**\n", userSummary(ucs))
	if len(ucs) > 0 {
		b.WriteString("\n| | user | may | subject | declared by |\n| --- | --- | --- | --- | --- |\n")
		for _, uc := range ucs {
			for _, side := range []struct {
				mark string
				gs   []compiler.GrantChange
			}{{"+", uc.Gained}, {"−", uc.Lost}} {
				for _, g := range side.gs {
					subject := "`" + mdCode(g.Subject) + "`"
					if len(g.Widening) > 0 {
						subject += " **widens: " + mdText(strings.Join(g.Widening, ", ")) + "**"
					}
					var decl []string
					for _, x := range g.Because {
						decl = append(decl, "`"+mdCode(x.Source.String())+"` "+mdText(x.Because))
					}
					fmt.Fprintf(&b, "| `%s` | `%s`%s | %s %s | %s | %s |\n", mark(uc.Added, uc.Removed), mdCode(uc.User), mdText(userNote(uc)),
						side.mark, g.Action, subject, strings.Join(decl, "<br>"))
				}
			}
		}
	}
	if len(acs) > 0 {
		fmt.Fprintf(&b, "\n### Accounts, exports and imports\n\n**%s**\n", accountSummary(acs))
		b.WriteString("\n| | account | change |\n| --- | --- | --- |\n")
		for _, ac := range acs {
			for _, side := range []struct {
				mark  string
				lines []string
			}{{"+", ac.Gained}, {"−", ac.Lost}} {
				for _, l := range side.lines {
					fmt.Fprintf(&b, "| `%s` | `%s` | %s `%s` |\n", mark(ac.Added, ac.Removed), mdCode(ac.Account), side.mark, mdCode(l))
				}
			}
		}
	}
	fmt.Fprintf(&b, "\n### What this change breaks\n\n**%s**\n", breakSummary(bs))
	if len(bs) > 0 {
		b.WriteString("\n| rule | severity | where | what | approved |\n| --- | --- | --- | --- | --- |\n")
		for _, x := range bs {
			sev, approved := x.Severity.String(), ""
			if x.Approval != nil {
				sev = "info"
				approved = fmt.Sprintf("`%s`: %s", mdCode(x.Approval.Pos.String()), mdText(x.Approval.Reason.Value))
			}
			fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s | %s |\n", x.Rule, sev, mdCode(x.Pos.String()), mdText(x.Message), approved)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdText keeps text from breaking the table cell it sits in.
func mdText(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// mdCode is a value for inside backticks: a backtick cannot be escaped there.
func mdCode(s string) string { return strings.ReplaceAll(mdText(s), "`", "'") }

// jsonBreak is one break in plan's JSON.
type jsonBreak struct {
	Rule     string              `json:"rule"`
	Severity catalogue.Severity  `json:"severity"`
	Pos      catalogue.Pos       `json:"pos"`
	On       string              `json:"on"`
	Message  string              `json:"message"`
	Related  []catalogue.Related `json:"related,omitempty"`
	Approved *jsonApproval       `json:"approved,omitempty"`
}

type jsonApproval struct {
	Pos    catalogue.Pos `json:"pos"`
	Reason string        `json:"reason"`
}

// writeJSON writes apply's JSON document with keys added, "users", "accounts" and "breaks" (the
// shape only ever gains fields): apply's keys first in its own order, then these.
func writeJSON(w io.Writer, cs change.Changes, ucs []compiler.UserChange, acs []compiler.AccountChange, bs []lint.Break) error {
	var doc bytes.Buffer
	if err := change.Render(&doc, cs, output.JSON); err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(doc.Bytes(), &fields); err != nil {
		return err
	}
	if ucs == nil {
		ucs = []compiler.UserChange{}
	}
	for i := range ucs {
		if ucs[i].Gained == nil {
			ucs[i].Gained = []compiler.GrantChange{}
		}
		if ucs[i].Lost == nil {
			ucs[i].Lost = []compiler.GrantChange{}
		}
	}
	jb := []jsonBreak{}
	for _, x := range bs {
		j := jsonBreak{Rule: x.Rule, Severity: x.Severity, Pos: x.Pos, On: x.On, Message: x.Message, Related: x.Related}
		if x.Approval != nil {
			j.Severity = catalogue.Info
			j.Approved = &jsonApproval{Pos: x.Approval.Pos, Reason: x.Approval.Reason.Value}
		}
		jb = append(jb, j)
	}
	var err error
	if fields["users"], err = marshal(ucs); err != nil {
		return err
	}
	if fields["breaks"], err = marshal(jb); err != nil {
		return err
	}
	if acs == nil {
		acs = []compiler.AccountChange{}
	}
	if fields["accounts"], err = marshal(acs); err != nil {
		return err
	}
	order := []string{"version", "summary", "changes", "notes", "not_managed"}
	for k := range fields {
		if !slices.Contains(order, k) && k != "users" && k != "breaks" && k != "accounts" {
			order = append(order, k)
		}
	}
	slices.Sort(order[5:])
	order = append(order, "users", "accounts", "breaks")
	var out bytes.Buffer
	out.WriteString("{")
	first := true
	for _, k := range order {
		v, ok := fields[k]
		if !ok {
			continue
		}
		if !first {
			out.WriteString(",")
		}
		first = false
		key, _ := json.Marshal(k)
		out.Write(key)
		out.WriteString(":")
		out.Write(v)
	}
	out.WriteString("}")
	// Indent drops the whitespace apply's indented fields came with, and indents the whole anew.
	var indented bytes.Buffer
	if err := json.Indent(&indented, out.Bytes(), "", "  "); err != nil {
		return err
	}
	indented.WriteString("\n")
	_, err = w.Write(indented.Bytes())
	return err
}

func marshal(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	// Subjects hold `>`: written as themselves.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(b.Bytes()), nil
}
