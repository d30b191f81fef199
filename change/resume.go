package change

import (
	"fmt"
	"reflect"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ResumePoint is where a replaced consumer's replacement starts, recorded before the delete.
type ResumePoint struct {
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
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
