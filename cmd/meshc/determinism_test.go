package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aymanbagabas/go-udiff"
	"go.yaml.in/yaml/v3"
)

// The same catalogue gives the same bytes whatever the order of its files, its lists and its
// keys: the example is copied twice, the second time with every module file renamed (so path
// order changes) and every list and mapping in every file written in reverse, and both copies
// emit byte-identical golden files. The server reloads on the accounts file's digest, so an
// order-dependent emit would reload the whole bus for nothing.
func TestEmitIgnoresFileListAndKeyOrder(t *testing.T) {
	straight := copyCatalogue(t, "../../examples/mesh", false)
	shuffled := copyCatalogue(t, "../../examples/mesh", true)
	for _, dir := range []string{straight, shuffled} {
		if code, _, errs := meshc(t, "emit", dir, "-o", filepath.Join(dir, "out")); code != 0 {
			t.Fatalf("emit %s: %d %s", dir, code, errs)
		}
	}
	for _, name := range []string{"accounts.conf", "plan.json", "permissions.md"} {
		a, _ := os.ReadFile(filepath.Join(straight, "out", name))
		b, _ := os.ReadFile(filepath.Join(shuffled, "out", name))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s differs between the catalogue and the same catalogue reordered (%d vs %d bytes)", name, len(a), len(b))
		}
	}
	// And they are the committed golden files: CI's --check proves the same from the other side.
	for _, name := range []string{"accounts.conf", "plan.json"} {
		a, _ := os.ReadFile(filepath.Join(straight, "out", name))
		g, _ := os.ReadFile(filepath.Join("../../examples/mesh/golden", name))
		if !bytes.Equal(a, g) {
			t.Errorf("%s differs from the example's committed golden file", name)
		}
	}
}

// copyCatalogue copies a catalogue's YAML files into a temporary directory; reorder renames
// every module file and reverses every list and mapping.
func copyCatalogue(t *testing.T, from string, reorder bool) string {
	t.Helper()
	to := t.TempDir()
	i := 0
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if reorder {
			if strings.HasPrefix(rel, "modules"+string(filepath.Separator)) {
				i++
				rel = filepath.Join("modules", fmt.Sprintf("z%02d", 99-i), fmt.Sprintf("m%d.yaml", i))
			}
			var doc yaml.Node
			if err := yaml.Unmarshal(data, &doc); err != nil {
				return err
			}
			reverse(&doc)
			if data, err = yaml.Marshal(&doc); err != nil {
				return err
			}
		}
		dst := filepath.Join(to, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return to
}

func reverse(n *yaml.Node) {
	switch n.Kind {
	case yaml.SequenceNode:
		for i, j := 0, len(n.Content)-1; i < j; i, j = i+1, j-1 {
			n.Content[i], n.Content[j] = n.Content[j], n.Content[i]
		}
	case yaml.MappingNode:
		var pairs [][2]*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			pairs = append([][2]*yaml.Node{{n.Content[i], n.Content[i+1]}}, pairs...)
		}
		n.Content = n.Content[:0]
		for _, p := range pairs {
			n.Content = append(n.Content, p[0], p[1])
		}
	}
	for _, c := range n.Content {
		reverse(c)
	}
}

// Golden files are reviewed as diffs, so one changed manifest changes few lines: the catalog of
// the example starts consuming one more event, and across the three files only the lines about
// that event move (a filter in plan.json and in the review's consumer row; nothing in
// accounts.conf, since the consumer's grants do not depend on its filters).
func TestOneChangedManifestChangesFewGoldenLines(t *testing.T) {
	dir := copyCatalogue(t, "../../examples/mesh", false)
	before := filepath.Join(dir, "before")
	if code, _, errs := meshc(t, "emit", dir, "-o", before); code != 0 {
		t.Fatalf("emit: %d %s", code, errs)
	}
	manifest := filepath.Join(dir, "modules", "apps", "catalog.yaml")
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(data), "  - registry.image.deleted\n", "  - registry.image.deleted\n  - photos.album.shared\n", 1)
	if changed == string(data) {
		t.Fatal("the example's catalog manifest no longer has the line this test edits")
	}
	if err := os.WriteFile(manifest, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	after := filepath.Join(dir, "after")
	if code, _, errs := meshc(t, "emit", dir, "-o", after); code != 0 {
		t.Fatalf("emit after the change: %d %s", code, errs)
	}
	total := 0
	for _, name := range []string{"accounts.conf", "plan.json", "permissions.md"} {
		a, _ := os.ReadFile(filepath.Join(before, name))
		b, _ := os.ReadFile(filepath.Join(after, name))
		n := changedLines(string(a), string(b))
		t.Logf("%s: %d line(s) changed", name, n)
		total += n
	}
	if total == 0 || total > 4 {
		t.Fatalf("one added consumed event changed %d golden lines; want a handful (1-4)", total)
	}
}

// changedLines counts the lines a unified diff adds or removes.
func changedLines(a, b string) int {
	n := 0
	for _, line := range strings.Split(udiff.Unified("a", "b", a, b), "\n") {
		if (strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-")) && !strings.HasPrefix(line, "+++") && !strings.HasPrefix(line, "---") {
			n++
		}
	}
	return n
}
