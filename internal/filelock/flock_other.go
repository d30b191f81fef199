//go:build !unix

package filelock

import "os"

// lock is a no-op where flock(2) does not exist: meshc's shared-use guarantees (concurrent
// mints, one `up` per state directory) hold on Unix only.
func lock(*os.File, bool) error { return nil }
