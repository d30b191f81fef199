package golden

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCheckAndWrite(t *testing.T) {
	dir := t.TempDir()
	files := []File{Bytes("b.txt", []byte("one\ntwo\nthree\n")), Bytes("a.txt", []byte("alpha\n"))}

	stale, err := Check(dir, files)
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) != 2 || !stale[0].Missing || stale[0].Name != "a.txt" {
		t.Fatalf("nothing committed: want both missing, in name order, got %+v", stale)
	}

	wrote, err := Write(dir, files)
	if err != nil || len(wrote) != 2 {
		t.Fatalf("Write = %v, %v", wrote, err)
	}
	if stale, _ := Check(dir, files); len(stale) != 0 {
		t.Fatalf("just written, still stale: %+v", stale)
	}

	// Unchanged files are not rewritten, so their modification time means something. Both are
	// dated an hour back first: a rewrite dates a file now, however fast the machine.
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	modified := func(name string) bool {
		t.Helper()
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return !fi.ModTime().Equal(past)
	}
	for _, f := range files {
		if err := os.Chtimes(filepath.Join(dir, f.Name), past, past); err != nil {
			t.Fatal(err)
		}
	}
	changed := []File{Bytes("a.txt", []byte("alpha\n")), Bytes("b.txt", []byte("one\nTWO\nthree\n"))}
	wrote, err = Write(dir, changed)
	if err != nil || len(wrote) != 1 || wrote[0] != "b.txt" {
		t.Fatalf("Write of one changed file = %v, %v", wrote, err)
	}
	if modified("a.txt") {
		t.Error("an unchanged golden file was rewritten")
	}
	if !modified("b.txt") {
		t.Error("the rewritten golden file kept its old modification time: the check above could not fail")
	}

	// A stale file's diff is a unified diff showing exactly the changed line, its headers naming
	// the golden file where it is (the directory's path and the file's), not the bare name.
	stale, _ = Check(dir, []File{Bytes("b.txt", []byte("one\n2\nthree\n"))})
	if len(stale) != 1 {
		t.Fatalf("want one stale file, got %+v", stale)
	}
	shown := filepath.ToSlash(filepath.Join(dir, "b.txt"))
	for _, want := range []string{"--- a/" + shown + "\n", "+++ b/" + shown + "\n", "-TWO", "+2"} {
		if !strings.Contains(stale[0].Diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, stale[0].Diff)
		}
	}
}

// A golden file the catalogue no longer renders (accounts.conf after a switch to operator mode)
// is stale while it is there: Check gives the diff that removes it, Write removes it and names
// it; once gone it is nothing, and a file that is neither rendered nor retired is left alone.
func TestARetiredFileIsStaleUntilRemoved(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "accounts.conf"), []byte("accounts {}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "README"), []byte("mine\n"), 0o644)
	files := []File{Bytes("claims.json", []byte("{}\n"))}
	if _, err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	stale, err := Check(dir, files, "accounts.conf")
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) != 1 || !stale[0].Retired || stale[0].Name != "accounts.conf" || !strings.Contains(stale[0].Diff, "+++ /dev/null") || !strings.Contains(stale[0].Diff, "-accounts {}") {
		t.Fatalf("a retired file left in place: %+v", stale)
	}
	wrote, err := Write(dir, files, "accounts.conf")
	if err != nil || len(wrote) != 1 || wrote[0] != "accounts.conf" {
		t.Fatalf("Write with a retired file: %v %v", wrote, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "accounts.conf")); err == nil {
		t.Fatal("the retired file is still there")
	}
	if stale, _ := Check(dir, files, "accounts.conf"); len(stale) != 0 {
		t.Fatalf("stale after its removal: %+v", stale)
	}
	if _, err := os.Stat(filepath.Join(dir, "README")); err != nil {
		t.Fatal("a file neither rendered nor retired was touched")
	}
}

// A file is compared as it is rendered, chunk by chunk: a committed file that differs in one
// byte far into it, that ends early, that goes on after the rendering ends, or that is empty is
// stale, and only the same bytes are current, rendered in writes of any size. Write rewrites
// exactly the stale ones.
func TestAFileIsComparedAsItIsRendered(t *testing.T) {
	rendered := make([]byte, 300_000) // several of the comparison's reads
	for i := range rendered {
		rendered[i] = byte('a' + i%26)
	}
	oneByte := bytes.Clone(rendered)
	oneByte[200_001] = '!'
	committed := map[string][]byte{
		"same":          rendered,
		"one-byte":      oneByte,
		"ends-early":    rendered[:len(rendered)-1],
		"goes-on":       append(bytes.Clone(rendered), '\n'),
		"empty":         {},
		"first-differs": append([]byte{'!'}, rendered[1:]...),
	}
	dir := t.TempDir()
	var files []File
	for name, data := range committed {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		// Written in uneven pieces, as a renderer's buffer flushes: never aligned with the
		// comparison's own reads.
		files = append(files, File{Name: name, Render: func(w io.Writer) error {
			for rest := rendered; len(rest) > 0; {
				n := min(len(rest), 7919)
				if _, err := w.Write(rest[:n]); err != nil {
					return err
				}
				rest = rest[n:]
			}
			return nil
		}})
	}
	stale, err := Check(dir, files)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range stale {
		names = append(names, s.Name)
		if s.Missing || s.Diff == "" {
			t.Errorf("%s: stale without its diff: %+v", s.Name, s)
		}
	}
	if want := []string{"empty", "ends-early", "first-differs", "goes-on", "one-byte"}; !slices.Equal(names, want) {
		t.Fatalf("stale: %v, want %v", names, want)
	}
	wrote, err := Write(dir, files)
	if err != nil || !slices.Equal(wrote, names) {
		t.Fatalf("Write = %v, %v; want the stale ones, %v", wrote, err, names)
	}
	for name := range committed {
		if got, _ := os.ReadFile(filepath.Join(dir, name)); !bytes.Equal(got, rendered) {
			t.Errorf("%s after Write is not what was rendered", name)
		}
	}
}

// A rendering that fails is an error, not a stale file, and Write leaves the committed file
// as it was: nothing half-rendered is renamed into place.
func TestARenderingThatFailsWritesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "accounts.conf")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := errors.New("the plan cannot be encoded")
	files := []File{{Name: "accounts.conf", Render: func(w io.Writer) error {
		w.Write([]byte("new\n"))
		return broken
	}}}
	if _, err := Check(dir, files); !errors.Is(err, broken) {
		t.Errorf("Check = %v, want the rendering's error", err)
	}
	if _, err := Write(dir, files); !errors.Is(err, broken) {
		t.Errorf("Write = %v, want the rendering's error", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old\n" {
		t.Errorf("after a failed rendering the file holds %q", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("a failed rendering left %d files behind", len(entries)-1)
	}
}
