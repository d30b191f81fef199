package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"regexp"
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
	generatedInREADME(t, begin, end, b.String(), "the README's rule table is stale; run `go test ./cmd/meshc -run TestREADME -update-readme`")
}

// generatedInREADME requires the README's text between begin and end to be want, and rewrites it
// with -update-readme; stale is what to say when it differs.
func generatedInREADME(t *testing.T, begin, end, want, stale string) {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	i, j := strings.Index(readme, begin), strings.Index(readme, end)
	if i < 0 || j < i {
		t.Fatalf("README.md has no generated text between %q and %q", begin, end)
	}
	if readme[i+len(begin):j] == want {
		return
	}
	if *updateREADME {
		if err := os.WriteFile("../../README.md", []byte(readme[:i+len(begin)]+want+readme[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Error(stale)
}

// Every ref of meshc the documentation tells a user to name — `meshc-dev/meshc@REF` in a
// workflow, `cmd/meshc@REF` to go install, `rev: REF` in a pre-commit configuration — exists in
// this repository (or is main, or @latest): a copied workflow naming a tag that was never made
// fails on its first run.
func TestNamedMeshcRefsExist(t *testing.T) {
	named := regexp.MustCompile(`(?:meshc-dev/meshc@|cmd/meshc@|\brev:\s+)([A-Za-z0-9._/<>-]+)`)
	for _, file := range []string{"../../README.md", "../../examples/github/meshc.yml", "../../.pre-commit-hooks.yaml", "../../action.yml"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range named.FindAllStringSubmatch(string(data), -1) {
			ref := m[1]
			if ref == "main" || ref == "latest" || ref == "<sha>" {
				continue
			}
			if err := exec.Command("git", "rev-parse", "--verify", "--quiet", ref+"^{commit}").Run(); err != nil {
				t.Errorf("%s names meshc at %q (%s), which this repository does not have", file, ref, m[0])
			}
		}
	}
}

// The README's relative $schema lines resolve, from the file each is written in, to the schema
// `meshc schema --out .schema` writes for that file: a path that is right in modules/ is wrong
// one directory deeper.
func TestREADMESchemaPathsResolve(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([^`]+\\.yaml)` \\| `# yaml-language-server: \\$schema=([^`]+)` \\|$")
	rows := row.FindAllStringSubmatch(string(data), -1)
	if len(rows) < 4 {
		t.Fatalf("the README's table of relative $schema lines has %d rows", len(rows))
	}
	deeper := false
	for _, r := range rows {
		file, rel := r[1], r[2]
		want := ".schema/" + map[string]string{"mesh.yaml": "mesh.schema.json", "inventory.yaml": "inventory.schema.json"}[file]
		if strings.HasPrefix(file, "modules/") {
			want = ".schema/module.schema.json"
			deeper = deeper || strings.Count(file, "/") > 1
		}
		if got := path.Join(path.Dir(file), rel); got != want {
			t.Errorf("the README names %s from %s, which resolves to %s, not %s", rel, file, got, want)
		}
	}
	if !deeper {
		t.Error("the README shows no manifest in a subdirectory of modules/")
	}
}
