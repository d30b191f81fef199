package change

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/meshc-dev/meshc/internal/output"
	"github.com/meshc-dev/meshc/internal/safetext"
)

// Formats are how a change set is rendered: text for a terminal, json for a script, markdown for
// a pull request.
var Formats = []output.Format{output.Text, output.JSON, output.Markdown}

// Render writes the change set in the format. Rendering is separate from diffing so every
// format shows the same change set.
func Render(w io.Writer, cs Changes, f output.Format) error {
	switch f {
	case output.JSON:
		return renderJSON(w, cs)
	case output.Markdown:
		return renderMarkdown(w, cs)
	}
	return renderText(w, cs)
}

// Summary is the reviewer's one line: "3 to create, 1 to change, 0 to replace, 0 to delete,
// 40 unchanged".
func (cs Changes) Summary() string {
	s := fmt.Sprintf("%d to create, %d to change, %d to replace, %d to delete, %d unchanged",
		cs.Count(Create), cs.Count(Update), cs.Count(Replace), cs.Count(Delete), cs.Count(NoOp))
	if n := cs.Unreadable(); n > 0 {
		s += fmt.Sprintf(" (%d of them unreadable, left alone)", n)
	}
	if n := len(cs.Stale); n > 0 {
		s += fmt.Sprintf("; %d stale resume point(s) to remove", n)
	}
	if p := cs.PrincipalsSummary(); p != "" {
		s += "; users and accounts: " + p
	}
	return s
}

// PrincipalsSummary counts what changes of the users and accounts: "1 to create, 2 to change,
// 0 to delete", "unchanged", or why nothing can be told; "" when they were not compared.
func (cs Changes) PrincipalsSummary() string {
	switch {
	case cs.PrincipalsUnknown != "":
		return "not known"
	case cs.PrincipalsFrom == "":
		return ""
	case cs.PrincipalsEmpty():
		return "unchanged"
	}
	n := func(a Action) int { return cs.CountPrincipals(KindUser, a) + cs.CountPrincipals(KindAccount, a) }
	s := fmt.Sprintf("%d to create, %d to change, %d to delete", n(Create), n(Update), n(Delete))
	if cs.Undelivered != "" {
		s += " (not by this apply)"
	}
	return s
}

// principalLines is how a principal's change reads, one line a field: a list field's gains and
// losses each on a line of its own; a created principal's lists by their size, since its every
// grant is the review's to show (plan --against), not a bus's diff's.
func principalLines(c Change) []string {
	var out []string
	for _, f := range c.Fields {
		switch {
		case c.Action == Create && f.Name != FacetAccount && f.Name != FacetKey && f.Name != FacetCredential && len(f.Added) > 0:
			out = append(out, fmt.Sprintf("%s: %s", f.Name, plural(len(f.Added), "value")))
		case c.Action == Delete:
		case len(f.Added)+len(f.Removed) > 0:
			for _, x := range f.Added {
				out = append(out, fmt.Sprintf("%s: + %s", f.Name, x))
			}
			for _, x := range f.Removed {
				out = append(out, fmt.Sprintf("%s: - %s", f.Name, x))
			}
		default:
			out = append(out, fmt.Sprintf("%s: %s → %s", f.Name, f.Old, f.New))
		}
	}
	return out
}

func plural(n int, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %ss", n, one)
}

// principalsHeading is the users and accounts section's first line.
func (cs Changes) principalsHeading() string {
	switch {
	case cs.PrincipalsUnknown != "":
		return "Users and accounts: " + cs.PrincipalsUnknown
	case cs.PrincipalsFrom == "":
		return ""
	}
	h := fmt.Sprintf("Users and accounts, compared with %s: %s", cs.PrincipalsFrom, cs.PrincipalsSummary())
	if cs.Undelivered != "" {
		h += ". " + cs.Undelivered
	}
	return h
}

// shownPrincipals are the principals' changes a reader sees: every change, and every unchanged
// one that carries a note.
func (cs Changes) shownPrincipals() []Change {
	var out []Change
	for _, c := range cs.Principals {
		if c.Action != NoOp || len(c.Notes) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// DropsSaid is what a discarding field drops: how many where the bus could say, else when.
func (f Field) DropsSaid() string {
	if f.Drops != "" {
		return f.Drops
	}
	return f.DiscardsWhen
}

// notes are the change set's notes, then its stale resume points, each in a sentence.
func (cs Changes) notes() []string {
	out := slices.Clone(cs.Notes)
	for _, s := range cs.Stale {
		out = append(out, s.String())
	}
	return out
}

// shown is what a reviewer needs to see: every change, and every unchanged object that carries a
// note (something kept on purpose).
func (cs Changes) shown() []Change {
	var out []Change
	for _, c := range cs.Items {
		if c.Action != NoOp || len(c.Notes) > 0 {
			out = append(out, c)
		}
	}
	return out
}

func renderText(w io.Writer, cs Changes) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s.\n", cs.Summary())
	shown := cs.shown()
	if len(shown) > 0 {
		b.WriteString("\n")
	}
	for _, c := range shown {
		fmt.Fprintf(&b, "%3s %s %s", c.Action, c.Kind, safetext.Line(c.Name()))
		if c.Messages > 0 && (c.Action == Delete || c.Action == Replace) {
			fmt.Fprintf(&b, " (holds %d messages)", c.Messages)
		}
		b.WriteString("\n")
		for _, f := range c.Fields {
			if len(f.Added)+len(f.Removed) > 0 && c.Action == Update {
				for _, x := range f.Added {
					fmt.Fprintf(&b, "      %s: + %s\n", f.Name, safetext.Line(x))
				}
				for _, x := range f.Removed {
					fmt.Fprintf(&b, "      %s: - %s\n", f.Name, safetext.Line(x))
				}
				continue
			}
			fmt.Fprintf(&b, "      %s: %s → %s", f.Name, safetext.Line(f.Old), safetext.Line(f.New))
			if f.Replaces {
				b.WriteString("  (forces replacement)")
			}
			if f.Discards && c.Action == Update {
				fmt.Fprintf(&b, "  (discards stored messages: %s)", f.DropsSaid())
				if f.Approved != "" {
					fmt.Fprintf(&b, " (approved in %s)", safetext.Line(f.Approved))
				}
			}
			b.WriteString("\n")
		}
		for _, n := range c.Notes {
			fmt.Fprintf(&b, "      note: %s\n", safetext.Line(n))
		}
	}
	if h := cs.principalsHeading(); h != "" {
		fmt.Fprintf(&b, "\n%s.\n", safetext.Line(h))
		shown := cs.shownPrincipals()
		if len(shown) > 0 {
			b.WriteString("\n")
		}
		for _, c := range shown {
			fmt.Fprintf(&b, "%3s %s %s\n", c.Action, c.Kind, safetext.Line(c.Name()))
			for _, l := range principalLines(c) {
				fmt.Fprintf(&b, "      %s\n", safetext.Line(l))
			}
			for _, n := range c.Notes {
				fmt.Fprintf(&b, "      note: %s\n", safetext.Line(n))
			}
			if c.Refused != "" {
				fmt.Fprintf(&b, "      refused: %s\n", safetext.Line(c.Refused))
			}
		}
	}
	if notes := cs.notes(); len(notes) > 0 {
		b.WriteString("\nNotes:\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "  - %s\n", safetext.Line(n))
		}
	}
	if len(cs.Unmanaged) > 0 {
		b.WriteString("\nNot managed by meshc (never changed or deleted, whatever the flags):\n")
		for _, n := range cs.Unmanaged {
			fmt.Fprintf(&b, "  - %s\n", safetext.Line(n))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// JSON shape, version 1 (stable; fields are only ever added):
//
//	{
//	  "version": 1,
//	  "summary": {"create": 0, "update": 0, "replace": 0, "delete": 0, "unchanged": 0, "unreadable": 0},
//	  "changes": [            // streams then consumers, by name; unchanged objects only with notes
//	    {"action": "update", "symbol": "~", "kind": "consumer", "stream": "EVENTS",
//	     "consumer": "anchor_builder",                     // absent for a stream
//	     "fields": [{"field": "ack_wait", "old": "30s", "new": "1m0s", "replaces": false}],
//	     // a list field also says what it adds and removes: "added": [...], "removed": [...]
//	     "messages": 12,                                   // streams only
//	     "unreadable": true,                               // only when the server could not report it
//	     "adopts": true,                                   // only when it carries no meshc mark
//	     "foreign": "mesh \"other\"",                      // only when another mesh or catalogue marked it
//	     "notes": ["…"]}
//	  ],
//	  "notes": ["…"],
//	  "not_managed": ["stream KV_leases (key-value bucket leases)", "consumer EVENTS/audit"],
//	  "stale_resume_points": [{"stream": "EVENTS", "consumer": "old", "why": "…"}]
//	}
//
// Values are rendered as text in the JetStream API's own words ("workqueue", "720h0m0s").
// A review's document embeds it, adding its own keys after these.
type Document struct {
	Version int          `json:"version"`
	Summary jsonSummary  `json:"summary"`
	Changes []jsonChange `json:"changes"`
	Notes   []string     `json:"notes"`
	// NotManaged is what the bus holds that meshc never changes.
	NotManaged []string `json:"not_managed"`
	// Stale are resume points apply removes.
	Stale []StaleResume `json:"stale_resume_points"`
	// Principals are the users, accounts and accounts file: compared with what, and what
	// differs (absent when they were not compared).
	Principals *jsonPrincipals `json:"users_and_accounts,omitempty"`
}

// jsonPrincipals is the users and accounts part of a change set's JSON.
type jsonPrincipals struct {
	// From is what the bus's side was read from; Unknown, when set, why nothing is known.
	From    string `json:"compared_with,omitempty"`
	Unknown string `json:"unknown,omitempty"`
	// Undelivered says who delivers them instead of this apply.
	Undelivered string         `json:"delivered_by,omitempty"`
	Summary     map[string]int `json:"summary"`
	Changes     []jsonChange   `json:"changes"`
}

type jsonSummary struct {
	Create    int `json:"create"`
	Update    int `json:"update"`
	Replace   int `json:"replace"`
	Delete    int `json:"delete"`
	Unchanged int `json:"unchanged"`
	// Unreadable of the unchanged: reported missing or offline by the server, left alone.
	Unreadable int `json:"unreadable"`
}

type jsonChange struct {
	Action     string   `json:"action"`
	Symbol     string   `json:"symbol"`
	Kind       Kind     `json:"kind"`
	Stream     string   `json:"stream,omitempty"`
	Name       string   `json:"name,omitempty"`
	Key        string   `json:"key,omitempty"`
	Refused    string   `json:"refused,omitempty"`
	Consumer   string   `json:"consumer,omitempty"`
	Fields     []Field  `json:"fields"`
	Messages   *uint64  `json:"messages,omitempty"`
	Unreadable bool     `json:"unreadable,omitempty"`
	Adopts     bool     `json:"adopts,omitempty"`
	Foreign    string   `json:"foreign,omitempty"`
	Notes      []string `json:"notes"`
}

func renderJSON(w io.Writer, cs Changes) error {
	// Names come from the bus: output.WriteJSON makes them safe for a CI log.
	return output.WriteJSON(w, cs.Document())
}

// Document is the change set as its JSON document.
func (cs Changes) Document() Document {
	out := Document{
		Version:    1,
		Summary:    jsonSummary{cs.Count(Create), cs.Count(Update), cs.Count(Replace), cs.Count(Delete), cs.Count(NoOp), cs.Unreadable()},
		Changes:    []jsonChange{},
		Notes:      nonNil(cs.Notes),
		NotManaged: nonNil(cs.Unmanaged),
		Stale:      cs.Stale,
	}
	if out.Stale == nil {
		out.Stale = []StaleResume{}
	}
	for _, c := range cs.shown() {
		jc := jsonChange{
			Action: c.Action.Word(), Symbol: strings.TrimSpace(c.Action.String()), Kind: c.Kind,
			Stream: c.Stream, Consumer: c.Consumer, Fields: c.Fields, Notes: nonNil(c.Notes),
			Unreadable: c.Unreadable, Adopts: c.Adopts, Foreign: c.Foreign,
		}
		if jc.Fields == nil {
			jc.Fields = []Field{}
		}
		if c.Kind == KindStream {
			m := c.Messages
			jc.Messages = &m
		}
		out.Changes = append(out.Changes, jc)
	}
	if cs.PrincipalsFrom != "" || cs.PrincipalsUnknown != "" {
		jp := &jsonPrincipals{From: cs.PrincipalsFrom, Unknown: cs.PrincipalsUnknown, Undelivered: cs.Undelivered,
			Summary: map[string]int{}, Changes: []jsonChange{}}
		for _, c := range cs.Principals {
			if c.Action != NoOp {
				jp.Summary[c.Action.Word()]++
			}
		}
		for _, c := range cs.shownPrincipals() {
			jc := jsonChange{Action: c.Action.Word(), Symbol: strings.TrimSpace(c.Action.String()), Kind: c.Kind,
				Name: c.Principal, Key: c.Key, Refused: c.Refused, Fields: c.Fields, Notes: nonNil(c.Notes)}
			if jc.Fields == nil {
				jc.Fields = []Field{}
			}
			jp.Changes = append(jp.Changes, jc)
		}
		out.Principals = jp
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func renderMarkdown(w io.Writer, cs Changes) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### JetStream changes\n\n**%s**\n", cs.Summary())
	if shown := cs.shown(); len(shown) > 0 {
		b.WriteString("\n| | object | what changes |\n| --- | --- | --- |\n")
		for _, c := range shown {
			var what []string
			switch c.Action {
			case Create:
				what = append(what, "created")
			case Delete:
				what = append(what, "deleted")
			}
			if c.Messages > 0 && (c.Action == Delete || c.Action == Replace) {
				what = append(what, fmt.Sprintf("**holds %d messages**", c.Messages))
			}
			for _, f := range c.Fields {
				if len(f.Added)+len(f.Removed) > 0 && c.Action == Update {
					for _, x := range f.Added {
						what = append(what, fmt.Sprintf("`%s`: + `%s`", f.Name, mdCell(x)))
					}
					for _, x := range f.Removed {
						what = append(what, fmt.Sprintf("`%s`: − `%s`", f.Name, mdCell(x)))
					}
					continue
				}
				s := fmt.Sprintf("`%s`: `%s` → `%s`", f.Name, mdCell(f.Old), mdCell(f.New))
				if f.Replaces {
					s += " (forces replacement)"
				}
				if f.Discards && c.Action == Update {
					s += " (**discards stored messages**: " + mdCell(f.DropsSaid()) + ")"
					if f.Approved != "" {
						s += " (approved in `" + mdCell(f.Approved) + "`)"
					}
				}
				what = append(what, s)
			}
			for _, n := range c.Notes {
				what = append(what, "_"+mdCell(n)+"_")
			}
			fmt.Fprintf(&b, "| `%s` | %s `%s` | %s |\n", c.Action.String(), c.Kind, mdCell(c.Name()), strings.Join(what, "<br>"))
		}
	}
	if h := cs.principalsHeading(); h != "" {
		fmt.Fprintf(&b, "\n### Users and accounts\n\n**%s**\n", mdCell(strings.TrimPrefix(h, "Users and accounts, ")))
		if shown := cs.shownPrincipals(); len(shown) > 0 {
			b.WriteString("\n| | principal | what changes |\n| --- | --- | --- |\n")
			for _, c := range shown {
				var what []string
				for _, l := range principalLines(c) {
					what = append(what, "`"+mdCell(l)+"`")
				}
				for _, n := range c.Notes {
					what = append(what, "_"+mdCell(n)+"_")
				}
				if c.Refused != "" {
					what = append(what, "**refused**: "+mdCell(c.Refused))
				}
				fmt.Fprintf(&b, "| `%s` | %s `%s` | %s |\n", c.Action.String(), c.Kind, mdCell(c.Name()), strings.Join(what, "<br>"))
			}
		}
	}
	if notes := cs.notes(); len(notes) > 0 {
		b.WriteString("\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "- %s\n", mdCell(n))
		}
	}
	if len(cs.Unmanaged) > 0 {
		b.WriteString("\nNot managed by meshc (never changed or deleted, whatever the flags):\n\n")
		for _, n := range cs.Unmanaged {
			fmt.Fprintf(&b, "- %s\n", mdCell(n))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdCell keeps a value — a name the bus reported, say — from breaking the table it sits in or
// the terminal it is read on.
func mdCell(s string) string {
	s = safetext.Line(s)
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "`", "'")
	return strings.ReplaceAll(s, "\n", " ")
}
