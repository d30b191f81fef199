package catalogue

import (
	"fmt"
	"strings"
)

// The limits a mesh.yaml that says nothing gets (docs/catalogue.md, "Limits and their defaults"). They are the
// catalogue format's meaning of a left-out knob, so the field tables describe them and the
// compiler derives from them; each is sized so that no bus user can fill what another needs.

// StreamDefaults are the limits one of the mesh's streams gets unless mesh.yaml sets them.
type StreamDefaults struct {
	// MaxBytes is the most the stream keeps; MaxMsgSize the largest message it takes.
	MaxBytes, MaxMsgSize int64
	// MaxMsgsPerSubject caps each subject, so one busy subject keeps its own newest messages and
	// cannot push another's out; 0 means no cap.
	MaxMsgsPerSubject int64
	// DiscardNew makes a full stream refuse a new message, to its publisher, instead of dropping
	// its oldest: a work queue never drops work it accepted.
	DiscardNew bool
}

var (
	// EventsDefaults: a gigabyte of history, events the size of a notification (a reference to
	// what changed, not the thing itself), and up to ten thousand of each event: fewer when every
	// event subject at its cap would not fit in the stream, which the compiler derives (a full
	// stream drops its oldest event whoever emitted it, so the caps must hold every subject's
	// share together, not one subject's).
	EventsDefaults = StreamDefaults{MaxBytes: 1 << 30, MaxMsgSize: 16 << 10, MaxMsgsPerSubject: 10_000}
	// ControlDefaults: a machine's report or enrolment request is a small document, and only the
	// newest few of each machine's matter while the controller is away.
	ControlDefaults = StreamDefaults{MaxBytes: 64 << 20, MaxMsgSize: 64 << 10, MaxMsgsPerSubject: 16}
	// NodesDefaults: one declaration per machine (always), up to the server's default payload.
	NodesDefaults = StreamDefaults{MaxBytes: 256 << 20, MaxMsgSize: 1 << 20, MaxMsgsPerSubject: 1}
	// SeatsDefaults: a work item names the work rather than carrying it; a queue refuses new work
	// when full rather than dropping work it accepted.
	SeatsDefaults = StreamDefaults{MaxBytes: 16 << 20, MaxMsgSize: 256 << 10, DiscardNew: true}
)

// DefaultRoomForOtherStreams is how many streams beyond its own and apply's bucket the mesh's
// account may hold unless mesh.yaml says: KV buckets and other applications' streams live there
// too.
const DefaultRoomForOtherStreams = 100

// The defaults of mesh.yaml's limits for bus users.
const (
	// DefaultConnectionsPerUser: a module, a machine's agent or a person holds one or two
	// connections; eight leave room for a restart's overlap and a person's second terminal.
	DefaultConnectionsPerUser = 8
	// DefaultMaxSubscriptions per connection: an inbox, a subscription per served tool and one per
	// pull in flight; a thousand is far beyond any module's manifest.
	DefaultMaxSubscriptions = 1000
	// DefaultMaxPayload is the server's own default (1 MiB), so a server configured larger does
	// not let a bus user past it.
	DefaultMaxPayload = 1 << 20
)

// StreamDefaultsFor returns the defaults of one of mesh.yaml's streams settings by its key:
// events, control, nodes or seats.
func StreamDefaultsFor(key string) StreamDefaults {
	switch key {
	case "events":
		return EventsDefaults
	case "control":
		return ControlDefaults
	case "nodes":
		return NodesDefaults
	}
	return SeatsDefaults
}

// Bytes writes a size as people read it: 1 GiB, 64 KiB, 1000000 bytes (976.6 KiB) — a size
// that is not a whole unit exactly as written, and roughly.
func Bytes(n int64) string {
	for _, u := range []struct {
		shift int
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		switch {
		case n >= 1<<u.shift && n%(1<<u.shift) == 0:
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		case n >= 1<<u.shift:
			return fmt.Sprintf("%d bytes (%.1f %s)", n, float64(n)/float64(int64(1)<<u.shift), u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// LimitsReference writes the defaults of every limit as markdown: docs/catalogue.md holds it
// between markers, and a test keeps it current, so the page says what a catalogue gets.
func LimitsReference() string {
	var b strings.Builder
	b.WriteString("| stream | settings | max-bytes | max-msg-size | max-msgs-per-subject | when full |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, s := range []struct{ stream, key string }{{"EVENTS", "events"}, {"CONTROL", "control"}, {"NODES", "nodes"}, {"SEAT_<SEAT>", "seats"}} {
		d := StreamDefaultsFor(s.key)
		perSubject, full := "no cap", "the oldest messages go"
		if d.MaxMsgsPerSubject > 0 {
			perSubject = fmt.Sprint(d.MaxMsgsPerSubject)
		}
		if s.key == "events" {
			perSubject += ", or fewer: every event subject at its cap fits in max-bytes"
		}
		if d.DiscardNew {
			full = "new work is refused to its submitter"
		}
		fmt.Fprintf(&b, "| `%s` | `streams.%s` | %s | %s | %s | %s |\n", s.stream, s.key, Bytes(d.MaxBytes), Bytes(d.MaxMsgSize), perSubject, full)
	}
	b.WriteString("\n| limit | setting | default |\n| --- | --- | --- |\n")
	fmt.Fprintf(&b, "| connections of each bus user (an account holds this many per user) | `limits.connections-per-user` | %d |\n", DefaultConnectionsPerUser)
	fmt.Fprintf(&b, "| subscriptions of each connection | `limits.max-subscriptions` | %d |\n", DefaultMaxSubscriptions)
	fmt.Fprintf(&b, "| the largest message a connection may publish | `limits.max-payload` | %s |\n", Bytes(DefaultMaxPayload))
	fmt.Fprintf(&b, "| streams of the mesh's account | `limits.max-streams` | its own, apply's bucket and %d more |\n", DefaultRoomForOtherStreams)
	b.WriteString("| consumers of each stream of the mesh's account | `limits.max-consumers` | the most any stream needs, at least 1000 |\n")
	b.WriteString("| bytes the mesh's account keeps on disk, in memory | `limits.max-file`, `limits.max-memory` | no account limit: each stream's max-bytes bounds it |\n")
	return b.String()
}
