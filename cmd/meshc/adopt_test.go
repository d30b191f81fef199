package main

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
)

// An EVENTS stream that is not the mesh's (no mark) is refused by apply, exit 1, with the flag
// that takes it; the plan says so; with --adopt it is the mesh's. As mesh-controller, on the
// accounts file meshc emitted.
func TestApplyAdoptsOnlyWithAdopt(t *testing.T) {
	dir, url, pw := emittedBus(t, nil)
	t.Setenv("NATS_URL", url)
	t.Setenv("NATS_USER", "mesh-controller")
	t.Setenv("NATS_PASSWORD", pw["mesh-controller"])
	nc, err := nats.Connect(url, nats.UserInfo("mesh-controller", pw["mesh-controller"]), nats.CustomInboxPrefix(compiler.InboxPrefix("mesh-controller")))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// The plan's own limits, so that adopting is the mark alone: a stream gaining a limit is a
	// change of its own, refused without --allow-discard (apply's TestALoweredLimitIsRefusedWithoutAllowDiscard).
	events := catalogue.EventsDefaults
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"mesh.mod.*.event.>", "mesh.seat.*.event.>"},
		MaxBytes: events.MaxBytes, MaxMsgSize: int32(events.MaxMsgSize), MaxMsgsPerSubject: events.MaxMsgsPerSubject}); err != nil {
		t.Fatal(err)
	}
	code, out, errs := meshc(t, "apply", dir)
	if code != exitFailed || !strings.Contains(out, "stream EVENTS exists without meshc's mark") || !strings.Contains(errs, "apply with --adopt") {
		t.Fatalf("apply over an unmarked EVENTS: %d %s %s", code, out, errs)
	}
	if code, _, errs := meshc(t, "apply", dir, "--adopt"); code != 0 {
		t.Fatalf("apply --adopt: %d %s", code, errs)
	}
	if code, _, _ := meshc(t, "plan", dir); code != 0 {
		t.Fatal("the adopted stream still differs from the plan")
	}
}
