package filelock

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
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

// Acquire waits: a second holder blocks until the first releases, then gets the lock.
func TestAcquireWaitsForTheHolderToRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	first, err := Acquire(path, true)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		second, err := Acquire(path, true)
		if err == nil {
			second.Unlock()
		}
		got <- err
	}()
	// Blocked shows only as not having returned: 200 ms is the chance it had to return wrongly, a
	// wait on time itself, which is the point here.
	select {
	case err := <-got:
		t.Fatalf("Acquire returned (%v) while the first holder still held the lock", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := first.Unlock(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the waiting holder: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting holder never got the lock after it was released")
	}
}
