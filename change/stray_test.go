package change

import (
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/compiler/compilertest"
)

// A stream the mesh marked and the plan dropped is pruned, unless another tool's consumer rides
// on it: deleting the stream would delete that consumer, so it is left alone and said.
func TestAStrayMarkedStreamCarryingAnothersConsumerIsNotPruned(t *testing.T) {
	plan := compilertest.MeshPlan(1, jetstream.FileStorage)
	mark := map[string]string{compiler.OwnerKey: plan.Account}
	stray := func(consumer Consumer) *State {
		live := liveFor(plan)
		s := Stream{Name: "SEAT_OLD", Config: normalStream(jetstream.StreamConfig{Name: "SEAT_OLD", Subjects: []string{"mesh.seat.old.accept.>"}, Metadata: mark})}
		if consumer.Name != "" {
			s.Consumers = []Consumer{consumer}
		}
		live.Streams = append(live.Streams, s)
		slices.SortFunc(live.Streams, func(a, b Stream) int { return strings.Compare(a.Name, b.Name) })
		return live
	}

	// Fires: another's consumer on it.
	theirs := Consumer{Stream: "SEAT_OLD", Name: "their-worker", Config: normalConsumer(jetstream.ConsumerConfig{Durable: "their-worker"})}
	cs := Diff(stray(theirs), plan, DiffOptions{Prune: true})
	for _, c := range cs.Items {
		if c.Stream == "SEAT_OLD" && c.Action == Delete {
			t.Fatalf("a stream carrying another's consumer is pruned: %+v", c)
		}
	}
	if !strings.Contains(strings.Join(cs.Notes, "\n"), "stream SEAT_OLD is not in the plan but carries consumers meshc does not manage (SEAT_OLD/their-worker)") {
		t.Fatalf("leaving it alone was not said: %q", cs.Notes)
	}

	// Quiet: nothing but the mesh's own on it, and it is pruned.
	cs = Diff(stray(Consumer{}), plan, DiffOptions{Prune: true})
	pruned := false
	for _, c := range cs.Items {
		pruned = pruned || (c.Stream == "SEAT_OLD" && c.Kind == KindStream && c.Action == Delete)
	}
	if !pruned {
		t.Fatalf("a stray marked stream with nothing of another's on it is not pruned: %s %q", cs.Summary(), cs.Notes)
	}
}
