package change

import (
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The server's defaults, each checked against a real server by reading back what it filled in
// (TestServerFillsTheDefaultsDiffAssumes).
const (
	defaultDuplicates    = 2 * time.Minute
	defaultAckWait       = 30 * time.Second
	defaultMaxAckPending = 1000
	defaultMaxWaiting    = 512
)

// normalStream fills what the server fills for a zero value, and strips what it injects, so a
// config compares equal to the one the server made from it.
func normalStream(c jetstream.StreamConfig) jetstream.StreamConfig {
	for _, p := range []*int64{&c.MaxMsgs, &c.MaxBytes, &c.MaxMsgsPerSubject} {
		if *p == 0 {
			*p = -1
		}
	}
	if c.MaxConsumers == 0 {
		c.MaxConsumers = -1
	}
	if c.MaxMsgSize == 0 {
		c.MaxMsgSize = -1
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.Duplicates == 0 {
		// The window never outlasts the messages it guards.
		c.Duplicates = defaultDuplicates
		if c.MaxAge > 0 && c.MaxAge < c.Duplicates {
			c.Duplicates = c.MaxAge
		}
	}
	if len(c.Subjects) == 0 && c.Mirror == nil && len(c.Sources) == 0 {
		c.Subjects = []string{c.Name}
	}
	c.Subjects = sortedCopy(c.Subjects)
	c.Metadata = userMetadata(c.Metadata)
	return c
}

func normalConsumer(c jetstream.ConsumerConfig) jetstream.ConsumerConfig {
	if c.Name == "" {
		c.Name = c.Durable
	}
	if c.AckWait == 0 {
		c.AckWait = defaultAckWait
	}
	if c.MaxDeliver == 0 {
		c.MaxDeliver = -1
	}
	if c.MaxAckPending == 0 && c.AckPolicy != jetstream.AckNonePolicy {
		c.MaxAckPending = defaultMaxAckPending
	}
	if c.MaxWaiting == 0 && c.DeliverSubject == "" {
		c.MaxWaiting = defaultMaxWaiting
	}
	// One filter is one filter, however it is written.
	if c.FilterSubject != "" && len(c.FilterSubjects) == 0 {
		c.FilterSubjects = []string{c.FilterSubject}
	}
	c.FilterSubject = ""
	c.FilterSubjects = sortedCopy(c.FilterSubjects)
	c.Metadata = userMetadata(c.Metadata)
	// A pause is apply's own, while it replaces the consumer, never the plan's: an apply stopped
	// with the consumer paused leaves it to unpause by itself.
	c.PauseUntil = nil
	return c
}

func sortedCopy(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// userMetadata drops the `_nats.*` keys the server injects (its version and API level): they
// are the server's, not the plan's, and would otherwise differ on every object. So are apply's
// own bookkeeping keys — resume points, a parked stream's subjects — which no plan names.
func userMetadata(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if !strings.HasPrefix(k, "_nats.") && !strings.HasPrefix(k, ResumeKeyPrefix) && k != ParkedKey {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
