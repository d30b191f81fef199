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

// A limit lowered under stored messages, as mesh-controller: max-msgs-per-subject 10000 → 2 on an
// EVENTS holding nine messages of one subject. The plan shows the field as one that discards stored
// messages and how many (7 of 9); apply refuses it without --allow-discard and changes nothing;
// with it, the stream keeps 2.
func TestALoweredLimitIsRefusedWithoutAllowDiscard(t *testing.T) {
	t.Parallel()
	b := startMeshBus(t)
	if _, _, err := converge(t, b.controller.nc, b.controller.js, b.plan, change.DiffOptions{}, Options{}); err != nil {
		t.Fatal(err)
	}
	publishTo(t, b, "mesh.mod.builder.event.built", compiler.EventsStream, 9)
	plan := clonePlanUsers(b.plan)
	plan.Streams = slices.Clone(b.plan.Streams)
	i := slices.IndexFunc(plan.Streams, func(s compiler.Stream) bool { return s.Config.Name == compiler.EventsStream })
	was := plan.Streams[i].Config.MaxMsgsPerSubject
	plan.Streams[i].Config.MaxMsgsPerSubject = 2

	cs := diffNow(t, b.controller.nc, plan, change.DiffOptions{})
	if err := wire.CountDrops(t.Context(), b.controller.nc, cs, wire.ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	c := only(t, cs)
	if c.Action != change.Update || len(c.Discarding()) != 1 || c.Discarding()[0].Drops != "drops 7 of its 9 messages now" {
		t.Fatalf("the plan of a lowered per-subject limit: %+v", c)
	}
	var text strings.Builder
	if err := change.Render(&text, cs, output.Text); err != nil || !strings.Contains(text.String(), fmt.Sprintf("max_msgs_per_subject: %d → 2  (discards stored messages: drops 7 of its 9 messages now)", was)) {
		t.Fatalf("the rendered plan does not say what it drops:\n%s", text.String())
	}

	_, err := Apply(t.Context(), b.controller.js, cs, Options{})
	if !errors.Is(err, wire.ErrRefused) || !strings.Contains(err.Error(), "--allow-discard") || !strings.Contains(err.Error(), "drops 7 of its 9") {
		t.Fatalf("a lowered limit without AllowDiscard: %v", err)
	}
	if n := held(t, b, compiler.EventsStream); n != 9 {
		t.Fatalf("the refused change dropped messages anyway: EVENTS holds %d", n)
	}
	if _, err := Apply(t.Context(), b.controller.js, cs, Options{AllowDiscard: true}); err != nil {
		t.Fatal(err)
	}
	if n := held(t, b, compiler.EventsStream); n != 2 {
		t.Fatalf("EVENTS holds %d after the allowed change, want 2", n)
	}
	b.controller.requireNoViolation(t)
}

func held(t *testing.T, b *meshBus, stream string) uint64 {
	t.Helper()
	s, err := b.other.Stream(t.Context(), stream)
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().State.Msgs
}

// What the plan says a change drops is what the server drops, for every limit the bus can count:
// a stream's count, its bytes, each subject's count, and the age of its messages — counted as
// mesh-controller, with the grants the emitted accounts file gives it (another application in
// the mesh's account makes and changes the streams).
func TestTheDropsThePlanCountsAreTheServers(t *testing.T) {
	t.Parallel()
	b := startMeshBus(t)
	js := b.other
	ctx := t.Context()
	base := jetstream.StreamConfig{Subjects: []string{"x.>"}, MaxAge: time.Hour, Metadata: map[string]string{"m": "1"}}
	with := func(edit func(*jetstream.StreamConfig)) jetstream.StreamConfig {
		c := base
		edit(&c)
		return c
	}
	cases := []jetstream.StreamConfig{
		with(func(c *jetstream.StreamConfig) { c.MaxMsgs = 4 }),
		with(func(c *jetstream.StreamConfig) { c.MaxBytes = 700 }),
		with(func(c *jetstream.StreamConfig) { c.MaxMsgsPerSubject = 2 }),
		with(func(c *jetstream.StreamConfig) { c.MaxAge, c.Duplicates = time.Second, time.Second }),
	}
	var live change.State
	for i := range cases {
		name := fmt.Sprintf("S%d", i)
		cfg := base
		cfg.Name, cfg.Subjects = name, []string{name + ".>"}
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		for n := range 10 {
			// Three subjects, 4, 3 and 3 messages, of 100 bytes each.
			if _, err := js.Publish(ctx, fmt.Sprintf("%s.%d", name, n%3), make([]byte, 100)); err != nil {
				t.Fatal(err)
			}
		}
		cases[i].Name, cases[i].Subjects = name, cfg.Subjects
		live.Streams = append(live.Streams, change.Stream{Name: name, Config: cfg, Messages: 10})
	}
	// The age case needs messages older than its new max_age of a second.
	testwait.For(t, "the age case's messages to be older than its new max_age", time.Minute, func() bool {
		st, err := js.Stream(ctx, "S3")
		return err == nil && time.Since(st.CachedInfo().State.LastTime) > 1500*time.Millisecond
	})
	var items []change.Change
	for i := range cases {
		want := cases[i]
		items = append(items, change.Change{Action: change.Update, Kind: change.KindStream, Stream: want.Name, StreamConfig: &want,
			Fields: discardField(t, live.Streams[i].Config, want)})
	}
	cs := change.Changes{Items: items}
	if err := wire.CountDrops(ctx, b.controller.nc, cs, wire.ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	b.controller.requireNoViolation(t)
	for i, c := range cs.Items {
		s, err := js.UpdateStream(ctx, *c.StreamConfig)
		if err != nil {
			t.Fatal(err)
		}
		dropped := 10 - s.CachedInfo().State.Msgs
		said := c.Discarding()[0].Drops
		if !strings.Contains(said, fmt.Sprintf(" %d of its 10 messages now", dropped)) {
			t.Errorf("case %d (%s): the plan said %q, the server dropped %d", i, c.Discarding()[0].Name, said, dropped)
		}
	}
}

// discardField is the one discarding field between have and want, as Diff reports it.
func discardField(t *testing.T, have, want jetstream.StreamConfig) []change.Field {
	t.Helper()
	plan := &compiler.Plan{Streams: []compiler.Stream{{Config: want}}}
	cs := change.Diff(&change.State{Streams: []change.Stream{{Name: have.Name, Config: have}}}, plan, change.DiffOptions{})
	for _, c := range cs.Items {
		if d := c.Discarding(); len(d) == 1 {
			return c.Fields
		}
	}
	t.Fatalf("no discarding field between %+v and %+v: %+v", have, want, cs.Items)
	return nil
}
