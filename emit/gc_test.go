package emit

import (
	"runtime/debug"
	"sync"
	"testing"
)

// Overlapping renderings pause the collector once and the last to end resumes it, at the
// percentage it had: two pauses saving and restoring on their own would leave it off for good
// when they end in the order they began.
func TestOverlappingPausesResumeTheCollectorOnce(t *testing.T) {
	was := debug.SetGCPercent(137)
	defer debug.SetGCPercent(was)
	first := pauseGC()
	second := pauseGC()
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("the collector runs during a pause: GOGC %d", got)
	}
	first()
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("the first of two pauses to end resumed the collector: GOGC %d", got)
	}
	second()
	if got := debug.SetGCPercent(137); got != 137 {
		t.Fatalf("after both pauses the collector is at %d, want 137", got)
	}
	// Many at once, as the tests and `meshc up` may render.
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() { pauseGC()() })
	}
	wg.Wait()
	if got := debug.SetGCPercent(137); got != 137 {
		t.Fatalf("after 16 concurrent pauses the collector is at %d, want 137", got)
	}
}
