package lint

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
)

// The rules this file reports, declared where they are reported (lint.Rules lists them all).
var (
	ruleConsumeAgreement = &catalogue.Rule{ID: "consume-agreement", Severity: catalogue.Error,
		Summary: "a consumed name whose derived subject no emitter publishes",
		Why:     "A subscription to a subject nothing publishes is not an error anywhere: it is silence. Comparing names let a role's event derived into a module's namespace through."}
	ruleCallAgreement = &catalogue.Rule{ID: "call-agreement", Severity: catalogue.Error,
		Summary: "a called or person-granted tool that nobody serves",
		Why:     "A call to a tool nobody serves fails at run time with \"no responders\", on every call, far from the manifest that made the mistake."}
	ruleEventUnheard = &catalogue.Rule{ID: "event-unheard", Severity: catalogue.Info,
		Summary: "an emitted event nobody consumes",
		Why:     "Not wrong — a module may be installed before its listeners — but often a consumer that names the event differently."}
)

// subjectSet answers "does anything in this set of subjects match this filter", in time linear
// in the filter's length rather than in the set's size.
type subjectSet struct {
	exact map[string]bool
	// prefixes holds every proper token prefix of every subject: a filter P.> matches something
	// exactly when P is one of them. Up to mappedTokens tokens in a map of the prefixes
	// themselves; longer ones token by token in long (mappedTokens).
	prefixes map[string]bool
	long     tokenTree
	all      []string
	// starred caches the answer for filters holding `*`: only `**` derives one, so there are at
	// most a couple of distinct ones, each matched once against the whole set.
	starred map[string]bool
}

// mappedTokens is how many tokens a prefix the agreement sets hold whole in a map may have:
// hashing a subject's every prefix whole costs its length once per token, which is quadratic
// in a long event name (400,000 tokens took 9 s to lint), so past this many a prefix is held
// token by token in a trie (tokenTree), slower than the map for the short subjects nearly every
// catalogue has.
const mappedTokens = 16

func newSubjectSet(subjects []string) *subjectSet {
	// Sized once: a large catalogue's subjects and their prefixes number in the hundreds of
	// thousands, and growing the maps step by step rehashed them over and over.
	s := &subjectSet{exact: make(map[string]bool, len(subjects)), prefixes: make(map[string]bool, len(subjects)), starred: map[string]bool{}}
	for _, sub := range subjects {
		s.exact[sub] = true
		dots := 0
		for i := 0; i < len(sub); i++ {
			if sub[i] != '.' {
				continue
			}
			if dots++; dots > mappedTokens {
				s.long.add(sub[:strings.LastIndexByte(sub, '.')])
				break
			}
			s.prefixes[sub[:i]] = true
		}
	}
	s.all = subjects
	return s
}

// matches reports whether any subject in the set matches filter.
func (s *subjectSet) matches(filter string) bool {
	if strings.Contains(filter, "*") {
		hit, ok := s.starred[filter]
		if !ok {
			hit = slices.ContainsFunc(s.all, func(sub string) bool { return compiler.Covers(filter, sub) })
			s.starred[filter] = hit
		}
		return hit
	}
	if p, ok := strings.CutSuffix(filter, ".>"); ok {
		if strings.Count(p, ".") < mappedTokens {
			return s.prefixes[p]
		}
		_, found := s.long.find(p)
		return found
	}
	return s.exact[filter]
}

// filterSet answers "does any of these filters match this subject".
type filterSet struct {
	exact map[string]bool
	// wide holds P for every filter P.> of up to mappedTokens tokens, and long, token by token,
	// every longer P, each P's last node marked in longEnds.
	wide     map[string]bool
	long     tokenTree
	longEnds map[int32]bool
	// starred are the distinct filters holding `*`.
	starred []string
}

// newFilterSet makes a set for about n filters.
func newFilterSet(n int) *filterSet {
	return &filterSet{exact: make(map[string]bool, n), wide: map[string]bool{}, longEnds: map[int32]bool{}}
}

func (f *filterSet) add(filter string) {
	switch p, wide := strings.CutSuffix(filter, ".>"); {
	case strings.Contains(filter, "*"):
		if !slices.Contains(f.starred, filter) {
			f.starred = append(f.starred, filter)
		}
	case wide && strings.Count(p, ".") < mappedTokens:
		f.wide[p] = true
	case wide:
		f.longEnds[f.long.add(p)] = true
	default:
		f.exact[filter] = true
	}
}

func (f *filterSet) matches(subject string) bool {
	if f.exact[subject] {
		return true
	}
	// A wide filter whose P is a proper prefix of the subject: its first prefixes in the map,
	// the longer ones along the trie.
	dots := 0
	for i := 0; i < len(subject) && dots < mappedTokens; i++ {
		if subject[i] == '.' {
			if dots++; f.wide[subject[:i]] {
				return true
			}
		}
	}
	if len(f.longEnds) > 0 {
		if i := strings.LastIndexByte(subject, '.'); i >= 0 {
			n := root
			for tok := range strings.SplitSeq(subject[:i], ".") {
				next, ok := f.long.next(n, tok)
				if !ok {
					break
				}
				if n = next; f.longEnds[n] {
					return true
				}
			}
		}
	}
	return slices.ContainsFunc(f.starred, func(filter string) bool { return compiler.Covers(filter, subject) })
}

// tokenTree is a trie of subjects by token, held in one map from a node and a token to the
// next node: walking a subject through it costs the subject's length once. Its zero value is
// an empty tree.
type tokenTree struct {
	steps map[tokenStep]int32
	nodes int32
}

type tokenStep struct {
	from  int32
	token string
}

// root is the node of the empty prefix.
const root int32 = 0

// add adds a subject and returns the node of its last token.
func (t *tokenTree) add(subject string) int32 {
	if t.steps == nil {
		t.steps, t.nodes = map[tokenStep]int32{}, 1
	}
	n := root
	for tok := range strings.SplitSeq(subject, ".") {
		next, ok := t.steps[tokenStep{n, tok}]
		if !ok {
			next = t.nodes
			t.nodes++
			t.steps[tokenStep{n, tok}] = next
		}
		n = next
	}
	return n
}

// next is the node after n by one token, if the tree has it.
func (t *tokenTree) next(n int32, token string) (int32, bool) {
	next, ok := t.steps[tokenStep{n, token}]
	return next, ok
}

// find is the node of a whole subject, if the tree has it.
func (t *tokenTree) find(subject string) (int32, bool) {
	n := root
	for tok := range strings.SplitSeq(subject, ".") {
		next, ok := t.next(n, tok)
		if !ok {
			return 0, false
		}
		n = next
	}
	return n, true
}

// checkAgreement compares, over the whole catalogue whether it runs or not, the derived subject
// of every consumed event with what the emitters publish, every called tool with what the
// modules serve, and every emitted event with what somebody consumes.
func (l *linter) checkAgreement() {
	ix := l.ix
	emitted := compiler.Emitted(ix)
	published := newSubjectSet(slices.Collect(maps.Keys(emitted))) // a set: its order never shows
	// Sized once, as the sets above: on a large catalogue these maps hold hundreds of thousands.
	consumes, tools := 0, 0
	for _, m := range ix.Catalogue.Modules {
		consumes += len(m.Consumes)
		tools += len(m.Tools)
	}
	heard := newFilterSet(consumes)

	for _, m := range ix.Catalogue.Modules {
		if !l.canonical(m) {
			continue
		}
		for _, c := range m.Consumes {
			l.checkConsume(c, m.Name.Value+" consumes", published, heard)
		}
	}
	for _, f := range ix.Catalogue.Mesh.Controller.Follows {
		l.checkConsume(f, "the controller follows", published, heard)
	}

	served := make(map[string]bool, tools)
	for _, m := range ix.Catalogue.Modules {
		if l.canonical(m) {
			for _, t := range m.Tools {
				served[compiler.Tool(m.Name.Value, t.Value)] = true
			}
		}
	}
	for _, m := range ix.Catalogue.Modules {
		if l.canonical(m) {
			for _, c := range m.Calls {
				l.checkCallAgrees(c, served, m.Name.Value+" calls")
			}
		}
	}
	if inv := ix.Catalogue.Inventory; inv != nil {
		for _, p := range inv.People {
			for _, c := range p.MayCall {
				if c.Value != compiler.EveryTool {
					l.checkCallAgrees(c, served, p.Name.Value+" may call")
				}
			}
		}
	}

	// Not wrong (a module may be installed before its listeners), but often a consumer that
	// names the event differently: said last, so it never stands in for a finding above.
	for _, m := range ix.Catalogue.Modules {
		if l.canonical(m) {
			for _, e := range m.Emits {
				l.unheard(e, heard, compiler.ModuleEvent(m.Name.Value, e.Value), m.Name.Value)
			}
		}
	}
	for _, s := range ix.AllSeats() {
		for _, e := range s.Emits {
			l.unheard(e, heard, compiler.SeatEvent(s.Name.Value, e.Value), s.Name.Value)
		}
	}
}

func (l *linter) unheard(e catalogue.Text, heard *filterSet, subject, emitter string) {
	// A broken emitter's consumers were not checked against it (doubtful), so they cannot be
	// said to hear nothing.
	if l.ok(e) && !l.doubtful[emitter] && !l.unread && !heard.matches(subject) {
		l.report(ruleEventUnheard, e.Pos, "nobody consumes %s's event %s (%s); if a consumer means it, it should consume %s",
			catalogue.Excerpt(emitter), catalogue.Excerpt(e.Value), catalogue.Excerpt(subject), quote(catalogue.Excerpt(emitter+"."+e.Value)))
	}
}

// checkConsume checks one consumes (or follows) entry. who is the consumer, for messages.
func (l *linter) checkConsume(t catalogue.Text, who string, published *subjectSet, heard *filterSet) {
	if !l.ok(t) {
		return
	}
	ix := l.ix
	if t.Value == compiler.AllEvents {
		for _, s := range compiler.Consume(ix, t.Value).Subjects {
			heard.add(s)
		}
		return // every event: agrees with whatever is published, nothing included
	}
	emitter, _, _ := strings.Cut(t.Value, ".")
	c := compiler.Consume(ix, t.Value)
	if !c.Seat && (l.doubtful[emitter] || (l.unread && ix.Modules[emitter] == nil)) {
		return // the emitter's declaration is broken (or may be in an unread manifest), and has its finding
	}
	if !c.Seat && ix.Modules[emitter] == nil {
		if to, ok := ix.Aliases[emitter]; ok {
			l.report(ruleSeatUnknown, t.Pos, "%q was renamed to %q (mesh.yaml aliases), and nobody declares %q either: declare it, or fix the alias",
				catalogue.Excerpt(emitter), catalogue.Excerpt(to), catalogue.Excerpt(to))
			return
		}
		hint := didYouMean(l.emitters().Closest(emitter))
		if emitter == "module" {
			hint = "; `module.<m>.<event>` is the old bus's routing key: write `<m>.<event>`"
		}
		l.report(ruleConsumeAgreement, t.Pos, "%s %s, and no module or seat is named %q, so nothing publishes it: fix the emitter's name%s",
			who, catalogue.Excerpt(t.Value), catalogue.Excerpt(emitter), hint)
		return
	}
	agrees := true
	for _, s := range c.Subjects {
		heard.add(s)
		agrees = agrees && published.matches(s)
	}
	if !agrees {
		l.report(ruleConsumeAgreement, t.Pos, "%s", l.disagreement(who, t.Value, c))
		return
	}
	if c.Renamed && l.ok(t) {
		l.report(ruleSeatRenamed, t.Pos, "%q is the old name of seat %q (mesh.yaml aliases): write %s; the old name stops working when the alias is retired",
			catalogue.Excerpt(emitter), catalogue.Excerpt(c.Emitter), quote(catalogue.Excerpt(c.Emitter+strings.TrimPrefix(t.Value, emitter))))
	}
}

// disagreement says why a consumed name's subject has no publisher, and what to write instead.
func (l *linter) disagreement(who, written string, c compiler.Consumed) string {
	var events *declaredNames
	kind := "module"
	if c.Seat {
		kind = "seat"
		events = l.declaredList(declaredKey{"seat events", c.Emitter}, l.ix.Seats[c.Emitter].Emits)
	} else {
		events = l.declaredList(declaredKey{"module events", c.Emitter}, l.ix.Modules[c.Emitter].Emits)
		// The holder's name written for its seat's event: the subject lands in the module's
		// namespace, and the role announces in the seat's.
		held := l.heldEvents(c.Emitter)
		if s := held.any; c.All && s != nil {
			return fmt.Sprintf("%s %s, but %s emits no events of its own: the events are seat %s's, which %s holds, and a role's event is published under the seat whoever holds it: consume %s",
				who, catalogue.Excerpt(written), catalogue.Excerpt(c.Emitter), s.Name.Value, catalogue.Excerpt(c.Emitter), quote(s.Name.Value+".**"))
		}
		if s := held.of[c.Event]; !c.All && s != nil {
			return fmt.Sprintf("%s %s, but %s does not emit %s: it is the event of seat %s, which %s holds, and a role's event is published under the seat whoever holds it: consume %s",
				who, catalogue.Excerpt(written), catalogue.Excerpt(c.Emitter), catalogue.Excerpt(c.Event), s.Name.Value, catalogue.Excerpt(c.Emitter), quote(s.Name.Value+"."+c.Event))
		}
	}
	if len(events.names) == 0 {
		return fmt.Sprintf("%s %s, but %s %s emits no events, so nothing publishes it: consume an event something emits, or declare it in %s's emits",
			who, catalogue.Excerpt(written), kind, catalogue.Excerpt(c.Emitter), catalogue.Excerpt(c.Emitter))
	}
	if c.All {
		// Unreachable while the emitter emits something; kept for the day a derivation differs.
		return fmt.Sprintf("%s %s, and nothing %s emits matches it", who, catalogue.Excerpt(written), catalogue.Excerpt(c.Emitter))
	}
	return fmt.Sprintf("%s %s, but %s %s does not emit %s%s; it emits %s: consume one of those, or declare %s in %s's emits",
		who, catalogue.Excerpt(written), kind, catalogue.Excerpt(c.Emitter), catalogue.Excerpt(c.Event), meant(events.hints.Closest(c.Event)), some(events.names), catalogue.Excerpt(c.Event), catalogue.Excerpt(c.Emitter))
}

// held is what the seats one module claims announce: the first claimed seat that emits
// anything, and for each event the first claimed seat that emits it.
type held struct {
	any *catalogue.Seat
	of  map[string]*catalogue.Seat
}

// heldEvents gathers what module's claimed seats announce, once per run.
func (l *linter) heldEvents(module string) held {
	if h, ok := l.held[module]; ok {
		return h
	}
	if l.held == nil {
		l.held = map[string]held{}
	}
	h := held{of: map[string]*catalogue.Seat{}}
	for _, claim := range l.ix.Modules[module].Claims {
		s := l.ix.Seat(claim.Value)
		if s == nil {
			continue
		}
		if h.any == nil && len(s.Emits) > 0 {
			h.any = s
		}
		for _, e := range s.Emits {
			if h.of[e.Value] == nil {
				h.of[e.Value] = s
			}
		}
	}
	l.held[module] = h
	return h
}

// checkCallAgrees checks one MODULE.TOOL a module calls or a person may call.
func (l *linter) checkCallAgrees(t catalogue.Text, served map[string]bool, who string) {
	if !l.ok(t) {
		return
	}
	module, tool := compiler.Call(t.Value)
	if served[compiler.Tool(module, tool)] {
		return
	}
	m := l.ix.Modules[module]
	switch {
	case l.doubtful[module], m == nil && l.unread:
		// The module's declaration is broken (or may be in an unread manifest), and has its finding.
	case m == nil:
		l.report(ruleCallAgreement, t.Pos, "%s %s, and there is no module %q to serve it: fix the module's name%s",
			who, catalogue.Excerpt(t.Value), catalogue.Excerpt(module), didYouMean(l.modules().Closest(module)))
	case len(m.Tools) == 0:
		l.report(ruleCallAgreement, t.Pos, "%s %s, but %s serves no tools: declare %s in %s's tools, or drop the call",
			who, catalogue.Excerpt(t.Value), catalogue.Excerpt(module), catalogue.Excerpt(tool), catalogue.Excerpt(module))
	default:
		tools := l.declaredList(declaredKey{"tools", module}, m.Tools)
		l.report(ruleCallAgreement, t.Pos, "%s %s, but %s does not serve %s%s; it serves %s: fix the tool's name, or declare it in %s's tools",
			who, catalogue.Excerpt(t.Value), catalogue.Excerpt(module), catalogue.Excerpt(tool), meant(tools.hints.Closest(tool)), some(tools.names), catalogue.Excerpt(module))
	}
}
