package lint

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/synth"
)

// The rule tests are catalogues in testdata/rules/*.txtar whose offending lines say what they
// expect (cataloguetest's `# want` comments):
//
//	emits: [Built]   # want @Built "name: not an event name"
//
// Every finding must be wanted and every want found: a check that fires where it should not is
// caught as surely as one that stays quiet where it should fire.

// lintArchive lays out an archive as a catalogue and lints it.
func lintArchive(t *testing.T, a *txtar.Archive) catalogue.Findings {
	t.Helper()
	dir := cataloguetest.Write(t, a)
	c, loaded, err := catalogue.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return Run(c, loaded)
}

// check asserts that findings are exactly the wanted ones, each with its rule's severity.
func check(t *testing.T, findings catalogue.Findings, wants []*cataloguetest.Want) {
	t.Helper()
	for _, f := range findings {
		if r := Lookup(f.Rule); f.Suppressed == nil && (r == nil || r.Severity != f.Severity) {
			t.Errorf("%s: severity %v is not the rule table's", f, f.Severity)
		}
	}
	cataloguetest.Check(t, findings, wants)
}

func TestRules(t *testing.T) {
	archives, err := filepath.Glob("testdata/rules/*.txtar")
	if err != nil || len(archives) == 0 {
		t.Fatalf("no rule tests in testdata: %v", err)
	}
	for _, path := range archives {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			a, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			check(t, lintArchive(t, a), cataloguetest.Wants(t, a))
		})
	}
}

// compilerRules are the rules whose findings come from the compiled plan, tested there: no
// catalogue with valid names derives overlapping streams (stream-overlap's firing case is
// compiler.TestStreamOverlap), and only a thousand modules make an account JWT over the server's
// cap (jwt-too-large's is compiler.TestAnAccountOverTheJWTCapIsAFinding).
var compilerRules = []string{"stream-overlap", "jwt-too-large"}

// TestEveryRuleFires guards the claim that a check that cannot fail is worse than none: every
// rule lint implements is wanted somewhere in testdata. (That each is also quiet is what the
// same archives prove, since every finding in them must be wanted.)
func TestEveryRuleFires(t *testing.T) {
	archives, _ := filepath.Glob("testdata/rules/*.txtar")
	against, _ := filepath.Glob("testdata/against/*.txtar")
	archives = append(archives, against...)
	wanted := map[string]bool{}
	for _, path := range archives {
		a, err := txtar.ParseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range cataloguetest.Wants(t, a) {
			wanted[w.Rule] = true
		}
	}
	for _, r := range Rules {
		if !slices.Contains(compilerRules, r.ID) && !wanted[r.ID] {
			t.Errorf("rule %s is never made to fire in testdata", r.ID)
		}
	}
}

// The grammars of docs/catalogue.md, "Names", written as byte loops, checked against the
// expressions the JSON Schemas carry (catalogue's Grammar values): lint and an editor judge a
// name alike.
func TestGrammarsMatchTheirExpressions(t *testing.T) {
	name := regexp.MustCompile(catalogue.NameGrammar.Pattern)
	token := regexp.MustCompile(catalogue.TokenGrammar.Pattern)
	event := regexp.MustCompile(catalogue.EventGrammar.Pattern)
	for _, v := range []string{"", "a", "a-b", "a_b", "A", "1a", "a1", "-a", "_a", "a.b", "a b", "é", "a*", "mesh-broker",
		"node-x", "UPPER", "x-", "0", "a--b", strings.Repeat("a", 63), strings.Repeat("a", 64)} {
		if got, want := validName(v), len(v) <= 63 && name.MatchString(v); got != want {
			t.Errorf("validName(%q) = %v, want %v", v, got, want)
		}
		if got, want := validToken(v), token.MatchString(v); got != want {
			t.Errorf("validToken(%q) = %v, want %v", v, got, want)
		}
		for _, e := range []string{v, v + ".x", "x." + v, v + "." + v} {
			if got, want := validEvent(e), event.MatchString(e); got != want {
				t.Errorf("validEvent(%q) = %v, want %v", e, got, want)
			}
		}
	}
}

// Every rule in the table has an id of its own: findings name rules by id, and two rules with one
// id would share a severity and a description in SARIF.
func TestRuleIDsAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Rules {
		if r.ID == "" || seen[r.ID] || r.Summary == "" || r.Why == "" {
			t.Errorf("rule %+v: empty, or its id is taken", r)
		}
		seen[r.ID] = true
	}
}

// The breaking-change tests are archives in testdata/against/*.txtar holding two catalogues,
// base/ and head/; the head's files carry the `# want` expectations of what the change breaks.
// Base positions are shown as base/FILE.
func TestBreaks(t *testing.T) {
	archives, err := filepath.Glob("testdata/against/*.txtar")
	if err != nil || len(archives) == 0 {
		t.Fatalf("no breaking-change tests in testdata: %v", err)
	}
	for _, path := range archives {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			a, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			against := againstOf(t, a)
			breaks := Breaks(against)
			var findings catalogue.Findings
			for _, b := range breaks {
				if b.Approval != nil {
					continue // TestApprovedBreaks
				}
				findings = append(findings, b.Finding)
			}
			findings = append(findings, UnmatchedApprovals(against, breaks)...)
			check(t, findings, cataloguetest.Wants(t, side(a, "head/")))
		})
	}
}

// side is the part of an archive under prefix, with the prefix taken off.
func side(a *txtar.Archive, prefix string) *txtar.Archive {
	out := &txtar.Archive{}
	for _, f := range a.Files {
		if name, ok := strings.CutPrefix(f.Name, prefix); ok {
			out.Files = append(out.Files, txtar.File{Name: name, Data: f.Data})
		}
	}
	return out
}

func loadSide(t *testing.T, a *txtar.Archive) Side {
	t.Helper()
	c, loaded, err := catalogue.Load(cataloguetest.Write(t, a))
	if err != nil {
		t.Fatal(err)
	}
	if loaded.HasErrors() {
		t.Fatalf("the test catalogue does not load: %v", loaded)
	}
	ix := catalogue.NewIndex(c)
	p, _ := compiler.Compile(ix)
	return Side{Index: ix, Plan: p}
}

func againstOf(t *testing.T, a *txtar.Archive) Against {
	t.Helper()
	return Against{
		Base: loadSide(t, side(a, "base/")), Head: loadSide(t, side(a, "head/")),
		BasePos: func(p catalogue.Pos) catalogue.Pos { p.File = "base/" + p.File; return p },
	}
}

func breaksOf(t *testing.T, a *txtar.Archive) []Break {
	t.Helper()
	return Breaks(againstOf(t, a))
}

// An approval in the head's mesh.yaml accepts the break it names, and only that one: the
// finding stays, as info, saying where and why it was approved.
func TestApprovedBreaks(t *testing.T) {
	a := txtar.Parse([]byte(`-- base/mesh.yaml --
name: novox
streams:
  events: {max-age: 720h}
  nodes: {max-age: 720h}
-- base/modules/m.yaml --
module: m
-- head/mesh.yaml --
name: novox
streams:
  events: {max-age: 24h}
  nodes: {max-age: 24h, storage: memory}
approve:
  - {rule: retention, on: EVENTS, from: max-age 720h, to: "max-age  24h", reason: events older than a day are never read}
  - {rule: replay, on: NODES, reason: the wrong rule approves nothing}
-- head/modules/m.yaml --
module: m
`))
	breaks := breaksOf(t, a)
	var approved, open []string
	for _, b := range breaks {
		if b.Approval != nil {
			approved = append(approved, b.On)
		} else {
			open = append(open, b.On)
		}
	}
	if !slices.Equal(approved, []string{"EVENTS"}) || !slices.Equal(open, []string{"NODES", "NODES"}) {
		t.Fatalf("approved %v, open %v", approved, open)
	}
	findings := BreakFindings(breaks)
	var events, replace catalogue.Finding
	for _, f := range findings {
		if strings.Contains(f.Message, "stream EVENTS") {
			events = f
		}
		if strings.Contains(f.Message, "must be replaced") {
			replace = f
		}
	}
	if events.Severity != catalogue.Info || !strings.Contains(events.Message, "approved in mesh.yaml:6:5: events older than a day are never read") {
		t.Errorf("approved finding: %s", events)
	}
	if replace.Severity != catalogue.Error || !strings.Contains(replace.Message, "stream NODES must be replaced (storage cannot change in place)") {
		t.Errorf("replace finding: %s", replace)
	}
}

// The loader wants all three parts of an approval.
func TestApprovalNeedsRuleOnAndReason(t *testing.T) {
	a := txtar.Parse([]byte(`-- mesh.yaml --
name: novox
approve:
  - {rule: retention, on: EVENTS}   # want @{ "yaml: an approval needs reason"
  - {rule: retention, on: EVENTS, reason: fine, because: x}   # want @because "yaml: unknown key"
# want-file "credential-missing: the catalogue has no credentials.yaml"
-- modules/m.yaml --
module: m
`))
	check(t, lintArchive(t, a), cataloguetest.Wants(t, a))
}

// Run asks the compiler for its findings alone (compiler.Findings), Check for the whole plan:
// the two report the same findings, byte for byte, on every rule archive (firing and quiet, every
// isolation and auth, operator mode's account keys included), the example mesh in both
// isolations, and synthetic meshes, so leaving the plan out never drops a finding.
func TestFindingsAreCompilesFindings(t *testing.T) {
	type lintable struct {
		c      *catalogue.Catalogue
		loaded catalogue.Findings
	}
	cases := map[string]lintable{}
	archives, _ := filepath.Glob("testdata/rules/*.txtar")
	for _, path := range archives {
		a, err := txtar.ParseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		c, loaded, err := catalogue.Load(cataloguetest.Write(t, a))
		if err != nil {
			t.Fatal(err)
		}
		cases[path] = lintable{c, loaded}
	}
	for _, isolation := range []string{catalogue.IsolationShared, catalogue.IsolationPerModule} {
		c, loaded, err := catalogue.Load("../examples/mesh")
		if err != nil {
			t.Fatal(err)
		}
		c.Mesh.Isolation.Value = isolation
		cases["examples/mesh, "+isolation] = lintable{c, loaded}
	}
	// In operator mode with no keys recorded: every account the isolated mesh derives is named
	// as missing its key, which needs the accounts the plan alone would otherwise hold.
	c, loaded, err := catalogue.Load("../examples/mesh")
	if err != nil {
		t.Fatal(err)
	}
	c.Mesh.Auth.Value = catalogue.AuthOperator
	cases["examples/mesh, operator mode"] = lintable{c, loaded}
	for _, n := range []int{50, 400} {
		dir := t.TempDir()
		if err := synth.Write(dir, n, 1); err != nil {
			t.Fatal(err)
		}
		c, loaded, err := catalogue.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		cases[fmt.Sprintf("synthetic, %d modules", n)] = lintable{c, loaded}
	}
	operator := false
	for name, x := range cases {
		operator = operator || x.c.Mesh.Auth.Value == catalogue.AuthOperator
		checked, _ := Check(x.c, x.loaded)
		if run := Run(x.c, x.loaded); !slices.EqualFunc(run, checked, func(a, b catalogue.Finding) bool {
			return a.String() == b.String() && fmt.Sprint(a.Related) == fmt.Sprint(b.Related)
		}) {
			t.Errorf("%s: Run found\n%v\nCheck found\n%v", name, run, checked)
		}
	}
	if !operator {
		t.Error("no case is in operator mode, where the accounts are derived for their keys' findings")
	}
}
