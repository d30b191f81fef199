package proof

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/catalogue"
)

// The server's configuration has no connection limit per user: an account's limit is its users'
// together (docs/nats.md, "Limits and floods"). In one account every user draws on the mesh's,
// so any user can take them all and lock the controller out: measured, an enrolling machine
// holding nothing but its token took every connection of the proof's mesh and mesh-controller was
// refused, which shared mode says plainly rather than closes. With an account per principal the
// mesh's account holds the controller alone, and the same machine takes its own eight.
func TestOnlyInOneAccountCanAnyUserLockTheControllerOut(t *testing.T) {
	t.Parallel()
	for _, isolation := range inLoop(isolations) {
		t.Run(isolation, func(t *testing.T) {
			t.Parallel()
			b := startBus(t, "testdata/proof.txtar", "", isolation)
			pool := int(b.plan.MeshAccount().Limits.Connections)
			if b.isolated {
				pool = int(catalogue.DefaultConnectionsPerUser)
			}
			start := time.Now()
			held := b.connectsUntilRefused(t, "enrol.laptop", 0, pool+1)
			took := time.Since(start)
			if held != pool {
				t.Fatalf("enrol.laptop held %d connections before its account refused one, want %d", held, pool)
			}
			_, err := b.dial("mesh-controller")
			if !b.isolated {
				if !errors.Is(err, nats.ErrMaxAccountConnectionsExceeded) {
					t.Fatalf("with every connection of the one account held by enrol.laptop, the controller connected: %v", err)
				}
				t.Logf("one account: enrol.laptop took all %d connections in %s; mesh-controller is refused", held, took.Round(time.Millisecond))
				return
			}
			if err != nil {
				t.Fatalf("with enrol.laptop's own connections held, the controller could not connect: %v", err)
			}
		})
	}
}

// With an account per principal a module's instances share no account, but for the module's,
// where their serving users serve its tools: a serving user can take every connection of it and
// keep its siblings' serving users out (docs/nats.md, "An account per instance, the tools
// apart"). What it cannot touch is its siblings' module users, each in an account of its own.
func TestASiblingCanTakeItsSiblingsServingConnections(t *testing.T) {
	t.Parallel()
	b := startBus(t, "testdata/instances.txtar", "", catalogue.IsolationPerModule)
	relay := b.plan.User("serve.anchor.relay").Account
	var pool int64
	for _, a := range b.plan.Accounts {
		if a.Name == relay {
			pool = a.Limits.Connections
		}
	}
	if held := b.connectsUntilRefused(t, "serve.anchor.relay", 0, int(pool)+1); held != int(pool) {
		t.Fatalf("serve.anchor.relay held %d connections of %s before it refused one, want %d", held, relay, pool)
	}
	if _, err := b.dial("serve.laptop.relay"); !errors.Is(err, nats.ErrMaxAccountConnectionsExceeded) {
		t.Fatalf("with every connection of %s held by one serving user, its sibling's connected: %v", relay, err)
	}
	// The sibling's module user has an account of its own.
	b.connect(t, "mod.laptop.relay").publishesAndIsStored(t, "mesh.mod.relay.event.moved", "EVENTS")
	if held := b.connectsUntilRefused(t, "mod.anchor.relay", 0, int(catalogue.DefaultConnectionsPerUser)+1); held != int(catalogue.DefaultConnectionsPerUser) {
		t.Fatalf("mod.anchor.relay held %d connections, want its own %d", held, catalogue.DefaultConnectionsPerUser)
	}
	b.connect(t, "mod.laptop.relay").publishesAndIsStored(t, "mesh.mod.relay.event.moved", "EVENTS")
}

// A seat's queue is every submitter's: one submitter within its grant fills it, and until the
// holder takes work off every submitter is refused, the controller too. Left open, and measured
// (the README's "Limits" says so): with the defaults a module that may submit work fills a seat's
// 16 MiB with 64 items of 256 KiB and about a hundred of one byte, in under a second; the queue refuses the next, to whoever sends it (10077), and
// keeps all it accepted. Giving each submitter a share of its own would take the submitter in the
// work's subject, which every holder and submitter reads.
func TestOneSubmitterFillsASeatsQueueForEveryone(t *testing.T) {
	t.Parallel()
	for _, isolation := range inLoop(isolations) {
		t.Run(isolation, func(t *testing.T) {
			t.Parallel()
			b := startBus(t, "testdata/seat-share.txtar", "", isolation)
			const subject = "mesh.seat.mesh-build-machine.accept.build"
			seats := catalogue.SeatsDefaults
			pusher := b.connect(t, "mod.anchor.pusher")
			start := time.Now()
			stored, refused := pusher.floods(t, subject, 100, bytes.Repeat([]byte("w"), int(seats.MaxMsgSize)-200))
			if stored == 100 || !isAPIError(refused, 10077, "maximum bytes exceeded") {
				t.Fatalf("pusher stored %d of 100 work items of %s (%v), want the queue full and refusing", stored, catalogue.Bytes(seats.MaxMsgSize), refused)
			}
			// What little room is left, it takes with the smallest work there is.
			topped, refused := pusher.floods(t, subject, 10_000, []byte("w"))
			if topped == 10_000 || !isAPIError(refused, 10077, "maximum bytes exceeded") {
				t.Fatalf("pusher topped the queue up with %d of 10,000 one-byte items (%v)", topped, refused)
			}
			t.Logf("pusher filled %s of %s in %d items and %d one-byte ones, %s", "SEAT_MESH_BUILD_MACHINE", catalogue.Bytes(seats.MaxBytes), stored, topped, time.Since(start).Round(time.Millisecond))
			b.connect(t, "mesh-controller").publishIsRefused(t, subject, []byte("build"), 10077, "maximum bytes exceeded")
			// The holder takes one off, and the controller's next is taken.
			b.connect(t, "mod.anchor.builder").pullsOneAndAcks(t, "SEAT_MESH_BUILD_MACHINE", "holder")
			b.connect(t, "mesh-controller").publishesAndIsStored(t, subject, "SEAT_MESH_BUILD_MACHINE")
		})
	}
}

// pullsOneAndAcks takes the next message of the consumer and acknowledges it.
func (c *client) pullsOneAndAcks(t *testing.T, stream, consumer string) {
	t.Helper()
	cons, err := c.js.Consumer(context5s(t), stream, consumer)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if err := m.DoubleAck(context5s(t)); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s's consumer %s delivered nothing", stream, consumer)
}
