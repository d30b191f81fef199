package proof

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/testwait"
)

// The mesh's account's JetStream limits, as accounts.conf writes them, are the server's: the
// stream past max_streams is refused, and max_consumers bounds each stream's consumers, not the
// account's together (docs/nats.md, "Limits and floods") — which is why meshc derives it from the
// stream that needs the most. Proven as mesh-controller, the only user with the JetStream API, in
// both isolations.
func TestTheMeshAccountsJetStreamLimitsAreTheServers(t *testing.T) {
	t.Parallel()
	for _, isolation := range inLoop(isolations) {
		t.Run(isolation, func(t *testing.T) {
			t.Parallel()
			b := startBus(t, "testdata/account-limits.txtar", "", isolation)
			js := b.connect(t, "mesh-controller").js
			ctx := t.Context()
			// The fourth stream is apply's bucket, which up's apply made (it records the accounts
			// it delivered there); the fifth is refused.
			if _, err := js.Stream(ctx, compiler.ApplyBucketStream); err != nil {
				t.Fatalf("apply's bucket, the account's fourth stream: %v", err)
			}
			_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ONE_TOO_MANY", Subjects: []string{"other.b"}, MaxBytes: 1 << 20})
			if !isAPIError(err, 10027, "maximum number of streams reached") {
				t.Fatalf("a fifth stream past max_streams 4: %v, want 10027", err)
			}
			// CONTROL holds two consumers, the account's max_consumers; EVENTS takes two more of its
			// own, and refuses a third.
			for _, name := range []string{"one", "two"} {
				if _, err := js.CreateOrUpdateConsumer(ctx, "EVENTS", jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
					t.Fatalf("EVENTS' consumer %s, with CONTROL's two already made: %v (max_consumers is per stream)", name, err)
				}
			}
			_, err = js.CreateOrUpdateConsumer(ctx, "EVENTS", jetstream.ConsumerConfig{Durable: "three", AckPolicy: jetstream.AckExplicitPolicy})
			if !isAPIError(err, 10026, "maximum consumers limit reached") {
				t.Fatalf("EVENTS' third consumer past max_consumers 2: %v, want 10026", err)
			}
		})
	}
}

// A publish on a subject longer than the servers' max_control_line closes the connection at once.
// Under the default of 4 KiB each refused publish of a ~4,000-byte subject was logged whole, the
// connection staying open to send the next (docs/nats.md, "Limits and floods"); every line a
// mesh client sends — an operator-mode CONNECT with its JWT among them — fits under it, so every
// user of every mode connects (the whole proof runs so). One just under the line is refused by
// its permissions, as any other, and the connection stays.
func TestASubjectLongerThanTheControlLineClosesTheConnection(t *testing.T) {
	t.Parallel()
	for _, mode := range inLoop(modes) {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := startBus(t, "testdata/proof.txtar", "", mode)
			under := "mesh.mod.catalog.event." + strings.Repeat("u", compiler.MaxControlLine-100)
			c := b.connect(t, "mod.anchor.catalog")
			c.isRefusedPublishing(t, under)
			if !c.nc.IsConnected() {
				t.Fatalf("a refused publish of %d bytes closed the connection", len(under))
			}
			over := "mesh.mod.catalog.event." + strings.Repeat("o", 4000)
			if err := c.nc.Publish(over, nil); err != nil {
				t.Fatal(err)
			}
			c.nc.Flush()
			testwait.For(t, "the server to close a connection sending a 4,000-byte subject", 3*time.Second, func() bool { return c.nc.IsClosed() })
			if err := c.nc.LastError(); err == nil || !strings.Contains(strings.ToLower(err.Error()), "maximum control line") {
				t.Fatalf("the connection was closed for %v, want the control line", err)
			}
		})
	}
}
