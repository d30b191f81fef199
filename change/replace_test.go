package change

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/internal/natstest"
)

// The replace table against the server: each case that the table says forces a replace is one
// the server refuses in place, and each it says does not, the server makes in place. Every rule
// has a case that fires it.
func TestTheReplaceRulesAreTheServers(t *testing.T) {
	_, js := natstest.Connect(t, natstest.JetStream(t).ClientURL())
	ctx := t.Context()
	base := jetstream.StreamConfig{Subjects: []string{"x.>"}, Storage: jetstream.FileStorage}
	with := func(edit func(*jetstream.StreamConfig)) jetstream.StreamConfig {
		c := base
		edit(&c)
		return c
	}
	streamCases := []struct {
		field      string
		have, want jetstream.StreamConfig
		forces     bool
	}{
		{"storage", base, with(func(c *jetstream.StreamConfig) { c.Storage = jetstream.MemoryStorage }), true},
		{"retention", base, with(func(c *jetstream.StreamConfig) { c.Retention = jetstream.WorkQueuePolicy }), true},
		{"retention", base, with(func(c *jetstream.StreamConfig) { c.Retention = jetstream.InterestPolicy }), false},
		{"deny_delete", with(func(c *jetstream.StreamConfig) { c.DenyDelete = true }), base, true},
		{"deny_delete", base, with(func(c *jetstream.StreamConfig) { c.DenyDelete = true }), false},
		{"deny_purge", with(func(c *jetstream.StreamConfig) { c.DenyPurge = true }), base, true},
		{"allow_msg_ttl", with(func(c *jetstream.StreamConfig) { c.AllowMsgTTL = true }), base, true},
		{"allow_msg_ttl", base, with(func(c *jetstream.StreamConfig) { c.AllowMsgTTL = true }), false},
		{"allow_msg_schedules", with(func(c *jetstream.StreamConfig) { c.AllowMsgSchedules = true }), base, true},
		{"allow_msg_counter", base, with(func(c *jetstream.StreamConfig) { c.AllowMsgCounter = true }), true},
		{"sealed", with(func(c *jetstream.StreamConfig) { c.Sealed = true }), base, true},
		{"persist_mode", base, with(func(c *jetstream.StreamConfig) { c.PersistMode = jetstream.AsyncPersistMode }), true},
		{"mirror", jetstream.StreamConfig{Mirror: &jetstream.StreamSource{Name: "ORIGIN"}}, jetstream.StreamConfig{}, true},
	}
	// Another stream lives throughout: when an account's last stream is deleted the server
	// removes the account's streams directory behind the call, and a create right after can
	// fail with 10049 ("could not create storage directory", seen under load). A mesh's account
	// always holds other streams when one is replaced.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ANCHOR", Subjects: []string{"anchor.>"}}); err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for i, c := range streamCases {
		c.have.Name = fmt.Sprintf("S%d", i)
		c.want.Name = c.have.Name
		fields := compareStreams(c.have, c.want)
		j := slices.IndexFunc(fields, func(f Field) bool { return f.Name == c.field })
		if j < 0 || fields[j].Replaces != c.forces {
			t.Errorf("case %d: %s %+v: want replaces=%v", i, c.field, fields, c.forces)
			continue
		}
		covered[c.field] = covered[c.field] || c.forces
		if c.field == "mirror" {
			continue // needs an origin stream; docs/nats.md, "Streams"
		}
		// A stream is sealed by an update, never made sealed.
		unsealed := c.have
		unsealed.Sealed = false
		if _, err := js.CreateStream(ctx, unsealed); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if c.have.Sealed {
			if _, err := js.UpdateStream(ctx, c.have); err != nil {
				t.Fatalf("case %d: sealing: %v", i, err)
			}
		}
		_, err := js.UpdateStream(ctx, c.want)
		if refused := err != nil; refused != c.forces {
			t.Errorf("case %d: %s: the table says replaces=%v, the server's in-place update answered %v", i, c.field, c.forces, err)
		}
		if err := js.DeleteStream(ctx, c.have.Name); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range streamReplaceRules {
		if !covered[r.Field] {
			t.Errorf("stream rule %s has no case that fires it", r.Field)
		}
	}

	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "C", Subjects: []string{"c.>"}}); err != nil {
		t.Fatal(err)
	}
	pull := jetstream.ConsumerConfig{Durable: "k", AckPolicy: jetstream.AckExplicitPolicy}
	push := jetstream.ConsumerConfig{Durable: "k", AckPolicy: jetstream.AckExplicitPolicy, DeliverSubject: "to.here"}
	cwith := func(c jetstream.ConsumerConfig, edit func(*jetstream.ConsumerConfig)) jetstream.ConsumerConfig {
		edit(&c)
		return c
	}
	start := time.Now().Add(-time.Hour)
	consumerCases := []struct {
		field      string
		have, want jetstream.ConsumerConfig
		forces     bool
	}{
		{"ack_policy", pull, cwith(pull, func(c *jetstream.ConsumerConfig) { c.AckPolicy = jetstream.AckAllPolicy }), true},
		{"deliver_policy", pull, cwith(pull, func(c *jetstream.ConsumerConfig) { c.DeliverPolicy = jetstream.DeliverNewPolicy }), true},
		{"opt_start_seq", cwith(pull, func(c *jetstream.ConsumerConfig) {
			c.DeliverPolicy, c.OptStartSeq = jetstream.DeliverByStartSequencePolicy, 1
		}), cwith(pull, func(c *jetstream.ConsumerConfig) {
			c.DeliverPolicy, c.OptStartSeq = jetstream.DeliverByStartSequencePolicy, 2
		}), true},
		{"opt_start_time", cwith(pull, func(c *jetstream.ConsumerConfig) {
			c.DeliverPolicy, c.OptStartTime = jetstream.DeliverByStartTimePolicy, &start
		}), cwith(pull, func(c *jetstream.ConsumerConfig) {
			later := start.Add(time.Minute)
			c.DeliverPolicy, c.OptStartTime = jetstream.DeliverByStartTimePolicy, &later
		}), true},
		{"replay_policy", pull, cwith(pull, func(c *jetstream.ConsumerConfig) { c.ReplayPolicy = jetstream.ReplayOriginalPolicy }), true},
		{"deliver_subject", pull, push, true},
		{"deliver_subject", push, cwith(push, func(c *jetstream.ConsumerConfig) { c.DeliverSubject = "to.there" }), false},
		{"max_waiting", pull, cwith(pull, func(c *jetstream.ConsumerConfig) { c.MaxWaiting = 10 }), true},
		{"idle_heartbeat", push, cwith(push, func(c *jetstream.ConsumerConfig) { c.IdleHeartbeat = 5 * time.Second }), true},
		{"flow_control", cwith(push, func(c *jetstream.ConsumerConfig) { c.IdleHeartbeat = 5 * time.Second }),
			cwith(push, func(c *jetstream.ConsumerConfig) { c.IdleHeartbeat, c.FlowControl = 5*time.Second, true }), true},
		{"mem_storage", pull, cwith(pull, func(c *jetstream.ConsumerConfig) { c.MemoryStorage = true }), true},
		{"ack_wait", pull, cwith(pull, func(c *jetstream.ConsumerConfig) { c.AckWait = time.Minute }), false},
	}
	covered = map[string]bool{}
	for i, c := range consumerCases {
		// Raw settings: compareConsumers would carry the start across, which is its history.
		fields := consumerFields(normalConsumer(c.have), normalConsumer(c.want))
		j := slices.IndexFunc(fields, func(f Field) bool { return f.Name == c.field })
		if j < 0 || fields[j].Replaces != c.forces {
			t.Errorf("consumer case %d: %s %+v: want replaces=%v", i, c.field, fields, c.forces)
			continue
		}
		covered[c.field] = covered[c.field] || c.forces
		if _, err := js.CreateConsumer(ctx, "C", c.have); err != nil {
			t.Fatalf("consumer case %d: %v", i, err)
		}
		_, err := js.UpdateConsumer(ctx, "C", c.want)
		if refused := err != nil; refused != c.forces {
			t.Errorf("consumer case %d: %s: the table says replaces=%v, the server's in-place update answered %v", i, c.field, c.forces, err)
		}
		if err := js.DeleteConsumer(ctx, "C", "k"); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range consumerReplaceRules {
		if !covered[r.Field] {
			t.Errorf("consumer rule %s has no case that fires it", r.Field)
		}
	}
}
