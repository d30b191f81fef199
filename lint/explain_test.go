package lint

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/rules.md from Rules")

// docs/rules.md is written from the rule table, so the page SARIF links to says what lint does.
func TestRulesPageIsCurrent(t *testing.T) {
	var b strings.Builder
	if err := RulesPage(&b); err != nil {
		t.Fatal(err)
	}
	const page = "../docs/rules.md"
	got, _ := os.ReadFile(page)
	if string(got) == b.String() {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(page, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/rules.md is stale; run `go test ./lint -run TestRulesPage -update-docs`")
}

// Every rule has a section whose anchor is its id, the helpUri SARIF gives it.
func TestRulesPageHasASectionPerRule(t *testing.T) {
	var b strings.Builder
	RulesPage(&b)
	for _, r := range Rules {
		if !strings.Contains(b.String(), "\n## "+r.ID+"\n") {
			t.Errorf("no section for %s", r.ID)
		}
	}
}
