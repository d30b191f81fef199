package lint

import (
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// fired lints an example (against its base, for a breaking rule) and returns the rule ids whose
// findings are reported: not silenced, and not approved.
func fired(t *testing.T, base, head string) []string {
	t.Helper()
	var ids []string
	if base != "" {
		a := Against{Base: loadSide(t, txtar.Parse([]byte(base))), Head: loadSide(t, txtar.Parse([]byte(head)))}
		bs := Breaks(a)
		for _, b := range bs {
			if b.Approval == nil {
				ids = append(ids, b.Rule)
			}
		}
		for _, f := range UnmatchedApprovals(a, bs) {
			ids = append(ids, f.Rule)
		}
		return ids
	}
	for _, f := range lintArchive(t, txtar.Parse([]byte(head))) {
		if f.Suppressed == nil {
			ids = append(ids, f.Rule)
		}
	}
	return ids
}

// Every rule's example is honest: its Before fires the rule and its After does not, so what
// `meshc explain` and docs/rules.md show is what lint does.
func TestExamplesAreHonest(t *testing.T) {
	for _, r := range Rules {
		t.Run(r.ID, func(t *testing.T) {
			e, err := ExampleOf(r)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(compilerRules, r.ID) {
				if e.Before != "" {
					t.Errorf("%s has an example, but TestEveryRuleFires says no catalogue fires it: test the example", r.ID)
				}
				return
			}
			if e.Before == "" || e.After == "" {
				t.Fatalf("%s has no example: add lint/examples/%s.txtar, the catalogue that fires it under before/ and fixed under after/", r.ID, r.ID)
			}
			if ids := fired(t, e.Base, e.Before); !slices.Contains(ids, r.ID) {
				t.Errorf("Before does not fire %s; it fires %v", r.ID, ids)
			}
			if ids := fired(t, e.Base, e.After); slices.Contains(ids, r.ID) {
				t.Errorf("After still fires %s", r.ID)
			}
		})
	}
}

// Every example archive is a rule's: a file named for no rule (a rule renamed, a typo) would
// never be shown or linted.
func TestEveryExampleIsARules(t *testing.T) {
	files, err := examples.ReadDir("examples")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("%d example archives embedded: the embedding is broken", len(files))
	}
	for _, f := range files {
		if id, ok := strings.CutSuffix(f.Name(), ".txtar"); !ok || Lookup(id) == nil {
			t.Errorf("examples/%s is no rule's example: name it RULE.txtar after a rule of lint.Rules", f.Name())
		}
	}
}
