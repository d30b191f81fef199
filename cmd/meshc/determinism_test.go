package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aymanbagabas/go-udiff"
	"go.yaml.in/yaml/v3"
)

// The same catalogue gives the same bytes, emitted twice and whatever the order of its files, its
// lists and its keys: the example is copied twice, the second time with its module files renamed so
// that the loader reads them in the reverse order, and every list and mapping in every file written
// in reverse. Each copy is emitted, the first twice, and every golden file of every emit is the
// committed one. The server reloads on the accounts file's digest, so an order-dependent emit would
// reload the whole bus for nothing.
func TestEmitIgnoresFileListAndKeyOrder(t *testing.T) {
	t.Parallel()
	straight := copyCatalogue(t, "../../examples/mesh", false)
	shuffled := copyCatalogue(t, "../../examples/mesh", true)
	// The copy is reordered as promised, or the comparison below proves nothing: the loader reads
	// its module files in the reverse order, and each file is its original mirrored.
	files, moved := copiedFiles(t, straight, "modules/"), copiedFiles(t, shuffled, "modules/")
	if len(files) < 2 || len(moved) != len(files) {
		t.Fatalf("the example has %d module files, the reordered copy %d", len(files), len(moved))
	}
	for i := range moved {
		if moved[i].from != files[len(files)-1-i].from {
			t.Fatalf("the reordered copy reads %s in place %d: not the example's files in reverse", moved[i].from, i)
		}
	}
	for _, f := range copiedFiles(t, shuffled, "") {
		var a, b yaml.Node
		readYAML(t, filepath.Join("../../examples/mesh", f.from), &a)
		readYAML(t, filepath.Join(shuffled, f.to), &b)
		if !mirrored(&a, &b) {
			t.Errorf("%s is not %s with every list and mapping in reverse", f.to, f.from)
		}
	}
	emitted := []string{filepath.Join(t.TempDir(), "straight"), filepath.Join(t.TempDir(), "again"), filepath.Join(t.TempDir(), "shuffled")}
	for i, dir := range []string{straight, straight, shuffled} {
		if code, _, errs := meshc(t, "emit", dir, "-o", emitted[i]); code != 0 {
			t.Fatalf("emit %s: %d %s", dir, code, errs)
		}
	}
	for _, name := range []string{"accounts.conf", "plan.json", "permissions.md"} {
		golden, err := os.ReadFile(filepath.Join("../../examples/mesh/golden", name))
		if err != nil || len(golden) == 0 {
			t.Fatalf("the example's golden %s: %v", name, err)
		}
		for _, out := range emitted {
			if b, _ := os.ReadFile(filepath.Join(out, name)); !bytes.Equal(b, golden) {
				t.Errorf("%s emitted as %s differs from the example's committed golden file (%d vs %d bytes)", name, filepath.Base(out), len(b), len(golden))
			}
		}
	}
}

// copied is one file of a copied catalogue: where it came from and where it went.
type copied struct{ from, to string }

// copiedFiles are the files of a copy whose new path starts with prefix, in the order the loader
// reads them (by path).
func copiedFiles(t *testing.T, dir, prefix string) []copied {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, copyLog))
	if err != nil {
		t.Fatal(err)
	}
	var out []copied
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		from, to, _ := strings.Cut(line, "\t")
		if strings.HasPrefix(to, prefix) {
			out = append(out, copied{from, to})
		}
	}
	slices.SortFunc(out, func(a, b copied) int { return strings.Compare(a.to, b.to) })
	return out
}

// copyLog is the file copyCatalogue notes what it copied in, a line a file: from, a tab, to. The
// loader reads only .yaml files, so the catalogue does not see it.
const copyLog = "copied.log"

func readYAML(t *testing.T, path string, n *yaml.Node) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err == nil {
		err = yaml.Unmarshal(data, n)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// mirrored reports whether b is a with every list and mapping in reverse.
func mirrored(a, b *yaml.Node) bool {
	if a.Kind != b.Kind || a.Value != b.Value || len(a.Content) != len(b.Content) {
		return false
	}
	n := len(a.Content)
	for i := range a.Content {
		j := i
		switch a.Kind {
		case yaml.SequenceNode:
			j = n - 1 - i
		case yaml.MappingNode:
			j = n - 2 - i + 2*(i%2) // pair k reversed, key before value
		}
		if !mirrored(a.Content[i], b.Content[j]) {
			return false
		}
	}
	return true
}

// copyCatalogue copies a catalogue's YAML files into a temporary directory; reorder renames
// every module file, in reverse order, and reverses every list and mapping.
func copyCatalogue(t *testing.T, from string, reorder bool) string {
	t.Helper()
	to := t.TempDir()
	var log strings.Builder
	i := 0
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		rel = filepath.ToSlash(rel)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := rel
		if reorder {
			if strings.HasPrefix(rel, "modules/") {
				i++
				dst = path.Join("modules", fmt.Sprintf("z%02d", 99-i), fmt.Sprintf("m%d.yaml", i))
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
		fmt.Fprintf(&log, "%s\t%s\n", rel, dst)
		full := filepath.Join(to, filepath.FromSlash(dst))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		return os.WriteFile(full, data, 0o644)
	})
	if err == nil {
		err = os.WriteFile(filepath.Join(to, copyLog), []byte(log.String()), 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	return to
}

// reverse writes every list and mapping under n in reverse.
func reverse(n *yaml.Node) {
	switch n.Kind {
	case yaml.SequenceNode:
		slices.Reverse(n.Content)
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
// that event move: a filter in plan.json and the consumer's row in permissions.md, and nothing
// in accounts.conf, since the consumer's grants do not depend on its filters.
func TestOneChangedManifestChangesFewGoldenLines(t *testing.T) {
	t.Parallel()
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
	const subject = "mesh.mod.photos.event.album.shared"
	total := 0
	for _, f := range []struct {
		name  string
		moves bool
	}{{"accounts.conf", false}, {"plan.json", true}, {"permissions.md", true}} {
		a, _ := os.ReadFile(filepath.Join(before, f.name))
		b, _ := os.ReadFile(filepath.Join(after, f.name))
		lines := changedLines(string(a), string(b))
		t.Logf("%s: %d line(s) changed", f.name, len(lines))
		total += len(lines)
		if f.moves != (len(lines) > 0) {
			t.Errorf("%s: %d line(s) changed, want them to move: %v", f.name, len(lines), f.moves)
		}
		// Each line added names the event, and each removed is one of them without it: the
		// consumer's row as it was.
		var added []string
		for _, l := range lines {
			if l[0] == '+' {
				added = append(added, l[1:])
				if !strings.Contains(l, subject) {
					t.Errorf("%s: a line not about %s was added: %s", f.name, subject, l)
				}
			}
		}
		for _, l := range lines {
			if l[0] == '-' && !slices.ContainsFunc(added, func(a string) bool { return onlyAdds(l[1:], a, subject) }) {
				t.Errorf("%s: a line went that no line with %s replaces: %s", f.name, subject, l)
			}
		}
	}
	if total > 4 {
		t.Fatalf("one added consumed event changed %d golden lines; want a handful (1-4)", total)
	}
}

// onlyAdds reports whether line after is line before with word added and nothing else changed,
// read as words between code spans, cell bars, line breaks and spaces.
func onlyAdds(before, after, word string) bool {
	words := func(s string) map[string]int {
		n := map[string]int{}
		for _, w := range strings.FieldsFunc(strings.ReplaceAll(s, "<br>", " "), func(r rune) bool { return strings.ContainsRune("`| \t\",[]", r) }) {
			n[w]++
		}
		return n
	}
	b, a := words(before), words(after)
	if a[word]--; a[word] == 0 {
		delete(a, word)
	}
	return maps.Equal(a, b)
}

// changedLines are the lines a unified diff adds or removes.
func changedLines(a, b string) []string {
	var out []string
	for _, line := range strings.Split(udiff.Unified("a", "b", a, b), "\n") {
		if (strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-")) && !strings.HasPrefix(line, "+++") && !strings.HasPrefix(line, "---") {
			out = append(out, line)
		}
	}
	return out
}
