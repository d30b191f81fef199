package examples

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshc-dev/meshc/catalogue"
)

// Every file of the example names its JSON Schema on its first line, as the README tells users
// to: copying a manifest copies the editor's checking with it. The name must be one meshc
// publishes, so the line cannot point at a schema that does not exist.
func TestExampleFilesNameTheirSchema(t *testing.T) {
	const modeline = "# yaml-language-server: $schema=" + catalogue.SchemaBase
	published := map[string]bool{}
	for _, s := range catalogue.Schemas() {
		published[s.Name] = true
	}
	checked := 0
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || filepath.Ext(p) != ".yaml" {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		want := map[string]string{"mesh.yaml": "mesh.schema.json", "inventory.yaml": "inventory.schema.json"}[rel]
		if strings.HasPrefix(rel, "modules/") {
			want = "module.schema.json"
		}
		if want == "" {
			return nil // credentials.yaml is meshc mint's to write
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		first, _, _ := strings.Cut(string(data), "\n")
		if first != modeline+want {
			t.Errorf("%s: first line is %q, want %q", rel, first, modeline+want)
		}
		if !published[want] {
			t.Errorf("%s names %s, which meshc does not publish", rel, want)
		}
		checked++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 3 {
		t.Fatalf("only %d files checked", checked)
	}
}
