package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/meshc-dev/meshc/lint"
)

var updateREADME = flag.Bool("update-readme", false, "rewrite the README's rule table from lint.Rules")

// The README's rule table is rendered from lint.Rules, the table that also drives `meshc lint
// --list` and the SARIF metadata, so the three cannot drift apart.
func TestREADMERuleTableMatchesTheRules(t *testing.T) {
	const begin, end = "<!-- rules: generated from lint.Rules by `go test ./cmd/meshc -update-readme` -->\n", "<!-- /rules -->"
	var b strings.Builder
	b.WriteString("| rule | severity | catches | why it exists |\n| --- | --- | --- | --- |\n")
	for _, r := range lint.Rules {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.ID, r.Severity, r.Summary, strings.ReplaceAll(r.Why, "|", `\|`))
	}
	want := b.String()

	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	i, j := strings.Index(readme, begin), strings.Index(readme, end)
	if i < 0 || j < i {
		t.Fatalf("README.md has no rule table between %q and %q", begin, end)
	}
	got := readme[i+len(begin) : j]
	if got == want {
		return
	}
	if *updateREADME {
		if err := os.WriteFile("../../README.md", []byte(readme[:i+len(begin)]+want+readme[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the README's rule table is stale; run `go test ./cmd/meshc -run TestREADME -update-readme`")
}
