package benchmarks

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/compiler/compilertest"
)

// BenchmarkDiffWithResumePoints diffs a bus of 14,000 consumers on EVENTS, 1,000 of them
// missing, whose stream carries 200 resume points (100 for missing consumers, 100 stale), against
// its floor: the same diff with no point at all. A diff decoded every point and looked each up
// in the whole plan once per missing consumer: 14.7 s for this one diff.
func BenchmarkDiffWithResumePoints(b *testing.B) {
	const consumers, missing, points = 14_000, 1_000, 200
	plan := compilertest.MeshPlan(1, jetstream.FileStorage)
	for i := range plan.Streams {
		plan.Streams[i].Config.Metadata = plan.Marked(nil)
	}
	plan.Consumers = plan.Consumers[:0:0]
	for i := range consumers {
		plan.Consumers = append(plan.Consumers, compiler.Consumer{Stream: "EVENTS", Config: jetstream.ConsumerConfig{
			Durable: fmt.Sprintf("node%05d_module", i), AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: -1,
			FilterSubjects: []string{fmt.Sprintf("mesh.mod.m%05d.event.done", i)}, Metadata: plan.Marked(nil),
		}})
	}
	withPoints := func(n int) *change.State {
		live := change.Applied(plan)
		events := live.Stream("EVENTS")
		events.Consumers = events.Consumers[missing:]
		md := map[string]string{}
		for k, v := range events.Config.Metadata {
			md[k] = v
		}
		for i := range n {
			// The first half resume missing consumers, the rest are stale (their consumer exists).
			r := change.ResumePoint{Consumer: fmt.Sprintf("node%05d_module", i*(missing/(points/2))%consumers),
				DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: uint64(1000 + i), Recorded: time.Now()}
			if i >= n/2 {
				r.Consumer = fmt.Sprintf("node%05d_module", missing+i)
			}
			md[r.Key()] = r.Value()
		}
		events.Config.Metadata = md
		return live
	}
	for _, n := range []int{0, points} {
		name := fmt.Sprintf("%d points", n)
		if n == 0 {
			name = "floor: no points"
		}
		b.Run(name, func(b *testing.B) {
			live := withPoints(n)
			var cs change.Changes
			for b.Loop() {
				cs = change.Diff(live, plan, change.DiffOptions{})
			}
			if got := cs.Count(change.Create); got != missing {
				b.Fatalf("%d consumers to create, want %d", got, missing)
			}
			if n > 0 && len(cs.Stale) != n/2 {
				b.Fatalf("%d stale points, want %d", len(cs.Stale), n/2)
			}
		})
	}
}
