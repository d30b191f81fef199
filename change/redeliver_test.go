package change

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/compiler/compilertest"
)

// A consumer pruned in one review and declared again in another looks new in both, yet its
// module receives again everything the stream holds: the plan says so at each end.
func TestAConsumerMadeOnAFullStreamOrPrunedSaysWhatItRedelivers(t *testing.T) {
	plan := compilertest.MeshPlan(1, jetstream.FileStorage)
	if len(plan.Consumers) == 0 {
		t.Fatal("the mesh plan has no consumer to take away")
	}
	taken := plan.Consumers[0]
	name := compiler.ConsumerName(taken.Config)
	notesOf := func(cs Changes) string {
		for _, c := range cs.Items {
			if c.Kind == KindConsumer && c.Stream == taken.Stream && c.Consumer == name {
				return strings.Join(c.Notes, "\n")
			}
		}
		t.Fatalf("no change for consumer %s/%s: %s", taken.Stream, name, cs.Summary())
		return ""
	}
	// The bus without the consumer, its stream holding held messages.
	without := func(held uint64) *State {
		live := liveFor(plan)
		for i := range live.Streams {
			s := &live.Streams[i]
			if s.Name != taken.Stream {
				continue
			}
			s.Messages = held
			kept := s.Consumers[:0]
			for _, c := range s.Consumers {
				if c.Name != name {
					kept = append(kept, c)
				}
			}
			s.Consumers = kept
		}
		return live
	}

	// Fires: made on a stream holding messages, delivering from the start.
	if n := notesOf(Diff(without(42), plan, DiffOptions{})); !strings.Contains(n, "which holds 42 messages: it delivers every one its filters match") {
		t.Fatalf("a consumer made on a stream of 42 messages does not say it delivers them: %q", n)
	}
	// Quiet: an empty stream, and a consumer that starts with what comes next.
	if n := notesOf(Diff(without(0), plan, DiffOptions{})); n != "" {
		t.Fatalf("a consumer made on an empty stream has notes: %q", n)
	}
	fresh := *plan
	fresh.Consumers = append([]compiler.Consumer(nil), plan.Consumers...)
	fresh.Consumers[0].Config.DeliverPolicy = jetstream.DeliverNewPolicy
	cs := Diff(without(42), &fresh, DiffOptions{})
	for _, c := range cs.Items {
		if c.Consumer == name && len(c.Notes) != 0 {
			t.Fatalf("a consumer delivering only new messages says it redelivers: %q", c.Notes)
		}
	}

	// Pruned: the delete says what goes with it.
	live := liveFor(plan)
	for i := range live.Streams {
		for k := range live.Streams[i].Consumers {
			if live.Streams[i].Consumers[k].Name == name {
				live.Streams[i].Consumers[k].AckFloor = 17
			}
		}
	}
	dropped := *plan
	dropped.Consumers = plan.Consumers[1:]
	n := notesOf(Diff(live, &dropped, DiffOptions{Prune: true}))
	if !strings.Contains(n, "is deleted with its position (acknowledged up to stream sequence 17)") {
		t.Fatalf("a pruned consumer does not say its position goes: %q", n)
	}
}
