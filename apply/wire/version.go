package wire

import (
	"fmt"
	"regexp"
	"strconv"
)

// ServerVersion is a nats-server's release, as its INFO at connect names it ("2.10.22",
// "2.11.0-RC.1").
type ServerVersion struct{ Major, Minor, Patch int }

func (v ServerVersion) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// AtLeast reports whether v is o or later.
func (v ServerVersion) AtLeast(o ServerVersion) bool {
	if v.Major != o.Major {
		return v.Major > o.Major
	}
	if v.Minor != o.Minor {
		return v.Minor > o.Minor
	}
	return v.Patch >= o.Patch
}

var serverVersion = regexp.MustCompile(`^v?(\d+)\.(\d+)\.(\d+)`)

// ParseServerVersion reads a server's version; ok is false for one it cannot read.
func ParseServerVersion(s string) (v ServerVersion, ok bool) {
	m := serverVersion.FindStringSubmatch(s)
	if m == nil {
		return v, false
	}
	v.Major, _ = strconv.Atoi(m[1])
	v.Minor, _ = strconv.Atoi(m[2])
	v.Patch, _ = strconv.Atoi(m[3])
	return v, true
}

// MinServerVersion is the oldest nats-server meshc works with. Everything a plan asks of a
// server first works in 2.10: several filters on one consumer (filter_subjects), metadata on
// streams and consumers (meshc's marks, resume points, a parked stream's subjects), stream
// compression and a stream's consumer limits. A 2.9 server takes a request that sets them and
// ignores them without a word: a consumer of two events made with no filter at all, delivering
// every event of its stream to its module, and no mark, so every later apply refused meshc's own
// objects as not meshc's (docs/nats.md, "The oldest server meshc works with").
var MinServerVersion = ServerVersion{2, 10, 0}

// PauseServerVersion is the first nats-server that pauses a consumer ($JS.API.CONSUMER.PAUSE).
var PauseServerVersion = ServerVersion{2, 11, 0}

// CheckServerVersion refuses a server older than MinServerVersion, naming its version and what
// it would get wrong; a version it cannot read is let through (a server that names none is not
// one meshc knows to be old).
func CheckServerVersion(server, version string) error {
	v, ok := ParseServerVersion(version)
	if !ok || v.AtLeast(MinServerVersion) {
		return nil
	}
	return fmt.Errorf("the server at %s runs nats-server %s, and meshc needs %s or later: before 2.10 a server ignores a consumer's filter_subjects (a module consuming two events would be delivered every event of its stream) and drops stream and consumer metadata (meshc's marks of what is its own); nothing was written: upgrade the server",
		server, version, MinServerVersion)
}
