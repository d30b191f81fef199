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

// Review is everything a change does to a bus running its base: the streams and consumers, who
// reads what, the users and their grants, an isolated mesh's accounts, and what it breaks.
type Review struct {
	Changes  change.Changes
	Reads    []compiler.ReadChange
	Users    []compiler.UserChange
	Accounts []compiler.AccountChange
	// Keys are keys.yaml's keys the change moves (operator mode).
	Keys   []compiler.KeyChange
	Breaks []lint.Break
	// Unmatched are the approvals in mesh.yaml that approve none of the breaks.
	Unmatched catalogue.Findings
}

// Review compares the head with the base as a bus running the base would see it. With prune,
// the base's objects the head no longer has are shown as deletes.
func (c *Comparison) Review(prune bool) Review {
	// The breaking rules read the same diff and user comparison the review shows: computed once.
	compared := &lint.Compared{
		Changes: change.Diff(change.Applied(c.Base.Plan), c.Head.Plan, change.DiffOptions{Prune: prune}),
		Users:   compiler.CompareUsers(c.Base.Plan, c.Head.Plan),
	}
	breaks, unmatched := c.breaks(compared)
	return Review{
		Changes: compared.Changes,
		Reads:   c.Reads(),
		// After the breaks: they read the grants' sources as compiled, and these are rewritten.
		Users:     c.shownUsers(compared.Users),
		Accounts:  compiler.CompareAccounts(c.Base.Plan, c.Head.Plan),
		Keys:      compiler.CompareKeys(c.Base.Plan, c.Head.Plan),
		Breaks:    breaks,
		Unmatched: unmatched,
	}
}

// Empty reports whether the change does nothing a reviewer needs to see.
func (r Review) Empty() bool {
	return r.Changes.Empty() && len(r.Reads) == 0 && len(r.Users) == 0 && len(r.Accounts) == 0 && len(r.Keys) == 0 && len(r.Breaks) == 0 && len(r.Unmatched) == 0
}

// Findings are what lint --against adds to the catalogue's own findings: the breaks (an
// approved one as info) and the approvals that approve nothing.
func (r Review) Findings() catalogue.Findings {
	return append(lint.BreakFindings(r.Breaks), r.Unmatched...).Sorted()
}

// Write renders the review: the change set as change renders it, then who may now read what,
// who may now do what and what the change breaks, in the same format and with the same counts.
// JSON is one document: the change set's, with "review", "reads", "users", "accounts" and
// "breaks" added.
func (r Review) Write(w io.Writer, f output.Format) error {
	if f == output.JSON {
		return writeJSON(w, r)
	}
	if err := change.Render(w, r.Changes, f); err != nil {
		return err
	}
	if f == output.Markdown {
		return writeMarkdown(w, r)
	}
	return writeText(w, r)
}

// Counts are the review's numbers, one source for the summary lines of every format.
type Counts struct {
	UsersAdded   int `json:"users_added"`
	UsersRemoved int `json:"users_removed"`
	UsersChanged int `json:"users_changed"`
	// UsersWidened are exactly the users the widening rule reports.
	UsersWidened int `json:"users_widened"`
	// UsersReminted are the users whose recorded credential moved (minted again, or another's).
	UsersReminted int `json:"users_reminted"`
	Keys          int `json:"keys_changed"`
	ReadsGained   int `json:"reads_gained"`
	ReadsLost     int `json:"reads_lost"`
	Accounts      int `json:"accounts_changed"`
	Breaks        int `json:"breaks"`
	Approved      int `json:"approved"`
	// Unmatched approvals approve nothing in this change.
	Unmatched int `json:"unmatched_approvals"`
}

// Count counts the review.
func (r Review) Count() Counts {
	var n Counts
	for _, uc := range r.Users {
		switch {
		case uc.Added:
			n.UsersAdded++
		case uc.Removed:
			n.UsersRemoved++
		default:
			n.UsersChanged++
		}
		if uc.Widened() {
			n.UsersWidened++
		}
		if uc.Credential != nil && !uc.Added {
			n.UsersReminted++
		}
	}
	n.Keys = len(r.Keys)
	for _, rc := range r.Reads {
		n.ReadsGained += len(rc.Gained)
		n.ReadsLost += len(rc.Lost)
	}
	n.Accounts = len(r.Accounts)
	for _, b := range r.Breaks {
		n.Breaks++
		if b.Approval != nil {
			n.Approved++
		}
	}
	n.Unmatched = len(r.Unmatched)
	return n
}

// plural is "1 user", "2 users".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func (n Counts) users() string {
	return fmt.Sprintf("%s added, %d removed, %d with changed permissions, %d widened, %d re-minted",
		plural(n.UsersAdded, "user", "users"), n.UsersRemoved, n.UsersChanged, n.UsersWidened, n.UsersReminted)
}

func (n Counts) reads() string {
	return fmt.Sprintf("%s gained, %d lost", plural(n.ReadsGained, "event read", "events read"), n.ReadsLost)
}

func (n Counts) breaks() string {
	s := fmt.Sprintf("%s, %d of them approved", plural(n.Breaks, "breaking change", "breaking changes"), n.Approved)
	if n.Unmatched > 0 {
		s += fmt.Sprintf("; %s matching no break", plural(n.Unmatched, "approval", "approvals"))
	}
	return s
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

// meaning is the grants of one user gained (or lost) that mean one thing — a consumer's pull,
// info and two ack subjects are one "read its own consumer" — with every declaration behind
// them, the subjects, and what makes them wide.
type meaning struct {
	sign, means string
	declared    []declaration
	subjects    []string
	widening    []string
}

// declaration is where a grant is declared, and why it follows from there: kept apart, since a
// path may hold a space.
type declaration struct{ at, because string }

// meanings groups a user's grant changes by what they mean, in order of first appearance.
func meanings(uc compiler.UserChange) []meaning {
	var out []meaning
	for _, side := range []struct {
		sign string
		gs   []compiler.GrantChange
	}{{"+", uc.Gained}, {"-", uc.Lost}} {
		at := map[string]int{}
		for _, g := range side.gs {
			i, ok := at[g.Means()]
			if !ok {
				i = len(out)
				at[g.Means()] = i
				out = append(out, meaning{sign: side.sign, means: g.Means()})
			}
			m := &out[i]
			for _, x := range g.Because {
				if d := (declaration{x.Source.String(), x.Because}); !slices.Contains(m.declared, d) {
					m.declared = append(m.declared, d)
				}
			}
			m.subjects = append(m.subjects, g.Action+" "+g.Subject)
			for _, w := range g.Widening {
				if !slices.Contains(m.widening, w) {
					m.widening = append(m.widening, w)
				}
			}
		}
	}
	return out
}

// readLine is one read gained or lost, in words: "photos may now read registry's image.pushed".
func readLine(rc compiler.ReadChange, g compiler.Grant, gained bool) string {
	if gained {
		return rc.Reader + " may now " + g.Means
	}
	return rc.Reader + " may no longer " + g.Means
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
	return fmt.Sprintf("%s added, %d removed, %d with changed exports or imports", plural(added, "account", "accounts"), removed, changed)
}

func writeText(w io.Writer, r Review) error {
	var b strings.Builder
	n := r.Count()
	if len(r.Reads) > 0 {
		fmt.Fprintf(&b, "\nWho reads what: %s.\n\n", n.reads())
		for _, rc := range r.Reads {
			for _, side := range []struct {
				sign   string
				gained bool
				gs     []compiler.Grant
			}{{"+", true, rc.Gained}, {"-", false, rc.Lost}} {
				for _, g := range side.gs {
					fmt.Fprintf(&b, "  %s %s   (%s %s; consumer %s)\n", side.sign, readLine(rc, g, side.gained), g.Source, g.Because, rc.Consumer)
				}
			}
		}
	}
	fmt.Fprintf(&b, "\nUsers and permissions: %s.\n", n.users())
	for _, uc := range r.Users {
		fmt.Fprintf(&b, "\n%3s user %s%s\n", mark(uc.Added, uc.Removed), uc.User, userNote(uc))
		if c := uc.Credential; c != nil {
			fmt.Fprintf(&b, "      ~ %s %s   (%s)\n", uc.User, c.Means(uc.User), catalogue.CredentialsFile)
		}
		for _, m := range meanings(uc) {
			verb := "may"
			if m.sign == "-" {
				verb = "may no longer"
			}
			declared := make([]string, len(m.declared))
			for i, d := range m.declared {
				declared[i] = d.at + " " + d.because
			}
			fmt.Fprintf(&b, "      %s %s %s   (%s)\n", m.sign, verb, m.means, strings.Join(declared, "; "))
			if len(m.widening) > 0 {
				fmt.Fprintf(&b, "        widens: %s\n", strings.Join(m.widening, ", "))
			}
			fmt.Fprintf(&b, "        subjects: %s\n", strings.Join(m.subjects, ", "))
		}
	}
	if len(r.Accounts) > 0 {
		fmt.Fprintf(&b, "\nAccounts, exports and imports: %s.\n", accountSummary(r.Accounts))
		for _, ac := range r.Accounts {
			fmt.Fprintf(&b, "\n%3s account %s\n", mark(ac.Added, ac.Removed), ac.Account)
			for _, l := range ac.Gained {
				fmt.Fprintf(&b, "      + %s\n", l)
			}
			for _, l := range ac.Lost {
				fmt.Fprintf(&b, "      - %s\n", l)
			}
		}
	}
	if len(r.Keys) > 0 {
		fmt.Fprintf(&b, "\nKeys (%s): %s changed.\n\n", catalogue.KeysFile, plural(len(r.Keys), "key", "keys"))
		for _, k := range r.Keys {
			fmt.Fprintf(&b, "  ~ %s: %s → %s: %s\n", k.What, k.Was, k.Now, k.Means)
		}
	}
	fmt.Fprintf(&b, "\nWhat this change breaks: %s.\n", n.breaks())
	if len(r.Breaks)+len(r.Unmatched) > 0 {
		b.WriteString("\n")
	}
	for _, x := range r.Findings() {
		fmt.Fprintf(&b, "  %s\n", x)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeMarkdown(w io.Writer, r Review) error {
	var b strings.Builder
	n := r.Count()
	if len(r.Reads) > 0 {
		fmt.Fprintf(&b, "\n### Who reads what\n\n**%s**\n", n.reads())
		b.WriteString("\n| | who may now read what | declared by | consumer |\n| --- | --- | --- | --- |\n")
		for _, rc := range r.Reads {
			for _, side := range []struct {
				sign   string
				gained bool
				gs     []compiler.Grant
			}{{"+", true, rc.Gained}, {"−", false, rc.Lost}} {
				for _, g := range side.gs {
					fmt.Fprintf(&b, "| `%s` | %s | `%s` %s | `%s` |\n", side.sign, mdText(readLine(rc, g, side.gained)),
						mdCode(g.Source.String()), mdText(g.Because), mdCode(rc.Consumer))
				}
			}
		}
	}
	fmt.Fprintf(&b, "\n### Users and permissions\n\n**%s**\n", n.users())
	if len(r.Users) > 0 {
		b.WriteString("\n| | user | may | declared by | subjects |\n| --- | --- | --- | --- | --- |\n")
		for _, uc := range r.Users {
			if c := uc.Credential; c != nil {
				fmt.Fprintf(&b, "| `~` | `%s`%s | **%s** | `%s` | |\n", mdCode(uc.User), mdText(userNote(uc)), mdText(c.Means(uc.User)), catalogue.CredentialsFile)
			}
			for _, m := range meanings(uc) {
				may := m.sign + " " + mdText(m.means)
				if m.sign == "-" {
					may = "− no longer " + mdText(m.means)
				}
				if len(m.widening) > 0 {
					may += " **widens: " + mdText(strings.Join(m.widening, ", ")) + "**"
				}
				var decl, subjects []string
				for _, d := range m.declared {
					decl = append(decl, "`"+mdCode(d.at)+"` "+mdText(d.because))
				}
				for _, s := range m.subjects {
					subjects = append(subjects, "`"+mdCode(s)+"`")
				}
				fmt.Fprintf(&b, "| `%s` | `%s`%s | %s | %s | %s |\n", mark(uc.Added, uc.Removed), mdCode(uc.User), mdText(userNote(uc)),
					may, strings.Join(decl, "<br>"), strings.Join(subjects, "<br>"))
			}
		}
	}
	if len(r.Accounts) > 0 {
		fmt.Fprintf(&b, "\n### Accounts, exports and imports\n\n**%s**\n", accountSummary(r.Accounts))
		b.WriteString("\n| | account | change |\n| --- | --- | --- |\n")
		for _, ac := range r.Accounts {
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
	if len(r.Keys) > 0 {
		fmt.Fprintf(&b, "\n### Keys\n\n**%s changed in `%s`**\n\n| key | was | now | what it means |\n| --- | --- | --- | --- |\n", plural(len(r.Keys), "key", "keys"), catalogue.KeysFile)
		for _, k := range r.Keys {
			fmt.Fprintf(&b, "| %s | `%s` | `%s` | %s |\n", mdText(k.What), mdCode(k.Was), mdCode(k.Now), mdText(k.Means))
		}
	}
	fmt.Fprintf(&b, "\n### What this change breaks\n\n**%s**\n", n.breaks())
	if len(r.Breaks) > 0 {
		b.WriteString("\n| rule | severity | where | what | approved |\n| --- | --- | --- | --- | --- |\n")
		for _, x := range r.Breaks {
			sev, approved := x.Severity.String(), ""
			if x.Approval != nil {
				sev = "info"
				approved = fmt.Sprintf("`%s`: %s", mdCode(x.Approval.Pos.String()), mdText(x.Approval.Reason.Value))
			}
			fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s | %s |\n", x.Rule, sev, mdCode(x.Pos.String()), mdText(x.Message), approved)
		}
	}
	if len(r.Unmatched) > 0 {
		b.WriteString("\n| rule | severity | where | what |\n| --- | --- | --- | --- |\n")
		for _, x := range r.Unmatched {
			fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s |\n", x.Rule, x.Severity, mdCode(x.Pos.String()), mdText(x.Message))
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
	From     string              `json:"from,omitempty"`
	To       string              `json:"to,omitempty"`
	Message  string              `json:"message"`
	Related  []catalogue.Related `json:"related,omitempty"`
	Approved *jsonApproval       `json:"approved,omitempty"`
}

type jsonApproval struct {
	Pos    catalogue.Pos `json:"pos"`
	Reason string        `json:"reason"`
}

// writeJSON writes apply's JSON document with keys added, "review" (the counts every format's
// summary lines say), "reads", "users", "accounts" and "breaks" (the shape only ever gains
// fields): apply's keys first in its own order, then these.
func writeJSON(w io.Writer, r Review) error {
	var doc bytes.Buffer
	if err := change.Render(&doc, r.Changes, output.JSON); err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(doc.Bytes(), &fields); err != nil {
		return err
	}
	ucs := slices.Clone(r.Users)
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
	reads := r.Reads
	if reads == nil {
		reads = []compiler.ReadChange{}
	}
	jb := []jsonBreak{}
	for _, x := range r.Breaks {
		j := jsonBreak{Rule: x.Rule, Severity: x.Severity, Pos: x.Pos, On: x.On, From: x.From, To: x.To, Message: x.Message, Related: x.Related}
		if x.Approval != nil {
			j.Severity = catalogue.Info
			j.Approved = &jsonApproval{Pos: x.Approval.Pos, Reason: x.Approval.Reason.Value}
		}
		jb = append(jb, j)
	}
	acs := r.Accounts
	if acs == nil {
		acs = []compiler.AccountChange{}
	}
	keys := r.Keys
	if keys == nil {
		keys = []compiler.KeyChange{}
	}
	added := []struct {
		key   string
		value any
	}{{"review", r.Count()}, {"reads", reads}, {"users", ucs}, {"accounts", acs}, {"keys", keys}, {"breaks", jb}, {"unmatched_approvals", nonNil(r.Unmatched)}}
	var ours []string
	for _, a := range added {
		v, err := marshal(a.value)
		if err != nil {
			return err
		}
		fields[a.key] = v
		ours = append(ours, a.key)
	}
	order := []string{"version", "summary", "changes", "notes", "not_managed"}
	fixed := len(order)
	for k := range fields {
		if !slices.Contains(order, k) && !slices.Contains(ours, k) {
			order = append(order, k)
		}
	}
	slices.Sort(order[fixed:])
	order = append(order, ours...)
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
	_, err := w.Write(indented.Bytes())
	return err
}

func nonNil(fs catalogue.Findings) catalogue.Findings {
	if fs == nil {
		return catalogue.Findings{}
	}
	return fs
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
