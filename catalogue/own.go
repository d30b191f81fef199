package catalogue

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"
)

// ownFiles opens a catalogue's files, remembering the real path of each directory it met: on a
// catalogue of thousands of manifests in a few directories, resolving every path component of
// every file again was a third of the loader's CPU time (BENCHMARKS.md).
type ownFiles struct {
	root string // the catalogue's real directory
	mu   sync.Mutex
	dirs map[string]string // a directory's path under root → its real path
	// read is the digest of every file read, by its path in the catalogue: what a saved plan
	// records, taken from the bytes the loader decoded rather than from a second read.
	read map[string]string
}

func newOwnFiles(root string) *ownFiles {
	return &ownFiles{root: root, dirs: map[string]string{}, read: map[string]string{}}
}

// digested records the digest of a file's bytes as read.
func (o *ownFiles) digested(rel string, data []byte) {
	sum := sha256.Sum256(data)
	o.mu.Lock()
	o.read[rel] = "sha256:" + hex.EncodeToString(sum[:])
	o.mu.Unlock()
}

// open opens the catalogue file rel for reading, if it is the catalogue's own: a regular file
// whose real path lies inside root (the catalogue's resolved directory). Anything else is
// refused with the reason, and never opened: a symlink to ~/.git-credentials would otherwise
// be read and quoted into findings (and so into a pull request's annotations), and opening a
// named pipe blocks until something writes to it — pre-commit hanging for ever.
//
// The file is opened non-blocking and checked again through its descriptor, so swapping the
// file for a pipe between the look and the open fails rather than hangs. A file replaced by
// another regular file meanwhile — meshc mint, an editor or git writing it anew and renaming it
// into place — is looked at and opened again, a few times: forty concurrent mints of one
// catalogue refused each other's loads as "changed while it was being opened".
func (o *ownFiles) open(rel string) (*os.File, string) {
	p := filepath.Join(o.root, filepath.FromSlash(rel))
	for try := 1; ; try++ {
		f, refusal, replaced := o.openOnce(p)
		if !replaced || try == openTries {
			return f, refusal
		}
	}
}

// openTries bounds how often a file replaced between the look and the open is tried again.
const openTries = 5

// betweenLookAndOpen, when set, runs between the look at a file and its open: the tests'
// way to replace the file in that moment. Only a test that is not parallel sets it, so no
// other load of the package's tests meets it.
var betweenLookAndOpen func(real string)

// openOnce is one look and one open; replaced says the file that was opened is another regular
// file than the one looked at, which a new try may read whole.
func (o *ownFiles) openOnce(p string) (f *os.File, refusal string, replaced bool) {
	// A file that is not a symlink is where its directory really is: only the directory's real
	// path needs resolving, once. A symlink is resolved whole.
	info, err := os.Lstat(p)
	if err != nil {
		return nil, "cannot be read: " + plainError(err), false
	}
	var real string
	if info.Mode()&fs.ModeSymlink == 0 {
		dir, err := o.realDir(filepath.Dir(p))
		if err != nil {
			return nil, "cannot be read: " + plainError(err), false
		}
		real = filepath.Join(dir, filepath.Base(p))
	} else if real, err = filepath.EvalSymlinks(p); err != nil {
		return nil, "cannot be read: " + plainError(err), false
	}
	if !inside(o.root, real) {
		return nil, "is a symbolic link to a file outside the catalogue, so it is not read; " +
			"a catalogue file lives in the catalogue (copy it in, or delete the link)", false
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		if info, err = os.Stat(real); err != nil {
			return nil, "cannot be read: " + plainError(err), false
		}
	}
	if !info.Mode().IsRegular() {
		return nil, notRegular(info.Mode()), false
	}
	if betweenLookAndOpen != nil {
		betweenLookAndOpen(real)
	}
	f, err = os.OpenFile(real, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, "cannot be read: " + plainError(err), false
	}
	opened, err := f.Stat()
	if err != nil || !opened.Mode().IsRegular() || !os.SameFile(info, opened) {
		f.Close()
		return nil, "changed while it was being opened, so it is not read; run meshc again", err == nil && opened.Mode().IsRegular()
	}
	return f, "", false
}

// realDir is filepath.EvalSymlinks of a directory, resolved once per load.
func (o *ownFiles) realDir(dir string) (string, error) {
	o.mu.Lock()
	real, ok := o.dirs[dir]
	o.mu.Unlock()
	if ok {
		return real, nil
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	o.mu.Lock()
	o.dirs[dir] = real
	o.mu.Unlock()
	return real, nil
}

// inside reports whether the real path p lies within the real directory root.
func inside(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func notRegular(m fs.FileMode) string {
	kind := "not a regular file"
	switch {
	case m.IsDir():
		kind = "a directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	case m&fs.ModeDevice != 0:
		kind = "a device"
	}
	return "is " + kind + ", so it is not read; a catalogue file is a regular file holding one YAML document"
}

// excerptRunes bounds how much of any value a message quotes: enough to recognise it, never a
// whole file's worth of a value pasted where a name belongs.
const excerptRunes = 64

// Excerpt returns s, or its first runes and "…" when it is longer than a message should quote.
func Excerpt(s string) string {
	if utf8.RuneCountInString(s) <= excerptRunes {
		return s
	}
	i := 0
	for n := 0; n < excerptRunes; n++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i] + "…"
}
