package compiler

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// inParallel calls f(i) for every i in [0, n), spread over as many goroutines as the machine
// runs at once. Every f writes only what index i owns, and the caller gathers the results in
// index order: the plan is the same bytes on one core or many. The work is taken in small
// chunks, so a goroutine the scheduler sets aside (lint's checks share the cores) leaves no long
// tail for the others to wait on.
func inParallel(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	chunk := max(1, n/(workers*16))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				lo := int(next.Add(int64(chunk))) - chunk
				if lo >= n {
					return
				}
				for i := lo; i < min(lo+chunk, n); i++ {
					f(i)
				}
			}
		})
	}
	wg.Wait()
}
