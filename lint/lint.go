package lint

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/suggest"
)

// Run checks a loaded catalogue and returns every finding, the loader's (loaded) included,
// sorted and de-duplicated.
//
// The checks run from the most specific to the most general, and every finding marks the value
// it is about: a later check skips a marked value, so one bad value gets one finding, from the
// rule that says most precisely what to do (README.md, "The rules").
//
// Run asks the compiler for its findings alone (compiler.Findings): a caller that goes on to use
// the plan calls Check.
func Run(c *catalogue.Catalogue, loaded catalogue.Findings) catalogue.Findings {
	findings, _ := lintCatalogue(c, loaded, findingsOnly)
	return findings
}

// Check is Run that also returns the plan the compiler derived on the way, so a caller that
// goes on to emit or apply does not compile the catalogue a second time. The plan is only worth
// using when the findings hold no error.
func Check(c *catalogue.Catalogue, loaded catalogue.Findings) (catalogue.Findings, *compiler.Plan) {
	return lintCatalogue(c, loaded, explainedPlan)
}

// CheckBare is Check with the plan compiled without its explanations (compiler.CompileBare):
// what `meshc emit` renders, for less of the compiler's and the collector's work.
func CheckBare(c *catalogue.Catalogue, loaded catalogue.Findings) (catalogue.Findings, *compiler.Plan) {
	return lintCatalogue(c, loaded, barePlan)
}

// planned is what a lint asks the compiler for beside its checks.
type planned int

const (
	findingsOnly planned = iota
	explainedPlan
	barePlan
)

func lintCatalogue(c *catalogue.Catalogue, loaded catalogue.Findings, want planned) (catalogue.Findings, *compiler.Plan) {
	l := &linter{ix: catalogue.NewIndex(c), loaded: loaded, marked: map[catalogue.Pos]bool{}}

	// The compiler only reads the catalogue and its index, as the checks below do, so it runs
	// beside them: on a large catalogue that is most of lint's time, hidden.
	type compilation struct {
		plan     *compiler.Plan
		findings catalogue.Findings
	}
	compiled := make(chan compilation, 1)
	go func() {
		switch want {
		case findingsOnly:
			compiled <- compilation{nil, compiler.Findings(l.ix)}
		case barePlan:
			p, f := compiler.CompileBare(l.ix)
			compiled <- compilation{p, f}
		default:
			p, f := compiler.Compile(l.ix)
			compiled <- compilation{p, f}
		}
	}()

	// One value at a time: grammar, reserved names, subjects where names belong.
	l.checkNames()
	// What a broken declaration may have meant: references to it get no second finding.
	l.noteDoubtful()
	// Two places at a time: duplicates and clashes, pointing at the later one.
	l.checkDuplicates()
	// Seats: aliases, claims, uses, what a holder owes its seat.
	l.checkSeats()
	// The whole catalogue, running or not: does every consumed event and called tool meet
	// something that publishes or serves it, comparing derived subjects.
	l.checkAgreement()
	// What the inventory runs: contention, unmet requirements.
	l.checkInventory()
	l.checkCredentials()
	l.checkCredentialDuplicates()
	l.checkKeys()
	// The mode the mesh runs in: what its people can do with an answer.
	l.checkIsolation()

	// stream-overlap, user-duplicate and credential-missing need the compiled plan: the
	// compiler reports them, so lint never derives a second plan that could disagree.
	// A value that already has a finding (a seat named "*" is a name finding) gets no second
	// one from what the compiler made of it, here or as the other place of a pair.
	done := <-compiled
	for _, f := range done.findings {
		if !l.marked[f.Pos] && !slices.ContainsFunc(f.Related, func(r catalogue.Related) bool { return l.marked[r.Pos] }) {
			l.findings = append(l.findings, f)
		}
	}

	return settle(c, append(slices.Clone(loaded), l.findings...)).Sorted(), done.plan
}

// linter is one run's state.
type linter struct {
	ix       *catalogue.Index
	loaded   catalogue.Findings
	findings catalogue.Findings
	// marked holds the position of every value that already has a finding. A position is one
	// scalar in one file, so it names the value.
	marked map[catalogue.Pos]bool

	// Candidates for "did you mean", sorted so the hint is the same on every run; built on
	// first use, since a clean catalogue never needs them. A name outside its grammar is never a
	// candidate: "did you mean \"Stock\"?" suggests the very name the name finding refuses.
	// Indexed, because a catalogue may hold thousands of unknown names (suggest.Index).
	moduleNames, seatNames, emitterNames *suggest.Index

	// declared is what messages say of one emitter's events or one module's tools, gathered on
	// first use: a finding at each of thousands of entries naming one module would otherwise
	// gather them again each time.
	declared map[declaredKey]*declaredNames
	// held is, by module, what the seats it claims announce (heldEvents).
	held map[string]held

	// doubtful holds the names a broken declaration may stand for: modules whose manifest has a
	// loader error, the file name of a manifest that could not be read (modules/old.yml says
	// "old"), and an invalid module name in the form its fix would give. A reference to one is
	// not checked for agreement: the finding about the declaration is the cause, and a second
	// one at every reference ("add modules/old.yaml" for a file that exists) only buries it.
	doubtful map[string]bool

	// unread is set when a manifest could not be read at all (not YAML, a tab, a bad indent):
	// what it declares is unknown — any module, seat, event, tool or interface — so a reference
	// nothing else answers may be answered by it, and is not reported while it is broken. The
	// manifest's own finding is the one finding (docs/rules.md, "yaml").
	unread bool
}

func (l *linter) noteDoubtful() {
	l.doubtful = map[string]bool{}
	broken := map[string]bool{}
	for _, f := range l.loaded {
		if f.Severity == catalogue.Error && strings.HasPrefix(f.Pos.File, catalogue.ModulesDir+"/") {
			broken[f.Pos.File] = true
			base := path.Base(f.Pos.File)
			l.doubtful[strings.TrimSuffix(base, path.Ext(base))] = true
		}
	}
	decoded := map[string]bool{}
	for _, m := range l.ix.Catalogue.Modules {
		decoded[m.File] = true
	}
	for file := range broken {
		l.unread = l.unread || !decoded[file]
	}
	for _, m := range l.ix.Catalogue.Modules {
		if broken[m.File] || !l.ok(m.Name) {
			l.doubtful[m.Name.Value] = true
			l.doubtful[strings.ToLower(m.Name.Value)] = true
		}
	}
}

// report records a finding of rule at pos. The rule is a value carrying its own severity: a call
// site never decides how much a rule matters.
func (l *linter) report(rule *Rule, pos catalogue.Pos, format string, args ...any) *catalogue.Finding {
	l.marked[pos] = true
	l.findings = append(l.findings, rule.At(pos, format, args...))
	return &l.findings[len(l.findings)-1]
}

// related records a finding between two places: at the later one in path order, naming the
// earlier as related.
func (l *linter) related(rule *Rule, a, b catalogue.Pos, aSays, bSays, format string, args ...any) {
	at, other, otherSays := a, b, bSays
	if a.Compare(b) < 0 {
		at, other, otherSays = b, a, aSays
	}
	f := l.report(rule, at, format, args...)
	f.Related = append(f.Related, catalogue.Related{Pos: other, Message: otherSays})
}

// ok reports whether a value has no finding yet.
func (l *linter) ok(t catalogue.Text) bool { return !l.marked[t.Pos] }

// canonical reports whether m is the manifest the index holds for its name: a duplicate holds
// nothing, and is only checked for its own values.
func (l *linter) canonical(m *catalogue.Module) bool {
	return m.Name.Value != "" && l.ix.Modules[m.Name.Value] == m
}

// running reports whether the inventory runs a module anywhere.
func (l *linter) running(module string) bool { return len(l.ix.Running[module]) > 0 }

// didYouMean is "; did you mean %q?" when near (a candidate suggest found) is one, else "".
func didYouMean(near string) string {
	if near != "" {
		return fmt.Sprintf("; did you mean %q?", catalogue.Excerpt(near))
	}
	return ""
}

// meant is " (did you mean %q?)" when near is a candidate, else "", for the middle of a sentence.
func meant(near string) string {
	if near != "" {
		return fmt.Sprintf(" (did you mean %q?)", catalogue.Excerpt(near))
	}
	return ""
}

func (l *linter) modules() *suggest.Index {
	if l.moduleNames == nil {
		l.moduleNames = suggest.NewIndex(l.validModules())
	}
	return l.moduleNames
}

func (l *linter) validModules() []string {
	return slices.DeleteFunc(sortedKeys(l.ix.Modules), func(n string) bool { return !validName(n) })
}

func (l *linter) validSeats() []string {
	return slices.DeleteFunc(sortedKeys(l.ix.Seats), func(n string) bool { return !validName(n) })
}

func (l *linter) seats() *suggest.Index {
	if l.seatNames == nil {
		l.seatNames = suggest.NewIndex(l.validSeats())
	}
	return l.seatNames
}

// emitters are every name a consumed event may start with: modules and seats.
func (l *linter) emitters() *suggest.Index {
	if l.emitterNames == nil {
		names := slices.Concat(l.validModules(), l.validSeats())
		slices.Sort(names)
		l.emitterNames = suggest.NewIndex(slices.Compact(names))
	}
	return l.emitterNames
}

// declaredKey names one list a message may quote: a module's or a seat's events, a module's tools.
type declaredKey struct {
	what, name string
}

// declaredNames is one such list, as declared, and its hints.
type declaredNames struct {
	names []string
	hints *suggest.Index
}

// declaredList gathers the list of key once per run.
func (l *linter) declaredList(key declaredKey, ts []catalogue.Text) *declaredNames {
	if d := l.declared[key]; d != nil {
		return d
	}
	if l.declared == nil {
		l.declared = map[declaredKey]*declaredNames{}
	}
	names := values(ts)
	d := &declaredNames{names: names, hints: suggest.NewIndex(names)}
	l.declared[key] = d
	return d
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// listed is how many names a message about one entry quotes of a list it cites: a module may
// declare thousands of events, and a finding at each of thousands of entries naming it, each
// quoting them all, would write a quadratic report.
const listed = 8

// some writes names as list does, the first few of a long list and how many more there are.
func some(names []string) string {
	if len(names) <= listed {
		return list(names)
	}
	return list(append(slices.Clip(names[:listed]), fmt.Sprintf("%d more", len(names)-listed)))
}

// list writes names as `a, b and c` for a message, each as an excerpt.
func list(names []string) string {
	if slices.ContainsFunc(names, func(n string) bool { return catalogue.Excerpt(n) != n }) {
		short := make([]string, len(names))
		for i, n := range names {
			short[i] = catalogue.Excerpt(n)
		}
		names = short
	}
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func values(ts []catalogue.Text) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Value
	}
	return out
}

// declarer says who declared a seat, for a message.
func declarer(s *catalogue.Seat) string {
	if s.Role() {
		return "mesh.yaml's roles"
	}
	return "module " + s.Declarer.Name.Value
}
