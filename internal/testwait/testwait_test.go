package testwait

import (
	"errors"
	"flag"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// fails records what a helper would have failed the test with, instead of failing it.
type fails struct {
	testing.TB
	said string
}

func (f *fails) Helper() {}

func (f *fails) Fatalf(format string, args ...any) { f.said = fmt.Sprintf(format, args...) }

func TestForWaitsUntilTheConditionHolds(t *testing.T) {
	var asked atomic.Int32
	f := &fails{TB: t}
	For(f, "the third ask", 10*time.Second, func() bool { return asked.Add(1) == 3 })
	if f.said != "" || asked.Load() != 3 {
		t.Fatalf("asked %d times, failed with %q", asked.Load(), f.said)
	}
}

func TestForFailsOnceTheBoundHasPassed(t *testing.T) {
	var asked atomic.Int32
	f := &fails{TB: t}
	For(f, "what never comes", 30*time.Millisecond, func() bool { asked.Add(1); return false })
	if f.said != "waited 30ms for what never comes" {
		t.Fatalf("failed with %q", f.said)
	}
	if asked.Load() < 2 {
		t.Fatalf("asked %d times in 30ms: it did not ask again at the bound", asked.Load())
	}
}

func TestForNilSaysTheLastError(t *testing.T) {
	var asked atomic.Int32
	f := &fails{TB: t}
	ForNil(f, "the objects", 20*time.Millisecond, func() error { return fmt.Errorf("%d still unavailable", asked.Add(1)) })
	if want := fmt.Sprintf("waited 20ms for the objects: %d still unavailable", asked.Load()); f.said != want {
		t.Fatalf("failed with %q, want %q", f.said, want)
	}
	f = &fails{TB: t}
	ForNil(f, "nothing", time.Second, func() error { return nil })
	if f.said != "" {
		t.Fatalf("a nil error failed: %q", f.said)
	}
	f = &fails{TB: t}
	errs := []error{errors.New("refused"), nil}
	ForNil(f, "the second ask", time.Second, func() error { err := errs[0]; errs = errs[1:]; return err })
	if f.said != "" {
		t.Fatalf("failed with %q", f.said)
	}
}

func TestNeverFailsTheFirstTimeItHolds(t *testing.T) {
	f := &fails{TB: t}
	var asked atomic.Int32
	Never(f, "an answer arrived", 10*time.Second, func() bool { return asked.Add(1) == 2 })
	if f.said != "an answer arrived (within 10s)" || asked.Load() != 2 {
		t.Fatalf("asked %d times, failed with %q", asked.Load(), f.said)
	}
	f = &fails{TB: t}
	asked.Store(0)
	Never(f, "an answer arrived", 30*time.Millisecond, func() bool { asked.Add(1); return false })
	if f.said != "" || asked.Load() < 2 {
		t.Fatalf("asked %d times, failed with %q", asked.Load(), f.said)
	}
}

// Parallel raises -test.parallel when it was not given (this test binary runs with the default)
// and leaves a given one alone.
func TestParallelRaisesTheDefaultOnly(t *testing.T) {
	f := flag.Lookup("test.parallel")
	was := f.Value.String()
	defer flag.Set("test.parallel", was)
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	Parallel(97)
	switch got := f.Value.String(); {
	case !given && got != "97":
		t.Errorf("-test.parallel not given: Parallel(97) left it %s", got)
	case given && got != was:
		t.Errorf("-test.parallel %s given: Parallel(97) changed it to %s", was, got)
	}
}
