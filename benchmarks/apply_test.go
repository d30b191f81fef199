package benchmarks

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/meshc-dev/meshc/apply"
	"github.com/meshc-dev/meshc/apply/wire"
	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
)

// The plans the apply benchmarks assert are compiled from synthetic catalogues, so their streams
// and consumers have the mesh's real shape: three mesh streams, a work queue per seat, and most
// consumers on EVENTS with one filter per consumed event. The sizes are chosen for the object
// counts a large mesh reaches (about 1,000 objects; about 10,000 consumers).
const (
	fromEmptyModules = 670
	reapplyModules   = 7_300
)

// floorInFlight is the floor's concurrency: the top of the 16–64 range measured (docs/nats.md,
// "Measured baselines"), the strictest floor to stand beside.
const floorInFlight = 64

// BenchmarkApplyFromEmpty asserts a plan on an empty bus, beside its floor: the same streams and
// consumers created by raw concurrent JetStream calls. Each iteration gets a fresh server, made
// and shut down with the timer stopped. Goal: meshc ≤ 1.5× the floor.
func BenchmarkApplyFromEmpty(b *testing.B) {
	plan := compiledPlan(b, fromEmptyModules)
	key := size(b, plan)
	b.Run(key+"/impl=floor", func(b *testing.B) {
		fromEmpty(b, plan, func(ctx context.Context, x *bus) error { return createAll(ctx, x.js, plan) })
	})
	b.Run(key+"/impl=meshc", func(b *testing.B) {
		fromEmpty(b, plan, func(ctx context.Context, x *bus) error {
			live, err := wire.Read(ctx, x.nc, wire.ReadOptions{})
			if err != nil {
				return err
			}
			cs := change.Diff(live, plan, change.DiffOptions{})
			if n, want := cs.Count(change.Create), len(plan.Streams)+len(plan.Consumers); n != want {
				return fmt.Errorf("an empty bus should need %d creates, the diff has %d: %s", want, n, cs.Summary())
			}
			_, err = apply.Apply(ctx, x.js, cs, apply.Options{})
			return err
		})
	})
	// As meshc apply runs it: under the bus's lock, every write behind the lock's fence.
	b.Run(key+"/impl=meshc-locked", func(b *testing.B) {
		fromEmpty(b, plan, func(ctx context.Context, x *bus) error {
			lock, err := wire.AcquireLock(ctx, x.js, wire.LockOptions{Holder: "benchmark"})
			if err != nil {
				return err
			}
			defer lock.Release(context.Background())
			live, err := wire.Read(lock.Context(), x.nc, wire.ReadOptions{})
			if err != nil {
				return err
			}
			_, err = apply.Apply(lock.Context(), x.js, change.Diff(live, plan, change.DiffOptions{}), apply.Options{Fence: lock.Check})
			return err
		})
	})
}

func fromEmpty(b *testing.B, plan *compiler.Plan, assert func(context.Context, *bus) error) {
	var elapsed time.Duration
	for b.Loop() {
		b.StopTimer()
		x := startBus(b)
		b.StartTimer()
		start := time.Now()
		if err := assert(b.Context(), x); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
		b.StopTimer()
		checkHolds(b, x, plan)
		x.stop()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.N*(len(plan.Streams)+len(plan.Consumers)))/elapsed.Seconds(), "objects/s")
}

// createAll is the floor of apply from empty: every stream, then every consumer (a consumer
// needs its stream), floorInFlight requests at a time, no reading, comparing or retrying.
func createAll(ctx context.Context, js jetstream.JetStream, plan *compiler.Plan) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(floorInFlight)
	for _, s := range plan.Streams {
		g.Go(func() error {
			_, err := js.CreateStream(gctx, s.Config)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(floorInFlight)
	for _, c := range plan.Consumers {
		g.Go(func() error {
			_, err := js.CreateOrUpdateConsumer(gctx, c.Stream, c.Config)
			return err
		})
	}
	return g.Wait()
}

// checkHolds fails the benchmark unless the bus now holds exactly the plan, so neither side is
// timed doing less than the whole job.
func checkHolds(b *testing.B, x *bus, plan *compiler.Plan) {
	b.Helper()
	live, err := wire.Read(b.Context(), x.nc, wire.ReadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if cs := change.Diff(live, plan, change.DiffOptions{Prune: true}); !cs.Empty() {
		b.Fatalf("the bus does not hold the plan: %s", cs.Summary())
	}
}

// BenchmarkReapply is a no-op apply of a bus that already holds the plan — read, diff, and
// apply an empty change set — beside its floor: listing the same streams and consumers with the
// paged list API and nothing else. Goal: meshc ≤ 1.5× the floor.
//
// Filling the bus takes minutes on a slow disk (the file store writes every consumer's state
// atomically); -count repeats the sub-benchmarks, not this setup.
func BenchmarkReapply(b *testing.B) {
	plan := compiledPlan(b, reapplyModules)
	x := startBus(b)
	// Stopped here, not left to the process's end: a server of 10,000 consumers in the heap
	// would inflate BenchmarkMemory's figures.
	defer x.stop()
	if err := createAll(b.Context(), x.js, plan); err != nil {
		b.Fatal(err)
	}
	checkHolds(b, x, plan)
	// What the floor lists: the plan's objects and apply's bucket, which up records its delivery in.
	held, err := listAll(b.Context(), x.nc)
	if err != nil || held < len(plan.Streams)+len(plan.Consumers) {
		b.Fatalf("listed %d objects (%v), the plan has %d", held, err, len(plan.Streams)+len(plan.Consumers))
	}
	key := fmt.Sprintf("consumers=%d", len(plan.Consumers))
	b.Logf("plan: %d streams, %d consumers", len(plan.Streams), len(plan.Consumers))

	b.Run(key+"/impl=floor", func(b *testing.B) {
		for b.Loop() {
			n, err := listAll(b.Context(), x.nc)
			if err != nil {
				b.Fatal(err)
			}
			if n != held {
				b.Fatalf("listed %d objects, the bus holds %d", n, held)
			}
		}
	})
	b.Run(key+"/impl=meshc", func(b *testing.B) {
		for b.Loop() {
			live, err := wire.Read(b.Context(), x.nc, wire.ReadOptions{})
			if err != nil {
				b.Fatal(err)
			}
			cs := change.Diff(live, plan, change.DiffOptions{})
			if !cs.Empty() {
				b.Fatalf("a bus holding the plan should need nothing, the diff says: %s", cs.Summary())
			}
			res, err := apply.Apply(b.Context(), x.js, cs, apply.Options{})
			if err != nil || res.Applied != 0 {
				b.Fatalf("a no-op apply applied %d objects: %v", res.Applied, err)
			}
		}
	})
}

// listAll is the re-apply floor: the stream list, then each stream's consumer list, page by page,
// decoded into nats.go's own info types — what any reader of the bus must do, and no more. Raw
// requests, because nats.go lists a stream's consumers only through a handle that costs an
// INFO request per stream first.
func listAll(ctx context.Context, nc *nats.Conn) (int, error) {
	type page struct {
		Error  *jetstream.APIError `json:"error"`
		Total  int                 `json:"total"`
		Offset int                 `json:"offset"`
	}
	var streams []string
	for offset := 0; ; {
		var p struct {
			page
			Streams []*jetstream.StreamInfo `json:"streams"`
		}
		if err := request(ctx, nc, "$JS.API.STREAM.LIST", offset, &p, &p.page.Error); err != nil {
			return 0, err
		}
		for _, s := range p.Streams {
			// apply's own bucket, which the bus's start leaves (up.Start applies under the lock),
			// is not the plan's: listed, like every stream, but not counted.
			if s.Config.Name == "KV_"+compiler.ApplyBucket {
				continue
			}
			streams = append(streams, s.Config.Name)
		}
		offset += len(p.Streams)
		if len(p.Streams) == 0 || offset >= p.Total {
			break
		}
	}
	n := len(streams)
	for _, s := range streams {
		for offset := 0; ; {
			var p struct {
				page
				Consumers []*jetstream.ConsumerInfo `json:"consumers"`
			}
			if err := request(ctx, nc, "$JS.API.CONSUMER.LIST."+s, offset, &p, &p.page.Error); err != nil {
				return 0, err
			}
			n += len(p.Consumers)
			offset += len(p.Consumers)
			if len(p.Consumers) == 0 || offset >= p.Total {
				break
			}
		}
	}
	return n, nil
}

func request(ctx context.Context, nc *nats.Conn, subject string, offset int, into any, apiErr **jetstream.APIError) error {
	body, _ := json.Marshal(map[string]int{"offset": offset})
	msg, err := nc.RequestWithContext(ctx, subject, body)
	if err != nil {
		return fmt.Errorf("%s: %w", subject, err)
	}
	if err := json.Unmarshal(msg.Data, into); err != nil {
		return fmt.Errorf("%s: %w", subject, err)
	}
	if *apiErr != nil {
		return fmt.Errorf("%s: %w", subject, *apiErr)
	}
	return nil
}
