package change

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/internal/natstest"
	"github.com/meshc-dev/meshc/internal/testwait"
)

// The discard table against the server: each change the table says discards stored messages
// is one the server makes in place by dropping messages (at once, or, for a discard policy, the
// oldest when the next message arrives at a full stream), and each it says does not keeps every
// message. Every rule has a case that fires it.
func TestEveryDiscardRuleDropsMessages(t *testing.T) {
	_, js := natstest.Connect(t, natstest.JetStream(t).ClientURL())
	ctx := t.Context()
	base := jetstream.StreamConfig{Subjects: []string{"x.>"}, MaxAge: time.Hour}
	with := func(c jetstream.StreamConfig, edit func(*jetstream.StreamConfig)) jetstream.StreamConfig {
		edit(&c)
		return c
	}
	full := with(base, func(c *jetstream.StreamConfig) { c.MaxMsgs, c.Discard = 10, jetstream.DiscardNew })
	perSubjectFull := with(base, func(c *jetstream.StreamConfig) {
		c.MaxMsgsPerSubject, c.Discard, c.DiscardNewPerSubject = 5, jetstream.DiscardNew, true
	})
	cases := []struct {
		field      string
		have, want jetstream.StreamConfig
		discards   bool
		// later: the drop shows when one more message arrives at a full stream.
		later bool
	}{
		{"max_msgs", base, with(base, func(c *jetstream.StreamConfig) { c.MaxMsgs = 4 }), true, false},
		{"max_bytes", base, with(base, func(c *jetstream.StreamConfig) { c.MaxBytes = 500 }), true, false},
		{"max_msgs_per_subject", base, with(base, func(c *jetstream.StreamConfig) { c.MaxMsgsPerSubject = 2 }), true, false},
		{"retention", base, with(base, func(c *jetstream.StreamConfig) { c.Retention = jetstream.InterestPolicy }), true, false},
		{"discard", full, with(full, func(c *jetstream.StreamConfig) { c.Discard = jetstream.DiscardOld }), true, true},
		{"discard_new_per_subject", perSubjectFull, with(perSubjectFull, func(c *jetstream.StreamConfig) { c.DiscardNewPerSubject = false }), true, true},
		{"max_age", base, with(base, func(c *jetstream.StreamConfig) { c.MaxAge, c.Duplicates = time.Second, time.Second }), true, false},
		// Quiet: made in place, and every message kept.
		{"max_msgs", with(base, func(c *jetstream.StreamConfig) { c.MaxMsgs = 4 }), with(base, func(c *jetstream.StreamConfig) { c.MaxMsgs = 400 }), false, false},
		{"max_msg_size", base, with(base, func(c *jetstream.StreamConfig) { c.MaxMsgSize = 10 }), false, false},
		{"subjects", base, with(base, func(c *jetstream.StreamConfig) { c.Subjects = []string{"x.a"} }), false, false},
		{"retention", with(base, func(c *jetstream.StreamConfig) { c.Retention = jetstream.InterestPolicy }), base, false, false},
		{"discard", with(base, func(c *jetstream.StreamConfig) { c.MaxMsgs = 10 }), with(full, func(c *jetstream.StreamConfig) { c.MaxMsgs = 10 }), false, true},
		{"max_age", base, with(base, func(c *jetstream.StreamConfig) { c.MaxAge = 2 * time.Hour }), false, false},
		// A stream that refuses new messages when full keeps what a lowered count or size is
		// over: a seat's queue gaining its limits (old → new and a max_bytes at once) drops no work.
		{"max_bytes", with(base, func(c *jetstream.StreamConfig) { c.Discard = jetstream.DiscardNew }), with(base, func(c *jetstream.StreamConfig) { c.MaxBytes, c.Discard = 500, jetstream.DiscardNew }), false, false},
		{"max_msgs", with(base, func(c *jetstream.StreamConfig) { c.Discard = jetstream.DiscardNew }), with(base, func(c *jetstream.StreamConfig) { c.MaxMsgs, c.Discard = 4, jetstream.DiscardNew }), false, false},
		{"max_bytes", base, with(base, func(c *jetstream.StreamConfig) { c.MaxBytes, c.Discard = 500, jetstream.DiscardNew }), false, false},
	}
	// The streams are filled first, so that the age case's messages are older than its new
	// max_age by the time it is changed.
	for i := range cases {
		c := &cases[i]
		c.have.Name, c.want.Name = fmt.Sprintf("S%d", i), fmt.Sprintf("S%d", i)
		c.have.Subjects = []string{fmt.Sprintf("s%d.>", i)}
		c.want.Subjects = []string{fmt.Sprintf("s%d.>", i)}
		if c.field == "subjects" {
			c.want.Subjects = []string{fmt.Sprintf("s%d.a", i)}
		}
		if _, err := js.CreateStream(ctx, c.have); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		for n := range 10 {
			if _, err := js.Publish(ctx, fmt.Sprintf("s%d.%c", i, 'a'+n%2), make([]byte, 100)); err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
		}
	}
	published := time.Now()
	testwait.For(t, "the age case's messages to be older than its new max_age", time.Minute, func() bool {
		return time.Since(published) > 1500*time.Millisecond
	})
	covered := map[string]bool{}
	for i, c := range cases {
		fields := compareStreams(c.have, c.want)
		j := slices.IndexFunc(fields, func(f Field) bool { return f.Name == c.field })
		if j < 0 || fields[j].Discards != c.discards {
			t.Errorf("case %d: %s %+v: want discards=%v", i, c.field, fields, c.discards)
			continue
		}
		covered[c.field] = covered[c.field] || c.discards
		before, err := js.Stream(ctx, c.have.Name)
		if err != nil {
			t.Fatal(err)
		}
		s, err := js.UpdateStream(ctx, c.want)
		if err != nil {
			t.Fatalf("case %d: %s is not made in place: %v", i, c.field, err)
		}
		state := s.CachedInfo().State
		held := before.CachedInfo().State.Msgs
		dropped := state.Msgs < held
		if c.later {
			_, err := js.Publish(ctx, fmt.Sprintf("s%d.a", i), nil)
			s, _ := js.Stream(ctx, c.want.Name)
			dropped = err == nil && s.CachedInfo().State.FirstSeq > state.FirstSeq
		}
		if dropped != c.discards {
			t.Errorf("case %d: %s: the table says discards=%v; the server kept %d of %d (first sequence %d)", i, c.field, c.discards, state.Msgs, held, state.FirstSeq)
		}
	}
	for _, r := range streamDiscardRules {
		if !covered[r.Field] {
			t.Errorf("discard rule %s has no case that fires it", r.Field)
		}
	}
}
