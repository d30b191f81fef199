package examples

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/modules.md's example blocks from the files they show")

// modulesPage is the page that shows the module examples.
const modulesPage = "../docs/modules.md"

// exampleBlock is a block of docs/modules.md showing a file whole: the marker naming the file
// (relative to examples/), then the fenced block. A marker with no block under it gets one.
var exampleBlock = regexp.MustCompile("(?m)^<!-- example: (\\S+) -->\n(?:```[a-z]*\n(?s:.*?)\n?```\n)?")

// TestTheModulesPageShowsTheExamples holds every block of docs/modules.md to the file it names,
// so the code a reader copies is the code TestTheModulesPageRunsOnABus runs; `go test ./examples
// -run TestTheModulesPageShowsTheExamples -update` rewrites the blocks from the files. Each
// example file is shown somewhere on the page.
func TestTheModulesPageShowsTheExamples(t *testing.T) {
	page, err := os.ReadFile(modulesPage)
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]bool{}
	lang := map[string]string{".go": "go", ".mjs": "js"}
	rewritten := exampleBlock.ReplaceAllStringFunc(string(page), func(block string) string {
		name := exampleBlock.FindStringSubmatch(block)[1]
		data, err := os.ReadFile(filepath.FromSlash(name))
		if err != nil {
			t.Errorf("docs/modules.md shows %s: %v", name, err)
			return block
		}
		if shown[name] {
			return "<!-- example: " + name + " -->\n" // shown once, above: named again, not repeated
		}
		shown[name] = true
		return "<!-- example: " + name + " -->\n```" + lang[filepath.Ext(name)] + "\n" + strings.TrimSuffix(string(data), "\n") + "\n```\n"
	})
	for _, dir := range []string{"modules/go", "modules/js"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, f := range files {
			if ext := filepath.Ext(f); (ext == ".go" && !strings.HasSuffix(f, "_test.go")) || ext == ".mjs" {
				if !shown[filepath.ToSlash(f)] {
					t.Errorf("docs/modules.md does not show %s", f)
				}
			}
		}
	}
	if rewritten == string(page) {
		return
	}
	if *update {
		if err := os.WriteFile(modulesPage, []byte(rewritten), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/modules.md's example blocks differ from the files they show: run `go test ./examples -run TestTheModulesPageShowsTheExamples -update`")
}
