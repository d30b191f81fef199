package lint

import (
	"path"
	"strings"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/internal/suggest"
)

// The rules this file reports, declared where they are reported (lint.Rules lists them all).
var (
	ruleName = &catalogue.Rule{ID: "name", Severity: catalogue.Error, Firm: true,
		Summary: "a name outside its grammar, or a module or seat taking a reserved mesh-*/node-* name",
		Why:     "Names become subject tokens and usernames; a dot, a wildcard or a space in one changes which subjects a permission covers."}
	ruleEventLocal = &catalogue.Rule{ID: "event-local", Severity: catalogue.Error, Firm: true,
		Summary: "an event named the old routing-key way, prefixed with its own module, holding a wildcard, or written as a subject",
		Why:     "Events are local names and the mesh derives the subject; 37 manifests once spelt them as routing keys and no cross-module subscription matched anything."}
	ruleNoSubject = &catalogue.Rule{ID: "no-subject", Severity: catalogue.Error, Firm: true,
		Summary: "a field holding a subject (mesh.…, $JS.…, _INBOX.…, _DELIVER.…)",
		Why:     "A manifest that holds a subject stops being true the day the subject space is reorganised."}
	ruleSeatReserved = &catalogue.Rule{ID: "seat-reserved", Severity: catalogue.Error,
		Summary: "a module declaring a mesh-* or node-* seat",
		Why:     "The prefix is the reservation: a module taking a mesh role's name would receive the mesh's own work."}
)

// The grammars of docs/catalogue.md, "Names". A name becomes a subject token and part of a
// username, so anything outside these changes which subjects a permission covers: a dot adds a
// token, `*` and `>` are wildcards, a space ends the subject.
//
// Written as byte loops rather than regular expressions: every name and event of a 10,000-module
// catalogue passes through them, and the expressions were a visible share of lint's time.
var maxNameLen = catalogue.NameGrammar.MaxLen

// validName is [a-z][a-z0-9-]*, at most 63 characters: modules, seats, machines, people.
func validName(v string) bool {
	if v == "" || len(v) > maxNameLen || !lower(v[0]) {
		return false
	}
	for i := 1; i < len(v); i++ {
		if c := v[i]; !lower(c) && !digit(c) && c != '-' {
			return false
		}
	}
	return true
}

// maxTokenLen bounds a tool, a kind of work and a whole event name.
var maxTokenLen = catalogue.TokenGrammar.MaxLen

// validToken is [a-z0-9][a-z0-9_-]*: a tool, a kind of work, one token of an event name.
func validToken(v string) bool {
	if v == "" || len(v) > maxTokenLen || (!lower(v[0]) && !digit(v[0])) {
		return false
	}
	for i := 1; i < len(v); i++ {
		if c := v[i]; !lower(c) && !digit(c) && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// validAccount is [A-Za-z0-9_-]+: the mesh's name, which becomes a NATS account name that the
// config format cannot quote anything else in (docs/nats.md, "Config quoting").

func lower(c byte) bool { return c >= 'a' && c <= 'z' }
func digit(c byte) bool { return c >= '0' && c <= '9' }

// The file kinds a module may ask the mesh to write. Only one exists today.
const busUsersFile = "bus-users"

var fileKinds = []string{busUsersFile}

// brokerSeat is the seat whose holder runs the bus, and so the only one given its user list.
const brokerSeat = "mesh-broker"

func validEvent(v string) bool {
	if len(v) > maxTokenLen {
		return false
	}
	for tok := range strings.SplitSeq(v, ".") {
		if !validToken(tok) {
			return false
		}
	}
	return true
}

func reserved(v string) bool { return strings.HasPrefix(v, "mesh-") || strings.HasPrefix(v, "node-") }

// isSubject reports whether a value is written as a subject rather than a name: the mesh's own
// subject space, or the server's ($JS, $SYS, …), inboxes and delivery subjects.
func isSubject(v string) bool {
	return strings.HasPrefix(v, "mesh.") || strings.HasPrefix(v, "$") ||
		strings.HasPrefix(v, "_INBOX.") || strings.HasPrefix(v, "_DELIVER.")
}

// localName reads a derived event subject back into what a manifest writes, for the hint:
// mesh.mod.X.event.E is X.E and mesh.seat.S.event.E is S.E. ok is false for any other subject.
func localName(subject string) (emitter, event string, ok bool) {
	t := strings.SplitN(subject, ".", 5)
	if len(t) == 5 && t[0] == "mesh" && (t[1] == "mod" || t[1] == "seat") && t[3] == "event" {
		return t[2], t[4], true
	}
	return "", "", false
}

// nameHint suggests the name a mistyped one probably meant: lower case, with - for the
// separators people reach for.
func nameHint(v string) string {
	fixed := strings.Map(func(r rune) rune {
		switch r {
		case '_', '.', ' ', '/':
			return '-'
		}
		return r
	}, strings.ToLower(v))
	if fixed != v && validName(fixed) {
		return ", such as " + quote(fixed)
	}
	return ""
}

func quote(s string) string { return "`" + s + "`" }

// checkName reports a module, seat, node, person or alias name outside its grammar.
func (l *linter) checkName(t catalogue.Text, what string) bool {
	switch {
	case !l.ok(t):
		return false
	case isSubject(t.Value):
		l.report(ruleNoSubject, t.Pos, "%s %q is written as a subject; write the %s's name, and the mesh derives its subjects", what, catalogue.Excerpt(t.Value), what)
		return false
	case !validName(t.Value):
		l.report(ruleName, t.Pos, "%s %q is not a name: use lower-case letters, digits and -, starting with a letter, at most %d characters%s",
			what, catalogue.Excerpt(t.Value), maxNameLen, nameHint(t.Value))
		return false
	}
	return true
}

// checkToken reports a tool or a kind of work that is not one token.
func (l *linter) checkToken(t catalogue.Text, what string) {
	switch {
	case !l.ok(t):
	case isSubject(t.Value):
		l.report(ruleNoSubject, t.Pos, "%s %q is written as a subject; write its name alone, and the mesh derives the subject", what, catalogue.Excerpt(t.Value))
	case !validToken(t.Value):
		l.report(ruleName, t.Pos, "%s %q must be one word of lower-case letters, digits, _ and -, with no dots or wildcards, at most %d characters", what, catalogue.Excerpt(t.Value), maxTokenLen)
	}
}

// checkEmitted reports an event a module or a seat declares it emits. owner is the module's or
// the seat's name: an event prefixed with it is the old routing-key habit.
func (l *linter) checkEmitted(t catalogue.Text, owner string) {
	v := t.Value
	if !l.ok(t) {
		return
	}
	if isSubject(v) {
		hint := "its local name"
		if _, event, ok := localName(v); ok {
			hint = quote(catalogue.Excerpt(event))
		}
		l.report(ruleEventLocal, t.Pos, "%q is a subject; an event is a local name: write %s, and the mesh derives the subject", catalogue.Excerpt(v), hint)
		return
	}
	if rest, ok := strings.CutPrefix(v, "module."); ok && strings.Contains(rest, ".") {
		_, verb, _ := strings.Cut(rest, ".")
		l.report(ruleEventLocal, t.Pos, "%q is the old bus's routing key; an event is named locally: write %s", catalogue.Excerpt(v), quote(catalogue.Excerpt(verb)))
		return
	}
	if rest, ok := strings.CutPrefix(v, owner+"."); ok && owner != "" {
		l.report(ruleEventLocal, t.Pos, "%q is prefixed with %s's own name; an event is named locally and the mesh adds the emitter: write %s",
			catalogue.Excerpt(v), owner, quote(catalogue.Excerpt(rest)))
		return
	}
	if strings.ContainsAny(v, "*>#") {
		l.report(ruleEventLocal, t.Pos, "%q holds a wildcard; an emitted event is one event, not a pattern: name each event it emits", catalogue.Excerpt(v))
		return
	}
	if !validEvent(v) {
		l.report(ruleName, t.Pos, "event %q is not an event name: use tokens of lower-case letters, digits, _ and -, joined by dots (`built`, `image.pushed`), at most %d characters in all", catalogue.Excerpt(v), maxTokenLen)
	}
}

// checkConsumed reports a consumes or follows entry outside EMITTER.EVENT, EMITTER.** and **.
func (l *linter) checkConsumed(t catalogue.Text) {
	v := t.Value
	if !l.ok(t) || v == "**" {
		return
	}
	if isSubject(v) {
		hint := "EMITTER.EVENT"
		if emitter, event, ok := localName(v); ok {
			hint = quote(catalogue.Excerpt(emitter + "." + strings.ReplaceAll(event, ">", "**")))
		}
		l.report(ruleNoSubject, t.Pos, "%q is a subject; a consumed event is named EMITTER.EVENT: write %s, and the mesh derives the subject", catalogue.Excerpt(v), hint)
		return
	}
	emitter, event, dotted := strings.Cut(v, ".")
	switch {
	case v == "#" || v == ">" || v == "*":
		l.report(ruleName, t.Pos, "%q is not the mesh's wildcard: every event of every emitter is `**`", catalogue.Excerpt(v))
	case !dotted:
		l.report(ruleName, t.Pos, "%q names no event: write EMITTER.EVENT (a module's or a seat's name, a dot, the event), or EMITTER.** for all of them", catalogue.Excerpt(v))
	case strings.HasSuffix(v, ".>") || strings.HasSuffix(v, ".#") || strings.HasSuffix(v, ".*"):
		l.report(ruleName, t.Pos, "the only wildcard in consumes is a final `**`: write %s", quote(catalogue.Excerpt(v[:len(v)-1]+"**")))
	case strings.Contains(event, "**") && event != "**":
		l.report(ruleName, t.Pos, "%q: `**` stands only at the end, for every event of one emitter (%s)", catalogue.Excerpt(v), quote(catalogue.Excerpt(emitter)+".**"))
	case !validName(emitter):
		l.report(ruleName, t.Pos, "%q: %q is not a module's or a seat's name: use lower-case letters, digits and -, starting with a letter", catalogue.Excerpt(v), catalogue.Excerpt(emitter))
	case event != "**" && !validEvent(event):
		l.report(ruleName, t.Pos, "%q: %q is not an event name: use tokens of lower-case letters, digits, _ and -, joined by dots", catalogue.Excerpt(v), catalogue.Excerpt(event))
	}
}

// checkCall reports a calls or may-call entry outside MODULE.TOOL.
func (l *linter) checkCall(t catalogue.Text, what string) {
	v := t.Value
	if !l.ok(t) {
		return
	}
	if isSubject(v) {
		l.report(ruleNoSubject, t.Pos, "%q is a subject; %s names a tool as MODULE.TOOL, and the mesh derives the subject", catalogue.Excerpt(v), what)
		return
	}
	module, tool, dotted := strings.Cut(v, ".")
	if !dotted || !validName(module) || !validToken(tool) {
		l.report(ruleName, t.Pos, "%s entry %q is not MODULE.TOOL: a module's name, a dot, and one of the tools it serves", what, catalogue.Excerpt(v))
	}
}

// checkNames checks every value against its grammar, one value at a time.
func (l *linter) checkNames() {
	c := l.ix.Catalogue
	l.checkMesh(c.Mesh)
	for _, m := range c.Modules {
		l.checkModuleNames(m)
	}
	if inv := c.Inventory; inv != nil {
		for _, n := range inv.Nodes {
			l.checkName(n.Name, "machine name")
			for _, r := range n.Runs {
				l.checkName(r, "module")
			}
		}
		for _, p := range inv.People {
			l.checkName(p.Name, "person's name")
			for _, call := range p.MayCall {
				if call.Value != "*" {
					l.checkCall(call, "may-call")
				}
			}
		}
	}
}

func (l *linter) checkMesh(m *catalogue.Mesh) {
	switch {
	case m.Name.Pos.Line == 0:
		// Absent or of the wrong type: the loader's finding already.
	case !catalogue.ValidAccountName(m.Name.Value):
		l.report(ruleName, m.Name.Pos, "mesh name %q becomes a NATS account name: use letters, digits, _ and - only", catalogue.Excerpt(m.Name.Value))
	}
	for _, s := range m.Roles {
		// A role may take any name, mesh-* and node-* included: the prefix is reserved for roles.
		l.checkSeatNames(s, false)
	}
	for _, s := range m.Controller.Submits {
		l.checkName(s, "seat")
	}
	for _, f := range m.Controller.Follows {
		l.checkConsumed(f)
	}
	for _, a := range m.Aliases {
		l.checkName(a.Old, "old seat name")
		l.checkName(a.New, "seat")
	}
	for _, s := range m.SharedNames {
		l.checkName(s, "seat")
	}
}

func (l *linter) checkSeatNames(s *catalogue.Seat, byModule bool) {
	if l.checkName(s.Name, "seat") && byModule && reserved(s.Name.Value) {
		l.report(ruleSeatReserved, s.Name.Pos, "mesh-* and node-* seats are the mesh's own roles: declare %q in mesh.yaml's roles, or give the seat a name of its own",
			catalogue.Excerpt(s.Name.Value))
	}
	switch sc := s.Scope; {
	case sc.Pos.Line == 0:
		// Absent or of the wrong type: the loader's finding already.
	case sc.Value != "mesh" && sc.Value != "node":
		l.report(ruleName, sc.Pos, "a seat's scope is mesh (one holder in the mesh) or node (one per machine), not %q", catalogue.Excerpt(sc.Value))
	}
	if d := s.Delivers; d.Value != "" && isSubject(d.Value) {
		l.report(ruleNoSubject, d.Pos, "delivers %q is written as a subject; name the interface its holder provides", catalogue.Excerpt(d.Value))
	}
	for _, a := range s.Accepts {
		l.checkToken(a, "kind of work")
	}
	for _, e := range s.Emits {
		l.checkEmitted(e, s.Name.Value)
	}
}

func (l *linter) checkModuleNames(m *catalogue.Module) {
	switch {
	case m.Name.Pos.Line == 0:
		// Absent or of the wrong type: the loader's finding already.
	case l.checkName(m.Name, "module name") && reserved(m.Name.Value):
		l.report(ruleName, m.Name.Pos, "module name %q takes a mesh-*/node-* name, which are reserved for the mesh's own roles: name the module for what it is (it may still claim a role)",
			catalogue.Excerpt(m.Name.Value))
	}
	for _, t := range m.Provides {
		l.checkInterface(t, "provides")
	}
	for _, t := range m.Requires {
		l.checkInterface(t, "requires")
	}
	for _, e := range m.Emits {
		l.checkEmitted(e, m.Name.Value)
	}
	for _, t := range m.Consumes {
		l.checkConsumed(t)
	}
	for _, t := range m.Tools {
		l.checkToken(t, "tool")
	}
	for _, t := range m.Calls {
		l.checkCall(t, "calls")
	}
	for _, s := range m.Seats {
		l.checkSeatNames(s, true)
	}
	for _, t := range m.Claims {
		l.checkName(t, "seat")
	}
	for _, t := range m.Uses {
		l.checkName(t, "seat")
	}
	for _, f := range m.Files {
		switch {
		case f.Kind.Value != busUsersFile:
			hint := "the mesh writes only " + quote(busUsersFile)
			if near := suggest.Closest(f.Kind.Value, fileKinds); near != "" {
				hint = "did you mean " + quote(near) + "?"
			}
			l.report(catalogue.RuleYAML, f.Kind.Pos, "unknown file kind %q in files; %s", catalogue.Excerpt(f.Kind.Value), hint)
		case !path.IsAbs(f.Path.Value):
			l.report(catalogue.RuleYAML, f.Path.Pos, "the path of %s must be absolute (it is where the mesh writes the file on the machine), not %q",
				catalogue.Excerpt(f.Kind.Value), catalogue.Excerpt(f.Path.Value))
		}
	}
}

// checkInterface reports an interface written as a subject. Interfaces are compared by name
// only and never become subjects, so their spelling is otherwise free.
func (l *linter) checkInterface(t catalogue.Text, what string) {
	if l.ok(t) && isSubject(t.Value) {
		l.report(ruleNoSubject, t.Pos, "%s %q is written as a subject; name the interface", what, catalogue.Excerpt(t.Value))
	}
}
