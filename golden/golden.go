// Package golden compares rendered files with the committed ones and writes them: the golden
// files reviewers diff in pull requests. It knows nothing of what the files mean; emit renders
// them, cmd/meshc decides which.
package golden

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/aymanbagabas/go-udiff"

	"github.com/meshc-dev/meshc/internal/atomicfile"
)

// File is one rendered golden file, named relative to the golden directory.
type File struct {
	Name string
	Data []byte
}

// Stale is a golden file whose committed bytes differ from what the catalogue renders.
type Stale struct {
	Name string
	// Missing is true when nothing is committed under Name.
	Missing bool
	// Retired is true when the file is committed but no longer rendered at all.
	Retired bool
	// Diff is a unified diff from the committed file to the rendered one.
	Diff string
}

// Check compares each rendered file with the one in dir and returns those that differ, in name
// order, then each retired file dir still holds (a golden file this catalogue no longer renders:
// its diff removes it). Any other file in dir is left alone: the directory may hold other things.
func Check(dir string, files []File, retired ...string) ([]Stale, error) {
	var stale []Stale
	for _, f := range sorted(files) {
		path := filepath.Join(dir, filepath.FromSlash(f.Name))
		committed, err := os.ReadFile(path)
		missing := errors.Is(err, fs.ErrNotExist)
		if err != nil && !missing {
			return nil, fmt.Errorf("reading golden file %s: %w", path, err)
		}
		if !missing && bytes.Equal(committed, f.Data) {
			continue
		}
		// The headers name the golden file as the user reaches it (examples/mesh/golden/plan.json,
		// not plan.json), so the diff says which file, and applies from where meshc ran.
		shown := filepath.ToSlash(path)
		from := "a/" + shown
		if missing {
			from = "/dev/null"
		}
		stale = append(stale, Stale{
			Name: f.Name, Missing: missing,
			Diff: udiff.Unified(from, "b/"+shown, string(committed), string(f.Data)),
		})
	}
	for _, name := range retired {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if committed, err := os.ReadFile(path); err == nil {
			shown := filepath.ToSlash(path)
			stale = append(stale, Stale{Name: name, Retired: true, Diff: udiff.Unified("a/"+shown, "/dev/null", string(committed), "")})
		}
	}
	return stale, nil
}

// Write writes each rendered file into dir whose content changed, atomically (a temporary file
// renamed over the old one, so a reader — a server watching accounts.conf — never sees half a
// file), and returns the names it wrote. A file whose bytes are unchanged is not touched, so its
// modification time stays a signal of change.
//
// A retired file dir holds is removed, and named among those written.
func Write(dir string, files []File, retired ...string) ([]string, error) {
	var wrote []string
	for _, name := range retired {
		err := os.Remove(filepath.Join(dir, filepath.FromSlash(name)))
		if err == nil {
			wrote = append(wrote, name)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return wrote, err
		}
	}
	for _, f := range sorted(files) {
		path := filepath.Join(dir, filepath.FromSlash(f.Name))
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, f.Data) {
			continue
		}
		if err := atomicfile.Write(path, f.Data, 0o644); err != nil {
			return wrote, err
		}
		wrote = append(wrote, f.Name)
	}
	return wrote, nil
}

func sorted(files []File) []File {
	out := slices.Clone(files)
	slices.SortFunc(out, func(a, b File) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}
