// Package cataloguetest lays out small test catalogues written as txtar archives, so tests read as a
// catalogue on a page rather than as YAML strings in Go code.
package cataloguetest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/meshc-dev/meshc/catalogue"
)

// Extract writes the files of a txtar archive into a new temporary directory and returns it.
func Extract(t testing.TB, archive string) string {
	t.Helper()
	a, err := txtar.ParseFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	return Write(t, a)
}

// Write lays out an archive's files in a new temporary directory and returns it.
func Write(t testing.TB, a *txtar.Archive) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range a.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Load extracts an archive and loads it, failing the test if it is not a catalogue.
func Load(t testing.TB, archive string) (*catalogue.Catalogue, catalogue.Findings) {
	t.Helper()
	c, findings, err := catalogue.Load(Extract(t, archive))
	if err != nil {
		t.Fatal(err)
	}
	return c, findings
}
