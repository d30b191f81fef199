package apply

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshc-dev/meshc/apply/wire"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/output"
)

// everyFlag is every permission apply has.
var everyFlag = Options{Prune: true, PurgeNonEmpty: true, AllowReplace: true, AllowDiscard: true, Adopt: true}

// eventsOf is the plan's EVENTS configuration.
func eventsOf(plan *compiler.Plan) jetstream.StreamConfig {
	return plan.Streams[slices.IndexFunc(plan.Streams, func(s compiler.Stream) bool { return s.Config.Name == compiler.EventsStream })].Config
}

// A stream meshc did not make, under the plan's name: another application's EVENTS, unmarked, a
// month of history. An ordinary apply would have rewritten it to the plan's settings. It is adopted
// only with --adopt, and the plan says so.
func TestAnUnmarkedStreamThePlanNamesIsAdoptedOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	b := startMeshBus(t)
	ctx := t.Context()
	theirs := eventsOf(b.plan)
	theirs.Metadata, theirs.MaxAge, theirs.MaxMsgsPerSubject = nil, 720*time.Hour, 0
	if _, err := b.other.CreateStream(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	publishTo(t, b, "mesh.mod.builder.event.built", compiler.EventsStream, 3)
	plan := clonePlanUsers(b.plan)
	plan.Streams = slices.Clone(b.plan.Streams)
	i := slices.IndexFunc(plan.Streams, func(s compiler.Stream) bool { return s.Config.Name == compiler.EventsStream })
	plan.Streams[i].Config.MaxAge = 24 * time.Hour

	cs := diffNow(t, b.controller.nc, plan, change.DiffOptions{})
	c := findChange(t, cs, change.KindStream, compiler.EventsStream, "")
	var text strings.Builder
	if err := change.Render(&text, cs, output.Text); err != nil || !c.Adopts || !strings.Contains(text.String(), "exists without meshc's mark") || !strings.Contains(text.String(), "--adopt") {
		t.Fatalf("the plan does not say the stream would be adopted: %+v\n%s", c, text.String())
	}
	others := everyFlag
	others.Adopt = false
	if _, err := Apply(ctx, b.controller.js, cs, others); !errors.Is(err, wire.ErrRefused) || !strings.Contains(err.Error(), "apply with --adopt") {
		t.Fatalf("adopting another application's stream without --adopt: %v", err)
	}
	s, err := b.other.Stream(ctx, compiler.EventsStream)
	if err != nil || s.CachedInfo().Config.MaxAge != 720*time.Hour || s.CachedInfo().State.Msgs != 3 || s.CachedInfo().Config.Metadata[compiler.OwnerKey] != "" {
		t.Fatalf("the refused adoption changed the stream: %+v %v", s.CachedInfo(), err)
	}
	if _, err := Apply(ctx, b.controller.js, cs, Options{Adopt: true, AllowDiscard: true}); err != nil {
		t.Fatal(err)
	}
	requireEmpty(t, diffNow(t, b.controller.nc, plan, change.DiffOptions{}), "the stream was adopted")
	b.controller.requireNoViolation(t)
}

// A stream another mesh marked is never changed, whatever the flags: not the stream, not its
// mark, and no consumer is made on it.
func TestAStreamAnotherMeshMarkedIsNeverChanged(t *testing.T) {
	t.Parallel()
	b := startMeshBus(t)
	ctx := t.Context()
	theirs := eventsOf(b.plan)
	theirs.Metadata = map[string]string{compiler.OwnerKey: "other-mesh"}
	theirs.MaxAge = 720 * time.Hour
	if _, err := b.other.CreateStream(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	cs := diffNow(t, b.controller.nc, b.plan, change.DiffOptions{Prune: true})
	if c := findChange(t, cs, change.KindStream, compiler.EventsStream, ""); c.Foreign != `mesh "other-mesh"` {
		t.Fatalf("the plan does not say whose the stream is: %+v", c)
	}
	_, err := Apply(ctx, b.controller.js, cs, everyFlag)
	if !errors.Is(err, wire.ErrRefused) || !strings.Contains(err.Error(), `stream EVENTS belongs to mesh "other-mesh"`) || !strings.Contains(err.Error(), "consumer EVENTS/") {
		t.Fatalf("changing another mesh's stream, every flag given: %v", err)
	}
	s, err := b.other.Stream(ctx, compiler.EventsStream)
	if err != nil || s.CachedInfo().Config.Metadata[compiler.OwnerKey] != "other-mesh" || s.CachedInfo().Config.MaxAge != 720*time.Hour || s.CachedInfo().State.Consumers != 0 {
		t.Fatalf("another mesh's stream was changed: %+v %v", s.CachedInfo(), err)
	}
	b.controller.requireNoViolation(t)
}

// withCatalogue is the plan marked as the catalogue id of a mesh of the same name.
func withCatalogue(p *compiler.Plan, id string) *compiler.Plan {
	c := clonePlanUsers(p)
	c.Catalogue = id
	c.Streams, c.Consumers = slices.Clone(p.Streams), slices.Clone(p.Consumers)
	c.Mark()
	return c
}

// Two catalogues that share a mesh name (a fork, a copy) on one bus: each one's mark says which
// catalogue it is, so neither prunes, replaces or rewrites the other's objects, whatever the
// flags; what is marked by the mesh's name alone (an older meshc) is this catalogue's, and its
// mark gains the id on the next update.
func TestTwoCataloguesOfOneMeshNameNeverTakeEachOthersObjects(t *testing.T) {
	t.Parallel()
	b := startMeshBus(t)
	ctx := t.Context()
	a := withCatalogue(b.plan, "catalogue-a")
	if _, _, err := converge(t, b.controller.nc, b.controller.js, a, change.DiffOptions{}, Options{}); err != nil {
		t.Fatal(err)
	}
	// B is a catalogue of the same mesh name with one stream of its own and none of A's.
	other := withCatalogue(b.plan, "catalogue-b")
	other.Streams = []compiler.Stream{{Config: jetstream.StreamConfig{Name: "SEAT_B", Subjects: []string{"mesh.seat.b.accept.>"}, Metadata: other.Marked(nil)}}}
	other.Consumers = nil
	cs := diffNow(t, b.controller.nc, other, change.DiffOptions{Prune: true})
	if n := cs.Count(change.Delete); n != 0 {
		t.Fatalf("catalogue B's prune deletes %d of catalogue A's objects", n)
	}
	if !slices.Contains(cs.Unmanaged, `stream EVENTS (marked by catalogue "catalogue-a" of mesh "novox")`) {
		t.Fatalf("A's streams are not listed as another's: %q", cs.Unmanaged)
	}
	if _, err := Apply(ctx, b.controller.js, cs, everyFlag); err != nil {
		t.Fatal(err)
	}
	requireEmpty(t, diffNow(t, b.controller.nc, a, change.DiffOptions{Prune: true}), "catalogue A's objects are all there")

	// B naming A's stream is refused, whatever the flags.
	other.Streams = append(other.Streams, compiler.Stream{Config: eventsOf(withCatalogue(b.plan, "catalogue-b"))})
	if _, err := Apply(ctx, b.controller.js, diffNow(t, b.controller.nc, other, change.DiffOptions{}), everyFlag); !errors.Is(err, wire.ErrRefused) || !strings.Contains(err.Error(), `belongs to catalogue "catalogue-a"`) {
		t.Fatalf("catalogue B rewriting catalogue A's EVENTS: %v", err)
	}

	// A mark from before catalogues had an id is A's, and gains the id.
	old := eventsOf(b.plan)
	old.Metadata = map[string]string{compiler.OwnerKey: b.plan.Account}
	if _, err := b.controller.js.UpdateStream(ctx, old); err != nil {
		t.Fatal(err)
	}
	cs = diffNow(t, b.controller.nc, a, change.DiffOptions{})
	c := findChange(t, cs, change.KindStream, compiler.EventsStream, "")
	if c.Action != change.Update || c.Adopts || c.Foreign != "" || !strings.Contains(strings.Join(c.Notes, " "), "gains this catalogue's id") {
		t.Fatalf("an old mark: %+v", c)
	}
	if _, err := Apply(ctx, b.controller.js, cs, Options{}); err != nil {
		t.Fatal(err)
	}
	if s, err := b.other.Stream(ctx, compiler.EventsStream); err != nil || s.CachedInfo().Config.Metadata[compiler.CatalogueKey] != "catalogue-a" {
		t.Fatalf("the old mark was not upgraded: %v", err)
	}
	b.controller.requireNoViolation(t)
}
