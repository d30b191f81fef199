package change

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A replaced consumer's position must survive the apply that replaces it: between the delete
// and the create, a SIGKILL, a CI timeout or a server down past the retry budget would leave the
// consumer gone, and a rerun would make it again from the plan — deliver all — replaying every
// message it had acknowledged. So where the replacement starts is written before the delete, and
// a rerun that finds the consumer missing starts it there.
//
// The point is written on the stream itself, as the metadata key meshc.resume.<consumer>: it
// is tied to what it resumes. A stream deleted and made again has no points, so a point can
// never start a consumer on another stream's sequence numbers (it did, from a key-value bucket:
// a consumer made at sequence 2071 of an empty stream skipped what arrived next), and deleting
// or breaking apply's lock bucket leaves every point where it is. A point is consumed by the
// apply that makes its consumer again, and one whose consumer exists or left the plan is stale:
// the plan says so and apply removes it (docs/nats.md, "Resume points").

// ResumeKeyPrefix starts the metadata key of a consumer's resume point on its stream.
const ResumeKeyPrefix = "meshc.resume."

// ResumePoint is where a replaced consumer's replacement starts, recorded before the delete.
type ResumePoint struct {
	Stream   string `json:"-"`
	Consumer string `json:"-"`
	// DeliverPolicy and OptStartSeq are the replacement's start: by start sequence just after
	// the old consumer's ack floor, or the old consumer's own start when it acknowledged nothing.
	DeliverPolicy jetstream.DeliverPolicy `json:"deliver_policy"`
	OptStartSeq   uint64                  `json:"opt_start_seq,omitempty"`
	OptStartTime  *time.Time              `json:"opt_start_time,omitempty"`
	Recorded      time.Time               `json:"recorded"`
}

// describe says where the replacement starts, for a reviewer.
func (r ResumePoint) describe() string {
	switch r.DeliverPolicy {
	case jetstream.DeliverByStartSequencePolicy:
		return fmt.Sprintf("stream sequence %d", r.OptStartSeq)
	case jetstream.DeliverByStartTimePolicy:
		if r.OptStartTime != nil {
			return "time " + r.OptStartTime.UTC().Format(time.RFC3339Nano)
		}
	}
	return "deliver policy " + render(reflect.ValueOf(r.DeliverPolicy))
}

// StartOf is the start a replacement is made with.
func StartOf(stream, consumer string, c *jetstream.ConsumerConfig) ResumePoint {
	return ResumePoint{Stream: stream, Consumer: consumer, DeliverPolicy: c.DeliverPolicy,
		OptStartSeq: c.OptStartSeq, OptStartTime: c.OptStartTime}
}

func (r ResumePoint) applyTo(c *jetstream.ConsumerConfig) {
	c.DeliverPolicy, c.OptStartSeq, c.OptStartTime = r.DeliverPolicy, r.OptStartSeq, r.OptStartTime
}

// Key is the point's metadata key on its stream.
func (r ResumePoint) Key() string { return ResumeKeyPrefix + r.Consumer }

// Value is the point as its metadata value.
func (r ResumePoint) Value() string {
	data, _ := json.Marshal(r)
	return string(data)
}

// Resumes reads the resume points a stream carries, by consumer.
func (s *Stream) Resumes() map[string]ResumePoint {
	out := map[string]ResumePoint{}
	for k, v := range s.Config.Metadata {
		consumer, ok := strings.CutPrefix(k, ResumeKeyPrefix)
		if !ok {
			continue
		}
		var r ResumePoint
		if json.Unmarshal([]byte(v), &r) != nil {
			// Not a point meshc wrote: it cannot start anything, so it is stale.
			r = ResumePoint{}
		}
		r.Stream, r.Consumer = s.Name, consumer
		out[consumer] = r
	}
	return out
}

// StaleResume is a resume point nothing will use: its consumer exists again (an apply stopped
// between making it and removing the point) or left the plan. Apply removes it.
type StaleResume struct {
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
	Why      string `json:"why"`
}

func (s StaleResume) String() string {
	return fmt.Sprintf("the resume point of consumer %s on %s is stale (%s): apply removes it", s.Consumer, s.Stream, s.Why)
}

// sortStale orders stale points by stream, then consumer.
func sortStale(s []StaleResume) {
	slices.SortFunc(s, func(a, b StaleResume) int {
		return strings.Compare(a.Stream+"\x00"+a.Consumer, b.Stream+"\x00"+b.Consumer)
	})
}
