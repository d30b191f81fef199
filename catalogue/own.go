package catalogue

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
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
// whose real path lies inside root (the catalogue's resolved directory), with what its
// descriptor says of it. Anything else is refused with the reason: a symlink to
// ~/.git-credentials would otherwise be read and quoted into findings (and so into a pull
// request's annotations), and reading a named pipe blocks until something writes to it —
// pre-commit hanging for ever.
//
// A file that is not a link is opened non-blocking and without following a link, and judged by
// its descriptor: what is checked is what is read, and opening a pipe does not wait. Only a
// link is looked at before it is opened, and checked again through its descriptor after. A
// link's target replaced by another regular file meanwhile — meshc mint, an editor or git
// writing it anew and renaming it into place — is looked at and opened again, a few times:
// forty concurrent mints of one catalogue refused each other's loads as "changed while it was
// being opened".
func (o *ownFiles) open(rel string) (f io.ReadCloser, size int64, refusal string) {
	p := filepath.Join(o.root, filepath.FromSlash(rel))
	dir, err := o.realDir(filepath.Dir(p))
	if err != nil {
		return nil, 0, "cannot be read: " + plainError(err)
	}
	// A look before the open (lstat), a second look through the descriptor and the runtime's
	// poller refusing a regular file were three system calls per file, a tenth of the loader's
	// own CPU on a VM where each costs microseconds (BENCHMARKS.md, "Opening a file once
	// (2026-12-02)").
	if real := filepath.Join(dir, filepath.Base(p)); inside(o.root, real) {
		if f, size, ok := openRegular(real); ok {
			return f, size, ""
		}
		// A link (ELOOP), a pipe, a socket, a file gone or unreadable: the look below says which.
	}
	for try := 1; ; try++ {
		f, size, refusal, replaced := o.openLink(p)
		if !replaced || try == openTries {
			return f, size, refusal
		}
	}
}

// openRegular opens path if it is a regular file itself, not a link, and judges it by its
// descriptor: what is checked is what is read, and opening a pipe does not wait (O_NONBLOCK).
// ok is false, with nothing left open, for anything else.
func openRegular(path string) (f *descriptor, size int64, ok bool) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, 0, false
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || uint32(st.Mode)&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd)
		return nil, 0, false
	}
	return &descriptor{fd: fd, name: path}, st.Size, true
}

// descriptor reads an open file through its descriptor alone: an *os.File first offers every
// descriptor to the runtime's poller, which refuses a regular file, a system call per file.
type descriptor struct {
	fd   int
	name string
}

func (d *descriptor) Read(p []byte) (int, error) {
	for {
		n, err := syscall.Read(d.fd, p)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, &fs.PathError{Op: "read", Path: d.name, Err: err}
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (d *descriptor) Close() error { return syscall.Close(d.fd) }

// openTries bounds how often a link's target replaced between the look and the open is tried
// again.
const openTries = 5

// betweenLookAndOpen, when set, runs between the look at a link's target and its open: the
// tests' way to replace the file in that moment. Only a test that is not parallel sets it, so no
// other load of the package's tests meets it.
var betweenLookAndOpen func(real string)

// openLink is one look and one open of what open could not open as a file itself: a link, or
// something to refuse with its reason. replaced says the file that was opened is another
// regular file than the one looked at, which a new try may read whole.
func (o *ownFiles) openLink(p string) (f io.ReadCloser, size int64, refusal string, replaced bool) {
	// A file that is not a symlink is where its directory really is: only the directory's real
	// path needs resolving, once. A symlink is resolved whole.
	info, err := os.Lstat(p)
	if err != nil {
		return nil, 0, "cannot be read: " + plainError(err), false
	}
	var real string
	if info.Mode()&fs.ModeSymlink == 0 {
		dir, err := o.realDir(filepath.Dir(p))
		if err != nil {
			return nil, 0, "cannot be read: " + plainError(err), false
		}
		real = filepath.Join(dir, filepath.Base(p))
	} else if real, err = filepath.EvalSymlinks(p); err != nil {
		return nil, 0, "cannot be read: " + plainError(err), false
	}
	if !inside(o.root, real) {
		return nil, 0, "is a symbolic link to a file outside the catalogue, so it is not read; " +
			"a catalogue file lives in the catalogue (copy it in, or delete the link)", false
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		if info, err = os.Stat(real); err != nil {
			return nil, 0, "cannot be read: " + plainError(err), false
		}
	}
	if !info.Mode().IsRegular() {
		return nil, 0, notRegular(info.Mode()), false
	}
	if betweenLookAndOpen != nil {
		betweenLookAndOpen(real)
	}
	file, err := os.OpenFile(real, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, "cannot be read: " + plainError(err), false
	}
	opened, err := file.Stat()
	if err != nil || !opened.Mode().IsRegular() || !os.SameFile(info, opened) {
		file.Close()
		return nil, 0, "changed while it was being opened, so it is not read; run meshc again", err == nil && opened.Mode().IsRegular()
	}
	return file, opened.Size(), "", false
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
