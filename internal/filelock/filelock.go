// Package filelock holds an exclusive advisory lock on a file, for the read-merge-write of a
// file two people (or two CI jobs) may change at once, and for a state directory only one
// process may use. The lock is flock(2): the kernel drops it when the holder exits, however it
// exits, so a killed process never leaves a lock behind to be cleaned up by hand.
package filelock

import (
	"errors"
	"os"
)

// ErrLocked is returned by TryLock when another holder has the lock.
var ErrLocked = errors.New("locked by another process")

// Lock is a held lock; Unlock releases it.
type Lock struct{ f *os.File }

// Acquire opens path (creating it if asked, mode 0600) and waits for an exclusive lock on it.
// path may be a directory, which leaves nothing behind in it.
func Acquire(path string, create bool) (*Lock, error) { return acquire(path, create, true) }

// TryAcquire is Acquire that does not wait: it returns ErrLocked when another holder has it.
func TryAcquire(path string, create bool) (*Lock, error) { return acquire(path, create, false) }

func acquire(path string, create, wait bool) (*Lock, error) {
	f, err := open(path, create)
	if err != nil {
		return nil, err
	}
	if err := lock(f, wait); err != nil {
		f.Close()
		return nil, err
	}
	return &Lock{f}, nil
}

// File is the locked file, for a holder that records something in it (its PID, say).
func (l *Lock) File() *os.File { return l.f }

// Unlock releases the lock.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the last descriptor releases a flock
	l.f = nil
	return err
}

func open(path string, create bool) (*os.File, error) {
	if create {
		return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	}
	return os.Open(path)
}
