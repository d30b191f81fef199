package apply

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshc-dev/meshc/apply/wire"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/output"
	"github.com/meshc-dev/meshc/internal/testwait"
)

// replaceable sets up a bus as mesh-controller with the example's plan, 10 events on one of
// EVENTS' consumers of which the first 5 are acknowledged, and returns a plan that must replace
// that consumer (max_waiting cannot change in place).
func replaceable(t *testing.T, b *meshBus) (consumer string, replacing *compiler.Plan) {
	t.Helper()
	ctx := t.Context()
	if _, _, err := converge(t, b.controller.nc, b.controller.js, b.plan, change.DiffOptions{}, Options{}); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(b.plan.Consumers, func(c compiler.Consumer) bool {
		return c.Stream == compiler.EventsStream && c.Config.DeliverSubject == ""
	})
	if i < 0 {
		t.Fatal("the example has no pull consumer on EVENTS")
	}
	pc := b.plan.Consumers[i]
	filter := pc.Config.FilterSubject
	if filter == "" {
		filter = pc.Config.FilterSubjects[0]
	}
	subject := strings.NewReplacer("*", "x", ">", "x").Replace(filter)
	for n := range 10 {
		if _, err := b.other.Publish(ctx, subject, []byte(fmt.Sprint(n))); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := b.other.Consumer(ctx, compiler.EventsStream, pc.Config.Durable)
	if err != nil {
		t.Fatal(err)
	}
	ackFirst(t, cons, 5)
	if info, err := cons.Info(ctx); err != nil || info.AckFloor.Stream != 5 {
		t.Fatalf("the consumer acknowledged up to %v (%v), want 5", info, err)
	}

	replacing = clonePlanUsers(b.plan)
	replacing.Consumers = slices.Clone(b.plan.Consumers)
	replacing.Consumers[i].Config.MaxWaiting = 100
	return pc.Config.Durable, replacing
}

// requireResumedAfterFloor fetches everything the consumer delivers and requires it to start
// just after what was acknowledged: no acknowledged message delivered again, none skipped.
func requireResumedAfterFloor(t *testing.T, b *meshBus, consumer string) {
	t.Helper()
	cons, err := b.other.Consumer(t.Context(), compiler.EventsStream, consumer)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(10, jetstream.FetchMaxWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for m := range batch.Messages() {
		md, _ := m.Metadata()
		seqs = append(seqs, md.Sequence.Stream)
	}
	if !slices.Equal(seqs, []uint64{6, 7, 8, 9, 10}) {
		t.Fatalf("the re-made consumer delivered stream sequences %v; want 6..10 (1..5 were acknowledged)", seqs)
	}
}

// rerunResumes plans and applies again and requires the plan to say where the consumer
// resumes, apply to honour it, and the point to be gone afterwards.
func rerunResumes(t *testing.T, b *meshBus, consumer string, plan *compiler.Plan) {
	t.Helper()
	cs := diffNow(t, b.controller.nc, plan, change.DiffOptions{})
	c := findChange(t, cs, change.KindConsumer, compiler.EventsStream, consumer)
	if c.Action != change.Create || !slices.ContainsFunc(c.Notes, func(n string) bool { return strings.Contains(n, "resumes at stream sequence 6") }) {
		t.Fatalf("the rerun's plan does not say where the consumer resumes: %+v", c)
	}
	var text strings.Builder
	if err := change.Render(&text, cs, output.Text); err != nil || !strings.Contains(text.String(), "resumes at stream sequence 6") {
		t.Fatalf("the rendered plan does not say where it resumes:\n%s", text.String())
	}
	if _, err := Apply(t.Context(), b.controller.js, cs, Options{}); err != nil {
		t.Fatalf("the rerun: %v", err)
	}
	requireResumedAfterFloor(t, b, consumer)
	if points := resumePoints(t, b); len(points) != 0 {
		t.Fatalf("resume points left after the consumer was made again: %+v", points)
	}
	requireEmpty(t, diffNow(t, b.controller.nc, plan, change.DiffOptions{}), "the rerun converged")
	b.controller.requireNoViolation(t)
}

// resumePoints reads the resume points EVENTS carries, as the server holds them.
func resumePoints(t *testing.T, b *meshBus) map[string]change.ResumePoint {
	t.Helper()
	live, err := wire.Read(t.Context(), b.controller.nc, wire.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return live.Stream(compiler.EventsStream).Resumes()
}

// An apply killed between a replaced consumer's delete and its create: the rerun finds where
// the replacement starts on the bus and delivers nothing acknowledged again.
func TestAReplaceStoppedAfterTheDeleteResumesOnTheRerun(t *testing.T) {
	t.Parallel()
	b := startMeshBus(t)
	consumer, plan := replaceable(t, b)

	cs := diffNow(t, b.controller.nc, plan, change.DiffOptions{})
	c := only(t, cs)
	if c.Action != change.Replace || !strings.Contains(strings.Join(c.Notes, " "), "resumes at stream sequence 6") {
		t.Fatalf("the plan does not say where the replaced consumer resumes: %+v", c)
	}
	killed := errors.New("killed")
	_, err := Apply(t.Context(), b.controller.js, cs, Options{AllowReplace: true, AfterDelete: func(change.Change) error { return killed }})
	if !errors.Is(err, killed) {
		t.Fatalf("the fault hook did not stop the apply: %v", err)
	}
	if _, err := b.other.Consumer(t.Context(), compiler.EventsStream, consumer); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("the consumer should be gone between delete and create: %v", err)
	}

	// Without the recorded point, the plan would make it from the start: the check is the point.
	live, err := wire.Read(t.Context(), b.controller.nc, wire.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range live.Streams {
		for k := range live.Streams[i].Config.Metadata {
			if strings.HasPrefix(k, change.ResumeKeyPrefix) {
				delete(live.Streams[i].Config.Metadata, k)
			}
		}
	}
	// And the plan says so: a new consumer on a stream that holds messages delivers them all.
	if c := findChange(t, change.Diff(live, plan, change.DiffOptions{}), change.KindConsumer, compiler.EventsStream, consumer); c.ConsumerConfig.DeliverPolicy != jetstream.DeliverAllPolicy ||
		len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "it delivers every one its filters match") {
		t.Fatalf("without a recorded point the consumer would start at %v, said so: %q", c.ConsumerConfig.DeliverPolicy, c.Notes)
	}

	rerunResumes(t, b, consumer, plan)
}

// The server goes away between the delete and the create for longer than apply retries; the
// rerun against the restarted server resumes the consumer where it was.
func TestAReplaceOutlastedByAStoppedServerResumesOnTheRerun(t *testing.T) {
	t.Parallel()
	b := startMeshBus(t)
	consumer, plan := replaceable(t, b)

	cs := diffNow(t, b.controller.nc, plan, change.DiffOptions{})
	_, err := Apply(t.Context(), b.controller.js, cs, Options{
		AllowReplace: true, RetryFor: time.Second, AttemptTimeout: 300 * time.Millisecond,
		AfterDelete: func(change.Change) error {
			b.server.Shutdown()
			b.server.WaitForShutdown()
			return nil
		},
	})
	if err == nil || !strings.Contains(err.Error(), "still failing after retrying") {
		t.Fatalf("an apply whose server stopped mid-replace: %v", err)
	}

	restarted := startMeshBusIn(t, b.dir, b.plan)
	rerunResumes(t, restarted, consumer, plan)
}

// An apply stopped after making a replaced consumer again and before removing its resume point
// leaves the point behind: the rerun's plan says it is stale, apply removes it, and it never
// starts anything.
func TestAResumePointLeftBehindIsStaleAndRemoved(t *testing.T) {
	t.Parallel()
	b := startMeshBus(t)
	consumer, plan := stoppedReplace(t, b, func(o *Options, stop func(change.Change) error) { o.AfterCreate = stop })

	cs := diffNow(t, b.controller.nc, plan, change.DiffOptions{})
	if len(cs.Stale) != 1 || cs.Stale[0].Consumer != consumer || !strings.Contains(cs.Stale[0].Why, "the consumer exists") || cs.Empty() {
		t.Fatalf("the rerun's plan does not call the point stale: %+v", cs.Stale)
	}
	var text strings.Builder
	if err := change.Render(&text, cs, output.Text); err != nil || !strings.Contains(text.String(), "1 stale resume point(s) to remove") || !strings.Contains(text.String(), "is stale") {
		t.Fatalf("the rendered plan does not say so:\n%s", text.String())
	}
	if _, err := Apply(t.Context(), b.controller.js, cs, Options{}); err != nil {
		t.Fatal(err)
	}
	if points := resumePoints(t, b); len(points) != 0 {
		t.Fatalf("the stale point survived the apply: %+v", points)
	}
	requireEmpty(t, diffNow(t, b.controller.nc, plan, change.DiffOptions{}), "the stale point is gone")
	requireResumedAfterFloor(t, b, consumer)
	b.controller.requireNoViolation(t)
}

// A resume point left behind by an apply stopped mid-replace, then the stream removed and applied
// again: the new stream's consumer starts at the beginning of the new stream, whatever sequence the
// old one had reached, so what arrives next is delivered.
func TestAPointLeftBehindNeverStartsAConsumerOnANewStream(t *testing.T) {
	t.Parallel()
	b := startMeshBus(t)
	consumer, plan := stoppedReplace(t, b, func(o *Options, stop func(change.Change) error) { o.AfterCreate = stop })
	if err := b.other.DeleteStream(t.Context(), compiler.EventsStream); err != nil {
		t.Fatal(err)
	}
	if _, _, err := converge(t, b.controller.nc, b.controller.js, plan, change.DiffOptions{}, Options{}); err != nil {
		t.Fatal(err)
	}
	cons := publishFive(t, b, consumer)
	// The server counts a consumer's pending a moment after the PubAck (CI once read 0 at once):
	// waited for, where a consumer started past the new stream's messages stays at 0.
	var info *jetstream.ConsumerInfo
	testwait.For(t, "the consumer made on the new stream to have the 5 messages pending", 5*time.Second, func() bool {
		var err error
		if info, err = cons.Info(t.Context()); err != nil {
			t.Fatal(err)
		}
		return info.NumPending == 5
	})
	if info.Config.DeliverPolicy != jetstream.DeliverAllPolicy {
		t.Fatalf("the consumer made on the new stream starts at %v %d", info.Config.DeliverPolicy, info.Config.OptStartSeq)
	}
}

// stoppedReplace replaces a consumer and stops the apply at the fault hook at sets (after the
// delete, or after the create), as a kill there would, leaving its resume point behind.
func stoppedReplace(t *testing.T, b *meshBus, at func(o *Options, stop func(change.Change) error)) (consumer string, plan *compiler.Plan) {
	t.Helper()
	consumer, plan = replaceable(t, b)
	stopped := errors.New("killed")
	opts := Options{AllowReplace: true}
	at(&opts, func(change.Change) error { return stopped })
	if _, err := Apply(t.Context(), b.controller.js, diffNow(t, b.controller.nc, plan, change.DiffOptions{}), opts); !errors.Is(err, stopped) {
		t.Fatalf("the fault hook did not stop the apply: %v", err)
	}
	if _, ok := resumePoints(t, b)[consumer]; !ok {
		t.Fatal("the stopped apply left no point behind: the case is not set up")
	}
	return consumer, plan
}

// publishFive publishes five messages the consumer's filter matches, and returns the consumer.
func publishFive(t *testing.T, b *meshBus, consumer string) jetstream.Consumer {
	t.Helper()
	cons, err := b.other.Consumer(t.Context(), compiler.EventsStream, consumer)
	if err != nil {
		t.Fatal(err)
	}
	filter := cons.CachedInfo().Config.FilterSubject
	if filter == "" {
		filter = cons.CachedInfo().Config.FilterSubjects[0]
	}
	subject := strings.NewReplacer("*", "x", ">", "x").Replace(filter)
	for n := range 5 {
		if _, err := b.other.Publish(t.Context(), subject, []byte(fmt.Sprint(n))); err != nil {
			t.Fatal(err)
		}
	}
	return cons
}

// The point of a consumer the plan no longer has (removed, or renamed) is stale: listed by the
// plan and removed by apply, never left to start a consumer of that name one day.
func TestTheResumePointOfAConsumerThePlanDroppedIsRemoved(t *testing.T) {
	t.Parallel()
	b := startMeshBus(t)
	consumer, plan := stoppedReplace(t, b, func(o *Options, stop func(change.Change) error) { o.AfterDelete = stop })
	renamed := clonePlanUsers(plan)
	renamed.Consumers = slices.Clone(plan.Consumers)
	for i := range renamed.Consumers {
		if renamed.Consumers[i].Config.Durable == consumer {
			renamed.Consumers[i].Config.Durable = consumer + "_v2"
			renamed.Consumers[i].Config.Name = consumer + "_v2"
		}
	}
	cs := diffNow(t, b.controller.nc, renamed, change.DiffOptions{})
	if len(cs.Stale) != 1 || cs.Stale[0].Consumer != consumer || !strings.Contains(cs.Stale[0].Why, "no longer has") {
		t.Fatalf("the plan does not list the dropped consumer's point as stale: %+v", cs.Stale)
	}
	if _, err := Apply(t.Context(), b.controller.js, cs, Options{}); err != nil {
		t.Fatal(err)
	}
	if points := resumePoints(t, b); len(points) != 0 {
		t.Fatalf("the dropped consumer's point survived: %+v", points)
	}
	requireEmpty(t, diffNow(t, b.controller.nc, renamed, change.DiffOptions{}), "the renamed consumer exists and no point is left")
	b.controller.requireNoViolation(t)
}

// Stale points from applies killed in their rounds, filling EVENTS' metadata to just under the
// 128 KiB the server takes: the next replace records its point in the same edit that removes
// them, so it fits, where recording first and cleaning last was refused on every rerun.
func TestStalePointsAreRemovedBeforeARoundRecords(t *testing.T) {
	t.Parallel()
	b := startMeshBus(t)
	consumer, plan := replaceable(t, b)
	ctx := t.Context()
	s, err := b.other.Stream(ctx, compiler.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	md := map[string]string{}
	size := 0
	for k, v := range cfg.Metadata {
		md[k] = v
		size += len(k) + len(v)
	}
	// The point of a consumer the plan never had, as a killed apply would leave.
	point := func(i int) (string, string) {
		r := change.ResumePoint{Consumer: fmt.Sprintf("gone_%05d", i), DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: uint64(i + 1), Recorded: time.Now().UTC()}
		return r.Key(), r.Value()
	}
	stale := 0
	for {
		k, v := point(stale)
		// As many as fit: the replace's own point (its consumer's name is longer) does not.
		if size+len(k)+len(v) > 128*1024 {
			break
		}
		md[k], size = v, size+len(k)+len(v)
		stale++
	}
	cfg.Metadata = md
	if _, err := b.other.UpdateStream(ctx, cfg); err != nil {
		t.Fatalf("filling the metadata with %d stale points (%d bytes): %v", stale, size, err)
	}
	cs := diffNow(t, b.controller.nc, plan, change.DiffOptions{})
	if len(cs.Stale) != stale || cs.Count(change.Replace) != 1 {
		t.Fatalf("the plan lists %d stale points and %d replaces, want %d and 1", len(cs.Stale), cs.Count(change.Replace), stale)
	}
	if _, err := Apply(ctx, b.controller.js, cs, Options{AllowReplace: true}); err != nil {
		t.Fatalf("a replace beside %d stale points (%d bytes of metadata): %v", stale, size, err)
	}
	if points := resumePoints(t, b); len(points) != 0 {
		t.Fatalf("%d points left after the apply", len(points))
	}
	requireEmpty(t, diffNow(t, b.controller.nc, plan, change.DiffOptions{}), "the replace was made and the stale points removed")
	requireResumedAfterFloor(t, b, consumer)
	b.controller.requireNoViolation(t)
}
