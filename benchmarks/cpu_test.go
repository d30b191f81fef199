package benchmarks

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used so far, user and system. On a machine shared
// with other work a benchmark's wall time swings with the others' load; the CPU time it spent
// does much less, so the benchmarks report it beside ns/op.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
