package change

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// compareStreams lists what differs between the bus's stream and the plan's, each field marked
// with whether it forces a replace (replace.go).
func compareStreams(have, want jetstream.StreamConfig) []Field {
	h, w := normalStream(have), normalStream(want)
	fields := compareStructs(reflect.ValueOf(h), reflect.ValueOf(w), map[string]bool{"name": true})
	markReplaces(fields, streamReplaceRules, h, w)
	markDiscards(fields, h, w)
	return fields
}

// compareConsumers compares an existing consumer with the plan's, after carrying across what is
// the consumer's history rather than its configuration. It adjusts want to what apply must send.
func compareConsumers(have Consumer, want *jetstream.ConsumerConfig) ([]Field, []string) {
	var notes []string
	// Where an existing consumer starts is its history: the server refuses to change it, and
	// reasserting it would replay or skip what it already delivered (docs/history.md, "A control
	// plane crash-looping on a consumer it could not move").
	want.DeliverPolicy = have.Config.DeliverPolicy
	want.OptStartSeq = have.Config.OptStartSeq
	want.OptStartTime = have.Config.OptStartTime

	h, w := normalConsumer(have.Config), normalConsumer(*want)
	if h.DeliverSubject != "" && w.DeliverSubject != "" && h.DeliverSubject != w.DeliverSubject && have.PushBound {
		// The server will not move a delivery subject while a subscriber is bound, and answers
		// "consumer name already in use". Bound is a machine listening; moving it would need
		// its grant for the new subject first, which travels in the user list applied later.
		// So it keeps the subject that works, and that is said (docs/history.md, "A control plane
		// crash-looping on a consumer it could not move").
		notes = append(notes, KeepsSubject(have.Stream, have.Name, h.DeliverSubject, w.DeliverSubject))
		want.DeliverSubject = have.Config.DeliverSubject
		w.DeliverSubject = h.DeliverSubject
	}
	return consumerFields(h, w), notes
}

// KeepsSubject says that a push consumer kept its delivery subject because a subscriber is bound:
// found when reading (Diff) or only when acting (Apply), it reads the same.
func KeepsSubject(stream, consumer, kept, planned string) string {
	return fmt.Sprintf("consumer %s on %s keeps its delivery subject %q rather than %q because a subscriber is bound to it: it keeps delivering; the subject moves on an apply made while nothing is bound",
		consumer, stream, kept, planned)
}

// consumerFields lists what differs between two normalised consumer configurations, each field
// marked with whether it forces a replace (replace.go).
func consumerFields(h, w jetstream.ConsumerConfig) []Field {
	fields := compareStructs(reflect.ValueOf(h), reflect.ValueOf(w), map[string]bool{"name": true, "durable_name": true})
	markReplaces(fields, consumerReplaceRules, h, w)
	return fields
}

// resumeAfterAckFloor makes a replacement consumer start after the last message the old one
// acknowledged, so replacing it neither replays its history nor skips what is pending. Where it
// starts is taken again at apply, from the old consumer read once it is paused and its
// acknowledgements in flight have settled; what the plan says is where it would start now.
func resumeAfterAckFloor(have Consumer, want *jetstream.ConsumerConfig, c *Change) {
	if have.AckedAboveFloor > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("consumer %s has acknowledged up to %d messages above its ack floor, past %d delivered and not yet acknowledged: a replacement starting after the floor would deliver them again, so apply pauses the consumer, waits for the acknowledgements in flight, reads it again, and refuses the replace if any acknowledged message would still be delivered again", have.Name, have.AckedAboveFloor, have.Pending))
	}
	if have.AckFloor == 0 {
		return
	}
	want.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
	want.OptStartSeq = have.AckFloor + 1
	want.OptStartTime = nil
	c.Notes = append(c.Notes, fmt.Sprintf("the new consumer %s resumes at stream sequence %d, after the last message the old one acknowledged (as it stands now: apply takes the point again once the old one is paused); apply records this on the bus before the delete, so a rerun after a stop between delete and create resumes there too", have.Name, want.OptStartSeq))
}

// StoredDiffers lists the settings in which a consumer the server stores differs from the one
// apply asked for, both normalised: what an answer apply cannot take at its word is judged by.
func StoredDiffers(stored, asked jetstream.ConsumerConfig) []Field {
	return consumerFields(normalConsumer(stored), normalConsumer(asked))
}

// compareStructs lists every field, by its JSON name, whose values differ. Every field is
// compared, not a chosen few: a setting the plan drops is a change too, and a default the
// normalisation missed shows up as a phantom change in the round-trip test rather than as a
// drift nobody sees.
func compareStructs(have, want reflect.Value, skip map[string]bool) []Field {
	var out []Field
	t := have.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "" || name == "-" || skip[name] {
			continue
		}
		h, w := have.Field(i), want.Field(i)
		if equalValues(h, w) {
			continue
		}
		f := Field{Name: name, Old: render(h), New: render(w)}
		if hs, ok := h.Interface().([]string); ok {
			ws := w.Interface().([]string)
			f.Added, f.Removed = listDelta(hs, ws)
			f.OldList, f.NewList = nonNil(hs), nonNil(ws)
		}
		out = append(out, f)
	}
	return out
}

// listDelta returns what want has that have lacks, and the reverse, each sorted.
func listDelta(have, want []string) (added, removed []string) {
	// Sets, not scans: a consumer of a module that consumes thousands of events has a filter each.
	set := func(xs []string) map[string]bool {
		out := make(map[string]bool, len(xs))
		for _, x := range xs {
			out[x] = true
		}
		return out
	}
	had, wanted := set(have), set(want)
	for _, x := range want {
		if !had[x] {
			added = append(added, x)
		}
	}
	for _, x := range have {
		if !wanted[x] {
			removed = append(removed, x)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	return added, removed
}

func equalValues(a, b reflect.Value) bool {
	if ta, ok := a.Interface().(*time.Time); ok {
		tb := b.Interface().(*time.Time)
		if ta == nil || tb == nil {
			return ta == tb
		}
		return ta.Equal(*tb)
	}
	if a.Kind() == reflect.Slice || a.Kind() == reflect.Map {
		if a.Len() == 0 && b.Len() == 0 {
			return true
		}
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

// render shows a value the way a reviewer reads it: durations as durations, policies by name.
func render(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case string:
		if x == "" {
			return `""`
		}
		return x
	case time.Duration:
		return x.String()
	case *time.Time:
		if x == nil {
			return "none"
		}
		return x.UTC().Format(time.RFC3339Nano)
	case json.Marshaler:
		// The policies, in the JetStream API's own words ("workqueue", "explicit").
		if b, err := x.MarshalJSON(); err == nil {
			var s string
			if json.Unmarshal(b, &s) == nil {
				return s
			}
			return string(b)
		}
	case []string:
		return "[" + strings.Join(x, ", ") + "]"
	case map[string]string:
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(x)) {
			kv = append(kv, k+"="+x[k])
		}
		return "{" + strings.Join(kv, ", ") + "}"
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "none"
		}
		return render(v.Elem())
	case reflect.Struct, reflect.Slice:
		return fmt.Sprintf("%+v", v.Interface())
	}
	return fmt.Sprint(v.Interface())
}
