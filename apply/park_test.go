package apply

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/meshc-dev/meshc/apply/wire"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
)

// retiredStream makes what an older catalogue had meshc make: a marked, empty work queue the
// plan no longer has.
func retiredStream(t *testing.T, b *meshBus) {
	t.Helper()
	if _, _, err := converge(t, b.controller.nc, b.controller.js, b.plan, change.DiffOptions{}, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.controller.js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "SEAT_RETIRED", Subjects: []string{"mesh.seat.retired.accept.>"},
		Retention: jetstream.WorkQueuePolicy, Metadata: b.plan.Marked(nil)}); err != nil {
		t.Fatal(err)
	}
}

// publishTo publishes n messages to subject as the other application and requires each stored
// by the stream named.
func publishTo(t *testing.T, b *meshBus, subject, stream string, n int) {
	t.Helper()
	for i := range n {
		ack, err := b.other.Publish(t.Context(), subject, []byte(fmt.Sprint(i)))
		if err != nil || ack.Stream != stream {
			t.Fatalf("publish to %s: %v %v; want it stored by %s", subject, ack, err, stream)
		}
	}
}

// requireTakesMessages requires the stream to hold want messages, its subjects to be subjects,
// and a publish to be stored by it.
func requireTakesMessages(t *testing.T, b *meshBus, stream string, subjects []string, want uint64) {
	t.Helper()
	s, err := b.other.Stream(t.Context(), stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	info := s.CachedInfo()
	if info.State.Msgs != want || !slices.Equal(info.Config.Subjects, subjects) {
		t.Fatalf("stream %s holds %d messages on %q; want %d on %q", stream, info.State.Msgs, info.Config.Subjects, want, subjects)
	}
	publishTo(t, b, strings.Replace(subjects[0], ">", "again", 1), stream, 1)
}

// A stream pruned while its publishers still ran: the plan counted it empty, and five messages were
// published before the delete. The server decides: the stream takes nothing once parked, holds
// five, and is given its subjects back, not deleted.
func TestAStreamThatReceivedMessagesAfterThePlanIsNotPruned(t *testing.T) {
	t.Parallel()
	b := startMeshBus(t)
	retiredStream(t, b)
	cs := diffNow(t, b.controller.nc, b.plan, change.DiffOptions{Prune: true})
	if c := findChange(t, cs, change.KindStream, "SEAT_RETIRED", ""); c.Action != change.Delete || c.Messages != 0 {
		t.Fatalf("the plan: %+v", c)
	}
	publishTo(t, b, "mesh.seat.retired.accept.build", "SEAT_RETIRED", 5)

	_, err := Apply(t.Context(), b.controller.js, cs, Options{Prune: true})
	if !errors.Is(err, wire.ErrRefused) || !strings.Contains(err.Error(), "holds 5 message(s)") || !strings.Contains(err.Error(), "it takes messages again") {
		t.Fatalf("pruning a stream that received 5 messages since the plan: %v", err)
	}
	requireTakesMessages(t, b, "SEAT_RETIRED", []string{"mesh.seat.retired.accept.>"}, 5)
	b.controller.requireNoViolation(t)
}

// The same for a replace: the plan saw an empty stream, messages arrived, and the stream is
// neither deleted nor changed.
func TestAStreamThatReceivedMessagesAfterThePlanIsNotReplaced(t *testing.T) {
	t.Parallel()
	b := startMeshBus(t)
	if _, _, err := converge(t, b.controller.nc, b.controller.js, b.plan, change.DiffOptions{}, Options{}); err != nil {
		t.Fatal(err)
	}
	plan := clonePlanUsers(b.plan)
	plan.Streams = slices.Clone(b.plan.Streams)
	i := slices.IndexFunc(plan.Streams, func(s compiler.Stream) bool { return strings.HasPrefix(s.Config.Name, "SEAT_") })
	seat := plan.Streams[i].Config
	plan.Streams[i].Config.Storage = jetstream.MemoryStorage
	cs := diffNow(t, b.controller.nc, plan, change.DiffOptions{})
	if c := findChange(t, cs, change.KindStream, seat.Name, ""); c.Action != change.Replace || c.Messages != 0 {
		t.Fatalf("the plan: %+v", c)
	}
	subject := strings.Replace(seat.Subjects[0], ">", "build", 1)
	subject = strings.ReplaceAll(subject, "*", "x")
	publishTo(t, b, subject, seat.Name, 5)

	_, err := Apply(t.Context(), b.controller.js, cs, Options{AllowReplace: true})
	if !errors.Is(err, wire.ErrRefused) || !strings.Contains(err.Error(), "holds 5 message(s)") {
		t.Fatalf("replacing a stream that received 5 messages since the plan: %v", err)
	}
	s, err := b.other.Stream(t.Context(), seat.Name)
	if err != nil || s.CachedInfo().Config.Storage != jetstream.FileStorage {
		t.Fatalf("the stream was changed after all: %v", err)
	}
	requireTakesMessages(t, b, seat.Name, seat.Subjects, 5)
	b.controller.requireNoViolation(t)
}

// An apply stopped between parking a stream and deleting it leaves the stream taking nothing.
// The next plan says so, and apply gives it its subjects back (or, pruning, deletes it).
func TestAStreamLeftParkedIsGivenItsSubjectsBack(t *testing.T) {
	t.Parallel()
	b := startMeshBus(t)
	retiredStream(t, b)
	stopped := errors.New("killed")
	cs := diffNow(t, b.controller.nc, b.plan, change.DiffOptions{Prune: true})
	if _, err := Apply(t.Context(), b.controller.js, cs, Options{Prune: true, AfterPark: func(change.Change) error { return stopped }}); !errors.Is(err, stopped) {
		t.Fatalf("the fault hook did not stop the apply: %v", err)
	}
	if _, err := b.other.Publish(t.Context(), "mesh.seat.retired.accept.build", nil); err == nil {
		t.Fatal("the parked stream still takes messages: the case is not set up")
	}

	cs = diffNow(t, b.controller.nc, b.plan, change.DiffOptions{})
	c := findChange(t, cs, change.KindStream, "SEAT_RETIRED", "")
	if c.Action != change.Update || !strings.Contains(strings.Join(c.Notes, " "), "is parked") {
		t.Fatalf("the plan of a parked stream: %+v", c)
	}
	if _, err := Apply(t.Context(), b.controller.js, cs, Options{}); err != nil {
		t.Fatal(err)
	}
	requireTakesMessages(t, b, "SEAT_RETIRED", []string{"mesh.seat.retired.accept.>"}, 0)
	for _, c := range diffNow(t, b.controller.nc, b.plan, change.DiffOptions{}).Items {
		if c.Stream == "SEAT_RETIRED" {
			t.Fatalf("the restored stream still shows a change: %+v", c)
		}
	}
	b.controller.requireNoViolation(t)
}
