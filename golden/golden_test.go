package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCheckAndWrite(t *testing.T) {
	dir := t.TempDir()
	files := []File{{"b.txt", []byte("one\ntwo\nthree\n")}, {"a.txt", []byte("alpha\n")}}

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
	changed := []File{{"a.txt", []byte("alpha\n")}, {"b.txt", []byte("one\nTWO\nthree\n")}}
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
	stale, _ = Check(dir, []File{{"b.txt", []byte("one\n2\nthree\n")}})
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
	files := []File{{Name: "claims.json", Data: []byte("{}\n")}}
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
