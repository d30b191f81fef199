package apply

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/meshc-dev/meshc/apply/deliver"

	"github.com/meshc-dev/meshc/apply/wire"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/output"
)

// One apply as `meshc apply` runs it, as mesh-controller on the example's bus: a dry run prints
// the change set and writes nothing, takes no lock; the apply makes it, and says nil the second
// time (nothing to change); a change that needs a flag is a refusal (meshc apply's exit 1), with
// nothing written; and the server refused mesh-controller nothing throughout.
func TestARunDecidesEveryRefusalBeforeItWrites(t *testing.T) {
	t.Parallel()
	b := startMeshBus(t)
	bus, err := wire.Connect(wire.Endpoint{URL: b.url, User: compiler.ControllerUser, Options: []nats.Option{
		nats.UserInfo(compiler.ControllerUser, b.passwords[compiler.ControllerUser]),
		nats.CustomInboxPrefix(compiler.InboxPrefix(compiler.ControllerUser)),
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	var said []string
	run := func(plan *compiler.Plan, dryRun bool) (*Outcome, string, error) {
		var out bytes.Buffer
		users, err := deliver.NewRecordedDelivery(plan, "")
		if err != nil {
			t.Fatal(err)
		}
		r := &Run{Plan: plan, DryRun: dryRun, Out: &out, Format: output.Text, Users: users,
			Lock: wire.LockOptions{Holder: wire.HolderName(plan.Account), Wait: 5 * time.Second},
			Read: wire.ReadOptions{RequestTimeout: 5 * time.Second},
			Say:  func(line string) { said = append(said, line) }}
		res, err := r.Do(t.Context(), bus)
		return res, out.String(), err
	}
	streams := func() []string {
		live, err := wire.Read(t.Context(), bus, wire.ReadOptions{RequestTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range live.Streams {
			names = append(names, s.Name)
		}
		return names
	}

	res, out, err := run(b.plan, true)
	if err != nil || res.Applied != nil || !strings.Contains(out, "+ stream EVENTS") || !strings.Contains(out, "Users and accounts: meshc cannot tell") {
		t.Fatalf("a dry run: %v, %v, printed %q", res, err, out)
	}
	if got := streams(); len(got) != 0 {
		t.Fatalf("a dry run wrote %v (the lock's bucket among them if it took the lock)", got)
	}

	res, _, err = run(b.plan, false)
	if err != nil || res.Applied == nil || res.Applied.Applied == 0 {
		t.Fatalf("the apply: %+v, %v", res, err)
	}
	if res, out, err := run(b.plan, false); err != nil || res.Applied != nil {
		t.Fatalf("the second apply: %+v, %v, printed %q", res, err, out)
	}

	replacing := clonePlanUsers(b.plan)
	replacing.Streams = append([]compiler.Stream(nil), b.plan.Streams...)
	for i := range replacing.Streams {
		if replacing.Streams[i].Config.Name == "EVENTS" {
			replacing.Streams[i].Config.Storage = jetstream.MemoryStorage
		}
	}
	res, _, err = run(replacing, false)
	if !errors.Is(err, wire.ErrRefused) || res != nil || !strings.Contains(err.Error(), "allow-replace") {
		t.Fatalf("a storage change without --allow-replace: %+v, %v", res, err)
	}
	events, err := b.controller.js.Stream(context.Background(), "EVENTS")
	if err != nil || events.CachedInfo().Config.Storage != jetstream.FileStorage {
		t.Fatalf("the refused replace touched EVENTS: %v", err)
	}
	b.controller.requireNoViolation(t)
	if len(said) != 0 {
		t.Fatalf("said %q", said)
	}
}
