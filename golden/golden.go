// Package golden compares rendered files with the committed ones and writes them: the golden
// files reviewers diff in pull requests. It knows nothing of what the files mean; emit renders
// them, cmd/meshc decides which.
package golden

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/aymanbagabas/go-udiff"

	"github.com/meshc-dev/meshc/internal/atomicfile"
)

// File is one golden file, named relative to the golden directory, and what renders it.
type File struct {
	Name string
	// Render writes the file's bytes to w: the same bytes at every call. Each file is compared
	// and written beside the others, so a Render only reads what it renders. A file that
	// changed is rendered twice, once to compare and once to write (or to diff): a file is never
	// held whole to be compared, since at 10,000 modules the three are 74 MB.
	Render func(w io.Writer) error
}

// Bytes is a File whose bytes are already rendered.
func Bytes(name string, data []byte) File {
	return File{Name: name, Render: func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}}
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
	files = sorted(files)
	found := make([]*Stale, len(files))
	err := each(files, func(i int, f File) error {
		path := filepath.Join(dir, filepath.FromSlash(f.Name))
		current, missing, err := matches(path, f.Render)
		if err != nil || current {
			return err
		}
		var committed []byte
		if !missing {
			if committed, err = os.ReadFile(path); err != nil {
				return fmt.Errorf("reading golden file %s: %w", path, err)
			}
		}
		var rendered bytes.Buffer
		if err := f.Render(&rendered); err != nil {
			return fmt.Errorf("rendering %s: %w", f.Name, err)
		}
		// The headers name the golden file as the user reaches it (examples/mesh/golden/plan.json,
		// not plan.json), so the diff says which file, and applies from where meshc ran.
		shown := filepath.ToSlash(path)
		from := "a/" + shown
		if missing {
			from = "/dev/null"
		}
		found[i] = &Stale{
			Name: f.Name, Missing: missing,
			Diff: udiff.Unified(from, "b/"+shown, string(committed), rendered.String()),
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var stale []Stale
	for _, s := range found {
		if s != nil {
			stale = append(stale, *s)
		}
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
// file), and returns the names it wrote, in name order. A file whose bytes are unchanged is not
// touched, so its modification time stays a signal of change.
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
	files = sorted(files)
	written := make([]bool, len(files))
	err := each(files, func(i int, f File) error {
		path := filepath.Join(dir, filepath.FromSlash(f.Name))
		if current, _, err := matches(path, f.Render); err != nil || current {
			return err
		}
		if err := atomicfile.WriteFrom(path, 0o644, f.Render); err != nil {
			return err
		}
		written[i] = true
		return nil
	})
	for i, f := range files {
		if written[i] {
			wrote = append(wrote, f.Name)
		}
	}
	return wrote, err
}

// each runs do for every file at once, each file's rendering on a core of its own, and returns
// the first error in the files' order.
func each(files []File, do func(i int, f File) error) error {
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Go(func() { errs[i] = do(i, f) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// matches reports whether the file at path holds exactly what render writes, reading the two
// side by side and stopping at the first difference. missing says there is no file.
func matches(path string, render func(io.Writer) error) (current, missing bool, err error) {
	committed, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, true, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("reading golden file %s: %w", path, err)
	}
	defer committed.Close()
	c := comparison{committed: committed, scratch: make([]byte, 64<<10)}
	err = render(&c)
	if c.differs {
		return false, false, nil
	}
	if c.err != nil {
		return false, false, fmt.Errorf("reading golden file %s: %w", path, c.err)
	}
	if err != nil {
		return false, false, err
	}
	// Everything rendered matched: the file is current if it ends there too.
	var more [1]byte
	switch n, err := io.ReadFull(committed, more[:]); {
	case n == 0 && errors.Is(err, io.EOF):
		return true, false, nil
	case n == 0:
		return false, false, fmt.Errorf("reading golden file %s: %w", path, err)
	}
	return false, false, nil
}

// comparison is a writer that compares what is written to it with a file, read as far as the
// writing has come.
type comparison struct {
	committed io.Reader
	scratch   []byte
	differs   bool
	err       error
}

// errDiffers stops a rendering at the first byte the file does not hold.
var errDiffers = errors.New("differs from the golden file")

func (c *comparison) Write(p []byte) (int, error) {
	if c.differs {
		return 0, errDiffers
	}
	if c.err != nil {
		return 0, c.err
	}
	for written := 0; written < len(p); {
		want := p[written:min(len(p), written+len(c.scratch))]
		n, err := io.ReadFull(c.committed, c.scratch[:len(want)])
		if !bytes.Equal(c.scratch[:n], want[:n]) {
			c.differs = true
			return written, errDiffers
		}
		if n < len(want) {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				c.differs = true // the file ends before the rendering does
				return written, errDiffers
			}
			c.err = err
			return written, err
		}
		written += n
	}
	return len(p), nil
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
