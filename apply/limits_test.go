package apply

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/compiler/compilertest"
	"github.com/meshc-dev/meshc/internal/output"
)

// withoutLimits is the plan as meshc derived it before its streams and pulls were bounded
// (docs/history.md, "A machine that was only enrolling filled a stream"): no max_bytes or
// max_msg_size, no cap per subject where mesh.yaml set none, every stream dropping its oldest,
// pulls as long as the client asks.
func withoutLimits(p *compiler.Plan) *compiler.Plan {
	old := *p
	old.Streams = slices.Clone(p.Streams)
	for i := range old.Streams {
		c := &old.Streams[i].Config
		c.MaxBytes, c.MaxMsgSize, c.Discard = -1, 0, jetstream.DiscardOld
		if c.Name == "CONTROL" || strings.HasPrefix(c.Name, "SEAT_") {
			c.MaxMsgsPerSubject = 0
		}
	}
	old.Consumers = slices.Clone(p.Consumers)
	for i := range old.Consumers {
		old.Consumers[i].Config.MaxRequestExpires = 0
	}
	return &old
}

// A bus made before the limits takes them on its next apply as updates, none a replace, and this
// is what it sees: each stream's limits added, every pull consumer's longest pull. A limit added
// to a stream that drops its oldest (EVENTS, CONTROL, NODES) is a change that may drop what the
// stream holds, refused without AllowDiscard (--allow-discard) even where it holds nothing; a
// seat's queue, which turns to refusing new work, keeps every item it holds and needs no flag.
// Then CONTROL keeps each subject's newest messages up to its cap, and the seat's queue all its
// work.
func TestAnExistingBusTakesTheLimitsAsUpdates(t *testing.T) {
	t.Parallel()
	s := runServer(t)
	nc, js := connect(t, s.ClientURL())
	plan := compilertest.MeshPlan(1, jetstream.FileStorage)
	// Smaller than the defaults, so a test bus can hold more than they allow.
	for i := range plan.Streams {
		if c := &plan.Streams[i].Config; c.Name == "SEAT_MESH_BUILD_MACHINE" {
			c.MaxBytes = 64 << 10
		}
	}
	if _, _, err := converge(t, nc, js, withoutLimits(plan), change.DiffOptions{}, Options{}); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := js.Publish(t.Context(), "mesh.control.report.anchor", []byte("report")); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 {
		if _, err := js.Publish(t.Context(), "mesh.seat.mesh-build-machine.accept.build", bytes.Repeat([]byte("w"), 16<<10)); err != nil {
			t.Fatal(err)
		}
	}

	cs := diffNow(t, nc, plan, change.DiffOptions{})
	var b strings.Builder
	if err := change.Render(&b, cs, output.Text); err != nil {
		t.Fatal(err)
	}
	t.Logf("what an existing bus sees on its first apply with limits:\n%s", b.String())
	for _, c := range cs.Items {
		if c.Action != change.Update && c.Action != change.NoOp {
			t.Errorf("%s: %s, want an update", c.Name(), c.Action)
		}
		for _, f := range c.Fields {
			if f.Replaces {
				t.Errorf("%s: %s forces a replace", c.Name(), f.Name)
			}
		}
	}
	if got, want := cs.Count(change.Update), len(plan.Streams)+len(plan.Consumers)-1; got != want { // the push consumer takes no pulls
		t.Errorf("%d updates, want every stream and every pull consumer (%d)", got, want)
	}
	var discarding []string
	for _, c := range cs.Items {
		if len(c.Discarding()) > 0 {
			discarding = append(discarding, c.Name())
		}
	}
	if want := []string{"CONTROL", "EVENTS", "NODES"}; !slices.Equal(discarding, want) {
		t.Errorf("changes that may drop stored messages: %v, want %v (a seat's queue refuses new work instead)", discarding, want)
	}
	if err := Refusals(cs, Options{}); err == nil || !strings.Contains(err.Error(), "--allow-discard") {
		t.Errorf("the first apply after the limits, without --allow-discard: %v, want it refused", err)
	}
	if _, _, err := converge(t, nc, js, plan, change.DiffOptions{}, Options{AllowDiscard: true}); err != nil {
		t.Fatalf("applying the limits to an existing bus: %v", err)
	}
	requireEmpty(t, diffNow(t, nc, plan, change.DiffOptions{}), "the bus took the limits")

	held := func(stream string) uint64 {
		t.Helper()
		st, err := js.Stream(t.Context(), stream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Msgs
	}
	if got, want := held("CONTROL"), uint64(plan.Streams[0].Config.MaxMsgsPerSubject); got != want {
		t.Errorf("CONTROL held 20 reports of one machine and keeps %d, want its cap %d", got, want)
	}
	if got := held("SEAT_MESH_BUILD_MACHINE"); got != 10 {
		t.Errorf("the seat's queue held 10 items (160 KiB) and keeps %d: a queue past its new max_bytes must keep what it accepted", got)
	}
	if _, err := js.Publish(t.Context(), "mesh.seat.mesh-build-machine.accept.build", []byte("more")); err == nil {
		t.Errorf("the seat's queue, past its max_bytes, took more work")
	}
}
