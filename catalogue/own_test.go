package catalogue

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A link's target replaced between the loader's look at it and its open is looked at again,
// when what replaced it is another regular file (meshc mint renaming a new credentials.yaml into
// place); replaced by a named pipe it is refused, not opened; replaced on every try it is refused
// after a few. The replacement happens in that very moment, through betweenLookAndOpen. A file
// that is not a link has no such moment: it is opened first and judged by its descriptor.
func TestALinksTargetReplacedWhileOpenedIsOpenedAgainUnlessItIsNoLongerAFile(t *testing.T) {
	// replaceWith replaces the file at each of the first times tries.
	replaceWith := func(t *testing.T, times int, replacement func(t *testing.T, real string)) {
		t.Helper()
		tries := 0
		betweenLookAndOpen = func(real string) {
			if tries++; tries <= times {
				replacement(t, real)
			}
		}
		t.Cleanup(func() { betweenLookAndOpen = nil })
	}
	renamedFile := func(content string) func(t *testing.T, real string) {
		return func(t *testing.T, real string) {
			next := real + ".new"
			if err := os.WriteFile(next, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(next, real); err != nil {
				t.Fatal(err)
			}
		}
	}
	catalogueWith := func(t *testing.T) (*ownFiles, string) {
		t.Helper()
		dir, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "kept.yaml"), []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("kept.yaml", filepath.Join(dir, "credentials.yaml")); err != nil {
			t.Fatal(err)
		}
		return newOwnFiles(dir), dir
	}
	read := func(t *testing.T, o *ownFiles) (string, string) {
		t.Helper()
		f, _, refusal := o.open("credentials.yaml")
		if f == nil {
			return "", refusal
		}
		defer f.Close()
		data, err := io.ReadAll(f)
		if err != nil {
			t.Fatal(err)
		}
		return string(data), ""
	}

	t.Run("once, by another file", func(t *testing.T) {
		o, _ := catalogueWith(t)
		replaceWith(t, 1, renamedFile("new\n"))
		if data, refusal := read(t, o); data != "new\n" || refusal != "" {
			t.Fatalf("a file renamed into place while it was opened: read %q, refused %q; want the new file read", data, refusal)
		}
	})
	t.Run("on every try, by another file", func(t *testing.T) {
		o, _ := catalogueWith(t)
		replaceWith(t, openTries, renamedFile("new\n"))
		if data, refusal := read(t, o); data != "" || !strings.Contains(refusal, "changed while it was being opened") {
			t.Fatalf("a file replaced on each of %d tries: read %q, refused %q; want it refused", openTries, data, refusal)
		}
	})
	t.Run("by a named pipe", func(t *testing.T) {
		o, _ := catalogueWith(t)
		replaceWith(t, 1, func(t *testing.T, real string) {
			if err := os.Remove(real); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(real, 0o644); err != nil {
				t.Fatal(err)
			}
		})
		if data, refusal := read(t, o); data != "" || !strings.Contains(refusal, "changed while it was being opened") {
			t.Fatalf("a file swapped for a named pipe while it was opened: read %q, refused %q; want it refused", data, refusal)
		}
	})
	t.Run("a file that is not a link is not looked at first", func(t *testing.T) {
		o, _ := catalogueWith(t)
		replaceWith(t, openTries, func(t *testing.T, real string) {
			t.Errorf("a file that is not a link was looked at before it was opened: %s", real)
		})
		f, size, refusal := o.open("kept.yaml")
		if f == nil {
			t.Fatalf("refused: %s", refusal)
		}
		defer f.Close()
		if data, err := io.ReadAll(f); err != nil || string(data) != "old\n" || size != int64(len(data)) {
			t.Errorf("read %q (%v), size %d; want \"old\\n\" and its size", data, err, size)
		}
	})
	t.Run("a named pipe that is not a link is refused by its descriptor", func(t *testing.T) {
		o, dir := catalogueWith(t)
		if err := syscall.Mkfifo(filepath.Join(dir, "pipe.yaml"), 0o644); err != nil {
			t.Fatal(err)
		}
		if f, _, refusal := o.open("pipe.yaml"); f != nil || !strings.Contains(refusal, "named pipe") {
			t.Fatalf("a named pipe: opened %v, refused %q; want it refused as a named pipe", f != nil, refusal)
		}
	})
}
