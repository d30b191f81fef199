package up

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/meshc-dev/meshc/internal/atomicfile"
	"github.com/meshc-dev/meshc/internal/filelock"
)

// The state directory of `meshc up` is one process's: its JetStream store, its server
// configuration and the development passwords. Two `up` on one directory once shared one store,
// lost acknowledged messages and left it reported damaged.

// upLockFile holds the PID of the `meshc up` using a state directory, under a flock the kernel
// drops when that process ends however it ends, so a crash never leaves the directory locked.
const upLockFile = "up.lock"

// Claim makes stateDir this process's: it creates it, writes its .gitignore, and locks it,
// refusing (naming the holder's PID) when another `meshc up` has it. release unlocks it.
func Claim(stateDir string) (release func(), err error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the state directory: %w", err)
	}
	if err := ignoreState(stateDir); err != nil {
		return nil, err
	}
	path := filepath.Join(stateDir, upLockFile)
	lock, err := filelock.TryAcquire(path, true)
	if errors.Is(err, filelock.ErrLocked) {
		holder := "another meshc up"
		if data, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
				holder = fmt.Sprintf("another meshc up (PID %d)", pid)
			}
		}
		return nil, fmt.Errorf("%s is using the state directory %s; stop it first, or give this one a --state directory of its own", holder, stateDir)
	}
	if err != nil {
		return nil, fmt.Errorf("locking the state directory: %w", err)
	}
	f := lock.File()
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { lock.Unlock() }, nil
}

// ignoreState writes STATE/.gitignore holding `*`, so `git add -A` in a user's own repository
// never picks up dev-credentials.yaml (plaintext passwords) or the store.
func ignoreState(stateDir string) error {
	const ignore = "# Written by meshc up: everything here is this machine's, plaintext passwords included.\n*\n"
	path := filepath.Join(stateDir, ".gitignore")
	if data, err := os.ReadFile(path); err == nil && string(data) == ignore {
		return nil
	}
	return atomicfile.Write(path, []byte(ignore), 0o644)
}

// CheckCanStart tries what the embedded server will need, so a failure is the system's own
// reason ("address already in use", "not a directory") rather than "did not become ready": the
// server is started with its log off, and its readiness says only yes or no.
func CheckCanStart(stateDir string, port int) error {
	store := filepath.Join(stateDir, "jetstream")
	if err := os.MkdirAll(store, 0o700); err != nil {
		return fmt.Errorf("the JetStream store cannot be created: %w", err)
	}
	probe, err := os.CreateTemp(store, ".meshc-probe-*")
	if err != nil {
		return fmt.Errorf("the JetStream store %s is not writable: %w", store, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	if port > 0 {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return fmt.Errorf("the server cannot listen on port %d: %w", port, err)
		}
		l.Close()
	}
	return nil
}

// ErrInterrupted is what a step of start-up or --once returns when Ctrl-C came first.
var ErrInterrupted = errors.New("interrupted")

// Interruptible runs step and returns its result, or ErrInterrupted as soon as ctx ends (Ctrl-C)
// if that is first. The step is left to finish on its own: `up` is returning, and the server it
// talks to is shut down on the way out, which ends it.
func Interruptible[T any](ctx context.Context, step func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	if ctx.Err() != nil {
		var zero T
		return zero, ErrInterrupted
	}
	done := make(chan result, 1)
	go func() {
		v, err := step()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ErrInterrupted
	}
}
