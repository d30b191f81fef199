package principal

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/internal/natstest"
)

// An inert publish proves the grant and reaches the stream that captures its subject, which
// answers it and stores nothing; a batch of tries returns exactly those the server let through.
func TestAnInertPublishStoresNothingAndABatchFindsWhatIsLetThrough(t *testing.T) {
	s := natstest.JetStream(t, func(o *server.Options) {
		o.Users = []*server.User{
			{Username: "admin", Password: "a"},
			{Username: "bob", Password: "b", Permissions: &server.Permissions{
				Publish:   &server.SubjectPermission{Allow: []string{"orders.>", "$JS.API.>"}},
				Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.bob.>", "orders.eu"}},
			}},
		}
	})
	_, js := natstest.Connect(t, s.ClientURL(), nats.UserInfo("admin", "a"))
	ctx := context.Background()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := Connect(s.ClientURL(), "bob", nats.UserInfo("bob", "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	stream, err := bob.PublishesInert("orders.eu", Wait)
	if err != nil || stream != "ORDERS" {
		t.Fatalf("an inert publish was answered by %q, %v; want ORDERS", stream, err)
	}
	if info, _ := st.Info(ctx); info.State.Msgs != 0 {
		t.Fatalf("an inert publish was stored: %d messages", info.State.Msgs)
	}
	if stream, err := bob.PublishesInert("nobody.listens", 200*time.Millisecond); err == nil || stream != "" {
		t.Fatalf("a publish bob may not make was taken: %q, %v", stream, err)
	}
	bob.TakeViolations()
	tries := []Try{
		{Op: Publish, Subject: "payments.x"},
		{Op: Publish, Subject: "orders.us"}, // granted: let through
		{Op: Subscription, Subject: "orders.us"},
		{Op: Subscription, Subject: "orders.eu"}, // granted: let through
		{Op: Subscription, Subject: "orders.eu", Queue: "q"},
	}
	through, err := bob.Unrefused(tries, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(through) != 3 || through[0] != tries[1] || through[1] != tries[3] || through[2] != tries[4] {
		t.Fatalf("the tries let through: %v; want publish orders.us, subscribe orders.eu (alone and in a queue group)", through)
	}
	if info, _ := st.Info(ctx); info.State.Msgs != 0 {
		t.Fatalf("a try let through stored %d messages", info.State.Msgs)
	}
	if err := bob.SawNoViolation(); err != nil {
		t.Fatalf("after its batch took every violation, the connection still counts one: %v", err)
	}
}
