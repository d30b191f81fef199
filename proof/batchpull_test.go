package proof

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A pull of a batch crosses from a module's account into the mesh's only because the pull export
// is answered by a stream (response_type: stream): a singleton export delivers the first message
// and strands the rest until AckWait (docs/nats.md, "Traps"). Proven as the module's own user, with
// a batch of three, in both isolations.
func TestABatchPullDeliversTheWholeBatch(t *testing.T) {
	t.Parallel()
	for _, isolation := range inLoop(isolations) {
		t.Run(isolation, func(t *testing.T) {
			t.Parallel()
			b := startBus(t, "testdata/proof.txtar", "", isolation)
			catalog := b.connect(t, "mod.anchor.catalog")
			notifier := b.connect(t, "mod.laptop.notifier")
			for range 3 {
				catalog.publishesAndIsStored(t, "mesh.mod.catalog.event.upgraded", "EVENTS")
			}
			ctx := context5s(t)
			cons, err := notifier.js.Consumer(ctx, "EVENTS", "laptop_notifier")
			if err != nil {
				t.Fatalf("binding the consumer: %v (violations: %v)", err, notifier.seen())
			}
			batch, err := cons.Fetch(3, jetstream.FetchMaxWait(3*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for m := range batch.Messages() {
				n++
				if err := m.DoubleAck(ctx); err != nil {
					t.Fatalf("ack: %v", err)
				}
			}
			if n != 3 {
				t.Fatalf("one pull of a batch of 3 delivered %d (%v; violations: %v)", n, batch.Error(), notifier.seen())
			}
			notifier.sawNoViolation(t)
		})
	}
}
