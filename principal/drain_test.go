package principal

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/internal/natsproc"
	"github.com/meshc-dev/meshc/internal/natstest"
)

// A server that answers a pull late is not a consumer with nothing left: Drains, started while
// the server process is paused for longer than FetchNoWait waits for an answer (a second), still
// takes every stored message once the server answers. Read as drained, the empty batch made
// `meshc verify` fail a correct plan on a busy CI machine; a pull abandoned while the server
// was paused had the server deliver into it once it resumed, and the messages waited out their
// ack wait unread (this test failed so, once, under load).
func TestADrainOutlastsAServerThatAnswersLate(t *testing.T) {
	s := natsproc.Alone(t, "")
	_, js := natstest.Connect(t, s.URL())
	ctx := context.Background()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "reader", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	const stored = 5
	for i := range stored {
		if _, err := js.Publish(ctx, "orders.eu", fmt.Appendf(nil, "order %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	reader, err := Connect(s.URL(), "reader")
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	// The first pull meets a paused server, which answers it two and a half seconds on.
	pulls := 0
	beforePull = func() {
		if pulls++; pulls == 1 {
			s.Pause()
			time.AfterFunc(2500*time.Millisecond, s.Resume)
		}
	}
	t.Cleanup(func() { beforePull = nil })
	defer s.Resume()
	drainCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	got, err := reader.Drains(drainCtx, "ORDERS", "reader")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got["orders.eu"]); n != stored {
		t.Fatalf("drained %d of the %d stored messages: an answer that came late was taken for none", n, stored)
	}
	// Asking again means the first pull was given up on: whatever the server delivers into it
	// once it resumes is lost until the ack wait ends.
	if pulls != 1 {
		t.Fatalf("Drains pulled %d times for %d messages: it gave up on the answer that came late", pulls, stored)
	}
}
