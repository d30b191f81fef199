package lint

import (
	"slices"
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
			e := r.Example
			if slices.Contains(compilerRules, r.ID) {
				if e.Before != "" {
					t.Errorf("%s has an example, but TestEveryRuleFires says no catalogue fires it: test the example", r.ID)
				}
				return
			}
			if e.Before == "" || e.After == "" {
				t.Fatalf("%s has no example: add one to lint/examples.go", r.ID)
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
