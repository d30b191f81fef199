package main

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/internal/natstest"
)

// An EVENTS stream that is not the mesh's (no mark) is refused by apply, exit 1, with the flag
// that takes it; the plan says so; with --adopt it is the mesh's.
func TestApplyAdoptsOnlyWithAdopt(t *testing.T) {
	s := natstest.JetStream(t)
	dir := cataloguetest.Extract(t, "testdata/reload.txtar")
	_, js := natstest.Connect(t, s.ClientURL())
	// The plan's own limits, so that adopting is the mark alone: a stream gaining a limit is a
	// change of its own, refused without --allow-discard (apply's TestALoweredLimitIsRefusedWithoutAllowDiscard).
	events := catalogue.EventsDefaults
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"mesh.mod.*.event.>", "mesh.seat.*.event.>"},
		MaxBytes: events.MaxBytes, MaxMsgSize: int32(events.MaxMsgSize), MaxMsgsPerSubject: events.MaxMsgsPerSubject}); err != nil {
		t.Fatal(err)
	}
	code, out, errs := meshc(t, "apply", dir, "--server", s.ClientURL())
	if code != exitFailed || !strings.Contains(out, "stream EVENTS exists without meshc's mark") || !strings.Contains(errs, "apply with --adopt") {
		t.Fatalf("apply over an unmarked EVENTS: %d %s %s", code, out, errs)
	}
	if code, _, errs := meshc(t, "apply", dir, "--server", s.ClientURL(), "--adopt"); code != 0 {
		t.Fatalf("apply --adopt: %d %s", code, errs)
	}
	if code, _, _ := meshc(t, "plan", dir, "--server", s.ClientURL()); code != 0 {
		t.Fatal("the adopted stream still differs from the plan")
	}
}
