package benchmarks

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/lint"
)

// BenchmarkMemory measures what lint, compile and emit cost in memory at 10,000 modules, the
// catalogue loaded beforehand. b.ReportAllocs gives B/op, every byte allocated (garbage
// included). peak-heap-B is the most heap memory in objects, live or not yet swept
// (runtime/metrics /memory/classes/heap/objects:bytes), sampled every millisecond while the work
// runs, less the same figure just after a full GC before it: what the process's heap grows to
// under GOGC=100. base-B is that starting figure, nearly all of it the loaded catalogue.
func BenchmarkMemory(b *testing.B) {
	const n = 10_000
	c, loaded, err := catalogue.Load(writeCatalogue(b, n))
	if err != nil {
		b.Fatal(err)
	}
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(samples)
		return samples[0].Value.Uint64()
	}

	b.Run("n=10000/impl=meshc", func(b *testing.B) {
		runtime.GC()
		base := read()
		var peakHeap uint64
		var mu sync.Mutex
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			t := time.NewTicker(time.Millisecond)
			defer t.Stop()
			for {
				h := read()
				mu.Lock()
				peakHeap = max(peakHeap, h)
				mu.Unlock()
				select {
				case <-stop:
					return
				case <-t.C:
				}
			}
		}()
		b.ReportAllocs()
		for b.Loop() {
			if fs := unexpected(lint.Run(c, loaded)); len(fs) > 0 {
				b.Fatalf("%d findings, first: %s", len(fs), fs[0])
			}
			render(b, mustCompile(c))
		}
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		b.ReportMetric(float64(peakHeap-min(peakHeap, base)), "peak-heap-B")
		b.ReportMetric(float64(base), "base-B")
	})
}

func mustCompile(c *catalogue.Catalogue) *compiler.Plan {
	p, _ := compiler.Compile(catalogue.NewIndex(c))
	return p
}
