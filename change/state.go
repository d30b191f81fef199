package change

import (
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// State is what the bus holds: every stream with its consumers, sorted by name.
type State struct {
	Streams []Stream
	// Requests is how many API requests the read cost: a handful per stream, never one per
	// consumer.
	Requests int
	// Principals are the users and accounts the bus holds, as far as they could be read (an
	// accounts file, the resolver's JWTs, the record of the last delivery); nil when they were
	// not read, and then not compared.
	Principals *Principals
}

// Stream is one stream as the server reports it.
type Stream struct {
	Name   string
	Config jetstream.StreamConfig
	// Messages held: deleting or replacing a stream that holds any needs the user's say-so.
	Messages uint64
	// Unavailable is the server's own word that the stream exists but could not be read (its
	// leader did not answer, or every peer is offline). Such a stream is never created again —
	// that would fail with "name already in use", or worse split it — and never changed or
	// pruned: it cannot be compared. "" when the stream was read.
	Unavailable string
	// ConsumersUnread is set when the stream's consumers could not be listed; then none of them
	// is created, changed or pruned.
	ConsumersUnread bool
	Consumers       []Consumer
}

// Consumer is one consumer as the server reports it.
type Consumer struct {
	Stream string
	Name   string
	Config jetstream.ConsumerConfig
	// PushBound says a subscriber is bound to the delivery subject: the server will not move
	// it then (docs/history.md, "A control plane crash-looping on a consumer it could not move").
	PushBound bool
	// AckFloor is the last stream sequence the consumer acknowledged in order: where a
	// replacement resumes.
	AckFloor uint64
	// Pending counts the messages delivered and not yet acknowledged; AckedAboveFloor the
	// deliveries above the ack floor that are not pending — each an acknowledged message (or a
	// redelivery), which a replacement starting after the floor would deliver again.
	Pending         int
	AckedAboveFloor uint64
	// Unavailable: reported missing or offline, as for a stream.
	Unavailable string
}

// Stream returns the named stream, or nil.
func (s *State) Stream(name string) *Stream {
	i, ok := slices.BinarySearchFunc(s.Streams, name, func(x Stream, n string) int { return strings.Compare(x.Name, n) })
	if !ok {
		return nil
	}
	return &s.Streams[i]
}

// Consumer returns the named consumer of the named stream, or nil.
func (s *State) Consumer(stream, name string) *Consumer {
	ls := s.Stream(stream)
	if ls == nil {
		return nil
	}
	for i := range ls.Consumers {
		if ls.Consumers[i].Name == name {
			return &ls.Consumers[i]
		}
	}
	return nil
}
