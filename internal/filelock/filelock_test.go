package filelock

import (
	"errors"
	"path/filepath"
	"testing"
)

// A second holder is refused while the first holds the lock, even within one process (a flock
// belongs to an open file, not a process), and admitted once it is released.
func TestASecondHolderWaitsForTheFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	first, err := Acquire(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TryAcquire(path, true); !errors.Is(err, ErrLocked) {
		t.Fatalf("a second holder: %v, want ErrLocked", err)
	}
	if err := first.Unlock(); err != nil {
		t.Fatal(err)
	}
	second, err := TryAcquire(path, true)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	second.Unlock()
	// A directory can be the lock, leaving nothing behind in it.
	dir := t.TempDir()
	d, err := Acquire(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TryAcquire(dir, false); !errors.Is(err, ErrLocked) {
		t.Fatalf("a directory's second holder: %v", err)
	}
	d.Unlock()
}
