// Package testwait is how a test waits for something to become so: it asks again and again until
// the thing holds or a bound passes, and never sleeps a fixed time hoping it has happened by then
// (on a loaded machine it has not; on a quiet one the test waits for nothing).
package testwait

import (
	"errors"
	"testing"
	"time"
)

// longest is the longest pause between two asks. Asks start 5 ms apart and double: a condition
// that holds at once costs nothing, and one that takes seconds (a cluster electing a leader) is
// not asked hundreds of times a second.
const longest = 100 * time.Millisecond

// For asks cond until it holds, and fails t if it still does not once within has passed. what
// names what is awaited, as the failure says it: "waited 10s for the consumer to read as bound".
func For(t testing.TB, what string, within time.Duration, cond func() bool) {
	t.Helper()
	if err := poll(within, holds(cond)); err != nil {
		t.Fatalf("waited %v for %s", within, what)
	}
}

// ForNil asks try until it returns nil, and fails t with the last error if within passes first:
// for a wait whose failure is best told by what stood in its way.
func ForNil(t testing.TB, what string, within time.Duration, try func() error) {
	t.Helper()
	if err := poll(within, try); err != nil {
		t.Fatalf("waited %v for %s: %v", within, what, err)
	}
}

// Never asks cond for the whole of within and fails t the first time it holds, saying what (which
// names what happened): for what must not happen, such as an answer arriving where it must not,
// where only a wait on time itself can tell. within is how long the thing had its chance.
func Never(t testing.TB, what string, within time.Duration, cond func() bool) {
	t.Helper()
	if err := poll(within, holds(cond)); err == nil {
		t.Fatalf("%s (within %v)", what, within)
	}
}

var errNotYet = errors.New("not yet")

// holds is cond as poll asks it: nil once it holds.
func holds(cond func() bool) func() error {
	return func() error {
		if cond() {
			return nil
		}
		return errNotYet
	}
}

// poll asks try until it returns nil (then nil) or within has passed (then try's last error).
// try is always asked at least once, and once more at the bound.
func poll(within time.Duration, try func() error) error {
	deadline := time.Now().Add(within)
	pause := 5 * time.Millisecond
	for {
		err := try()
		if err == nil {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return err
		}
		time.Sleep(min(pause, left))
		pause = min(2*pause, longest)
	}
}
