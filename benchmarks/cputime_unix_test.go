//go:build unix

package benchmarks

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used, user and system: on a machine shared with other
// work a reload's wall time measures the neighbours as much as the server, its CPU time does not.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
