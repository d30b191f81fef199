package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/meshc-dev/meshc/lint"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the generated text of README.md and docs/commands.md: the rule table, the commands, their flags, verify's classes")

// The README's rule table is rendered from lint.Rules, the table that also drives `meshc lint
// --list` and the SARIF metadata, so the three cannot drift apart.
func TestREADMERuleTableMatchesTheRules(t *testing.T) {
	t.Parallel()
	const begin, end = "<!-- rules: generated from lint.Rules by `go test ./cmd/meshc -update-docs` -->\n", "<!-- /rules -->"
	var b strings.Builder
	b.WriteString("| rule | severity | catches | why it exists |\n| --- | --- | --- | --- |\n")
	for _, r := range lint.Rules {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.ID, r.Severity, r.Summary, strings.ReplaceAll(r.Why, "|", `\|`))
	}
	generatedIn(t, "README.md", begin, end, b.String(), "the README's rule table is stale; run `go test ./cmd/meshc -run TestREADME -update-docs`")
}

// generatedIn requires the text between begin and end of page (a path from the repository's
// root) to be want, and rewrites it with -update-docs; stale is what to say when it differs.
func generatedIn(t *testing.T, page, begin, end, want, stale string) {
	t.Helper()
	path := "../../" + page
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no generated text between %q and %q", page, begin, end)
	}
	if text[i+len(begin):j] == want {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(path, []byte(text[:i+len(begin)]+want+text[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s\n%s", stale, lineDiff(text[i+len(begin):j], want))
}

// lineDiff says, line by line, what a generated text has that it should not (-) and lacks (+).
func lineDiff(have, want string) string {
	var b strings.Builder
	hl, wl := strings.Split(have, "\n"), strings.Split(want, "\n")
	for _, l := range hl {
		if !slices.Contains(wl, l) {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range wl {
		if !slices.Contains(hl, l) {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}

// Every ref of meshc the documentation tells a user to name — `meshc-dev/meshc@REF` in a
// workflow, `cmd/meshc@REF` to go install, `rev: REF` in a pre-commit configuration — exists in
// this repository (or is main, or @latest): a copied workflow naming a tag that was never made
// fails on its first run.
func TestNamedMeshcRefsExist(t *testing.T) {
	t.Parallel()
	named := regexp.MustCompile(`(?:meshc-dev/meshc@|cmd/meshc@|\brev:\s+)([A-Za-z0-9._/<>-]+)`)
	for _, file := range []string{"../../README.md", "../../docs/commands.md", "../../examples/github/meshc.yml", "../../.pre-commit-hooks.yaml", "../../action.yml"} {
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

// The relative $schema lines docs/commands.md shows ("In your editor") resolve, from the file each is written in, to the schema
// `meshc schema --out .schema` writes for that file: a path that is right in modules/ is wrong
// one directory deeper.
func TestTheCommandsPagesSchemaPathsResolve(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../docs/commands.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([^`]+\\.yaml)` \\| `# yaml-language-server: \\$schema=([^`]+)` \\|$")
	rows := row.FindAllStringSubmatch(string(data), -1)
	if len(rows) < 4 {
		t.Fatalf("docs/commands.md's table of relative $schema lines has %d rows", len(rows))
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
			t.Errorf("docs/commands.md names %s from %s, which resolves to %s, not %s", rel, file, got, want)
		}
	}
	if !deeper {
		t.Error("docs/commands.md shows no manifest in a subdirectory of modules/")
	}
}
