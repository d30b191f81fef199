package benchmarks

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"
)

// BenchmarkMemory measures what `meshc lint` and `meshc emit` hold in memory, beside the floor
// that only decodes the same YAML, each from the files on disk to the last byte rendered, at
// 10,000 modules (and 100,000 with MESHC_BENCH_FULL=1). b.ReportAllocs gives B/op, every byte
// allocated (garbage included). peak-heap-B is the most heap memory in objects, live or not yet
// swept (runtime/metrics /memory/classes/heap/objects:bytes), sampled every millisecond while the
// work runs, less the same figure just after a full GC before it: what a process's heap grows to
// under GOGC=100 doing the same work. It is kept out of BenchmarkPipeline, whose times it would
// disturb.
func BenchmarkMemory(b *testing.B) {
	for _, n := range catalogueSizes() {
		dir := writeCatalogue(b, n)
		paths := []struct {
			impl string
			run  func(b *testing.B)
		}{
			{"floor", func(b *testing.B) {
				if err := decodeYAML(dir); err != nil {
					b.Fatal(err)
				}
			}},
			{"lint", func(b *testing.B) { lintPath(b, dir) }},
			{"emit", func(b *testing.B) { emitPath(b, dir) }},
		}
		for _, p := range paths {
			b.Run(fmt.Sprintf("n=%d/impl=%s", n, p.impl), func(b *testing.B) {
				peak := watchHeap()
				b.ReportAllocs()
				for b.Loop() {
					p.run(b)
				}
				b.ReportMetric(float64(peak()), "peak-heap-B")
			})
		}
	}
}

// watchHeap starts sampling the heap's objects every millisecond, after a full GC, and returns
// the function that stops it and says how far the heap grew above where it started.
func watchHeap() (stop func() uint64) {
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(samples)
		return samples[0].Value.Uint64()
	}
	runtime.GC()
	base := read()
	var peak uint64
	var mu sync.Mutex
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			h := read()
			mu.Lock()
			peak = max(peak, h)
			mu.Unlock()
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(quit)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return peak - min(peak, base)
	}
}
