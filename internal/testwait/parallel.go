package testwait

import (
	"flag"
	"strconv"
)

// Parallel lets n of a package's parallel tests run at once, unless -test.parallel was given;
// call it from TestMain before m.Run. go test's default is GOMAXPROCS, right for tests that
// compute and wrong for the ones that wait on a server (a pull's expiry, a refusal that is only
// a timeout, a cluster's election): on 2 cores only two of them waited at a time, and the
// package took three times its CPU in wall time (BENCHMARKS.md, "The test budget").
func Parallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(n))
	}
}
