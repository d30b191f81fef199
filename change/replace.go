package change

import "github.com/nats-io/nats.go/jetstream"

// The rules that answer "can this change lose data?", read top to bottom: first every setting
// the server will not change in place, so that changing it means deleting the object and making
// it again (a replace); then every setting the server does change in place but by dropping
// messages the stream holds (a discard). compareStreams and compareConsumers only look rules up.
// Sources: docs/nats.md ("Streams", "Consumers and which updates the server refuses", "Changes
// that drop messages"), and nats-server's own update checks (server/stream.go
// checkStreamCfg/updateWithAdvisory, server/consumer.go checkConsumerCfg).
//
// What a replace loses, and what stops it losing it quietly:
//
//   - a stream: every message it holds, and with them every consumer's position. Refused
//     unless --allow-replace; a stream holding any message also needs --purge-non-empty; a
//     stream carrying a consumer meshc does not manage is never replaced, whatever the flags.
//   - a consumer: nothing it acknowledged. Its replacement starts just after the old one's ack
//     floor, and that start is written to the bus before the delete, so a stop between delete
//     and create is resumed by the rerun (resume.go). Messages delivered but not yet
//     acknowledged are delivered again, as after any redelivery. Refused unless
//     --allow-replace.

// What a discard loses: the messages beyond the new limit, at once, and those the server stops
// keeping from then on. Refused unless --allow-discard, on a stream holding messages or not (a
// count read at plan time is stale by the update), and shown with how many it drops where the
// bus can say (apply.CountDrops).

// replaceRule is one setting that forces a replace, and when.
type replaceRule[C any] struct {
	// Field is the setting's JetStream API name.
	Field string
	// When, in words, for the reviewer.
	When string
	// forces says whether this change of the setting forces a replace (have is the bus's,
	// want the plan's, both normalised).
	forces func(have, want C) bool
}

func always[C any](_, _ C) bool { return true }

var streamReplaceRules = []replaceRule[jetstream.StreamConfig]{
	{"storage", "always: file and memory stores are different stores", always[jetstream.StreamConfig]},
	{"retention", "to or from workqueue (limits ↔ interest is made in place)", func(h, w jetstream.StreamConfig) bool {
		return h.Retention == jetstream.WorkQueuePolicy || w.Retention == jetstream.WorkQueuePolicy
	}},
	{"mirror", "always", always[jetstream.StreamConfig]},
	{"allow_msg_counter", "always", always[jetstream.StreamConfig]},
	{"persist_mode", "always", always[jetstream.StreamConfig]},
	{"sealed", "unsealing: a seal cannot be undone", func(h, _ jetstream.StreamConfig) bool { return h.Sealed }},
	{"deny_delete", "turning it off", func(h, _ jetstream.StreamConfig) bool { return h.DenyDelete }},
	{"deny_purge", "turning it off", func(h, _ jetstream.StreamConfig) bool { return h.DenyPurge }},
	{"allow_msg_ttl", "turning it off: once on it stays on", func(h, _ jetstream.StreamConfig) bool { return h.AllowMsgTTL }},
	{"allow_msg_schedules", "turning it off: once on it stays on", func(h, _ jetstream.StreamConfig) bool { return h.AllowMsgSchedules }},
}

var consumerReplaceRules = []replaceRule[jetstream.ConsumerConfig]{
	{"ack_policy", "always", always[jetstream.ConsumerConfig]},
	// Apply carries an existing consumer's start across (it is its history), so these differ
	// only when a replacement is already resuming after the ack floor.
	{"deliver_policy", "always", always[jetstream.ConsumerConfig]},
	{"opt_start_seq", "always", always[jetstream.ConsumerConfig]},
	{"opt_start_time", "always", always[jetstream.ConsumerConfig]},
	{"replay_policy", "always", always[jetstream.ConsumerConfig]},
	{"deliver_subject", "pull ↔ push (a push consumer's subject moves in place)", func(h, w jetstream.ConsumerConfig) bool {
		return h.DeliverSubject == "" || w.DeliverSubject == ""
	}},
	{"max_waiting", "always", always[jetstream.ConsumerConfig]},
	{"idle_heartbeat", "always", always[jetstream.ConsumerConfig]},
	{"flow_control", "always", always[jetstream.ConsumerConfig]},
	{"mem_storage", "always", always[jetstream.ConsumerConfig]},
}

// streamDiscardRules are the settings the server changes in place by dropping stored messages
// (checked on a real server: TestEveryDiscardRuleDropsMessages). Not among them, also checked: a
// lower max_msg_size (it refuses new messages only), fewer subjects (the messages stay), fewer
// replicas (every message stays on the peers kept), discard old → new (it refuses new messages
// instead of dropping old ones), and a lower max_msgs or max_bytes on a stream that discards new
// (the server trims only a stream that drops its oldest: server/filestore.go, enforceBytesLimit).
var streamDiscardRules = []replaceRule[jetstream.StreamConfig]{
	// A stream that refuses new messages when full (discard new) keeps every message a lowered
	// count or size would be over: the server trims to them only a stream that drops its oldest.
	{"max_msgs", "lowered on a stream that drops its oldest: the oldest beyond the new count go at once", func(h, w jetstream.StreamConfig) bool {
		return w.Discard != jetstream.DiscardNew && lowered(h.MaxMsgs, w.MaxMsgs)
	}},
	{"max_bytes", "lowered on a stream that drops its oldest: the oldest go until the stream fits", func(h, w jetstream.StreamConfig) bool {
		return w.Discard != jetstream.DiscardNew && lowered(h.MaxBytes, w.MaxBytes)
	}},
	{"max_age", "lowered: messages older than the new age go at once", func(h, w jetstream.StreamConfig) bool {
		return lowered(int64(h.MaxAge), int64(w.MaxAge))
	}},
	{"max_msgs_per_subject", "lowered: each subject's oldest beyond the new count go at once", func(h, w jetstream.StreamConfig) bool {
		return lowered(h.MaxMsgsPerSubject, w.MaxMsgsPerSubject)
	}},
	{"retention", "limits → interest: every message no consumer still has to deliver goes at once", func(h, w jetstream.StreamConfig) bool {
		return h.Retention == jetstream.LimitsPolicy && w.Retention == jetstream.InterestPolicy
	}},
	{"discard", "new → old: a full stream drops its oldest messages instead of refusing new ones", func(h, w jetstream.StreamConfig) bool {
		return h.Discard == jetstream.DiscardNew && w.Discard == jetstream.DiscardOld
	}},
	{"discard_new_per_subject", "turned off: a subject at its limit drops its oldest instead of refusing new ones", func(h, w jetstream.StreamConfig) bool {
		return h.DiscardNewPerSubject && !w.DiscardNewPerSubject
	}},
}

// lowered reports whether a limit goes down: none (zero or negative) becoming one, or a limit
// becoming smaller.
func lowered(have, want int64) bool {
	if want <= 0 {
		return false
	}
	return have <= 0 || want < have
}

// markReplaces sets Replaces on each differing field a rule says forces a replace.
func markReplaces[C any](fields []Field, rules []replaceRule[C], have, want C) {
	for i := range fields {
		for _, r := range rules {
			if r.Field == fields[i].Name {
				fields[i].Replaces = r.forces(have, want)
			}
		}
	}
}

// markDiscards sets Discards on each differing field a rule says drops stored messages.
func markDiscards(fields []Field, have, want jetstream.StreamConfig) {
	for i := range fields {
		for _, r := range streamDiscardRules {
			if r.Field == fields[i].Name && r.forces(have, want) {
				fields[i].Discards = true
				fields[i].DiscardsWhen = r.When
			}
		}
	}
}
