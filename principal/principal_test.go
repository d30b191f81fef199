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
	bob, st := bobBeside(t, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}, "orders.eu")
	ctx := context.Background()
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

// What the server refuses, or lets through, is said at the flush, not after the wait: the server
// writes a violation before the PONG that ends it. A widened grant made verify wait out every
// refusal it expected (10 s each), and a narrowed one every publish it expected answered.
func TestARefusalOrItsAbsenceIsSaidAtTheFlush(t *testing.T) {
	bob, _ := bobBeside(t, jetstream.StreamConfig{Name: "ALL", Subjects: []string{"orders.>", "payments.>"}})
	ctx := context.Background()
	const long = time.Minute
	quickly := func(what string, f func() error, wantErr bool) {
		t.Helper()
		start := time.Now()
		err := f()
		if (err != nil) != wantErr {
			t.Fatalf("%s: %v", what, err)
		}
		if d := time.Since(start); d > long/4 {
			t.Fatalf("%s took %s: the wait was waited out", what, d)
		}
	}
	// Before any violation, and after one was taken: a publish let through is said at once.
	bob.NC.Publish("orders.eu", nil)
	quickly("a granted publish expected refused", func() error { return bob.Violated(Violation(Publish, "orders.eu"), "publish orders.eu", long) }, true)
	bob.NC.Publish("payments.eu", nil)
	quickly("a refused publish", func() error { return bob.Violated(Violation(Publish, "payments.eu"), "publish payments.eu", long) }, false)
	bob.NC.Publish("orders.us", nil)
	quickly("a granted publish after a taken refusal", func() error { return bob.Violated(Violation(Publish, "orders.us"), "publish orders.us", long) }, true)

	through, err := bob.Unrefused([]Try{{Op: Publish, Subject: "payments.x"}, {Op: Publish, Subject: "orders.x"}}, long)
	if err != nil || len(through) != 1 || through[0].Subject != "orders.x" {
		t.Fatalf("let through: %v, %v; want orders.x", through, err)
	}
	bob.TakeViolations()
	quickly("a refused inert publish", func() error { _, err := bob.PublishesInert("payments.eu", long); return err }, true)
	bob.TakeViolations()
	quickly("a refused stored publish", func() error {
		ctx, cancel := context.WithTimeout(ctx, long)
		defer cancel()
		return bob.PublishesAndIsStored(ctx, "payments.eu", "ALL", "x")
	}, true)
	bob.TakeViolations()
	quickly("a granted stored publish", func() error {
		ctx, cancel := context.WithTimeout(ctx, long)
		defer cancel()
		return bob.PublishesAndIsStored(ctx, "orders.eu", "ALL", "x")
	}, false)
}

// bobBeside starts a server holding stream, made by an admin, and connects bob, who may publish
// orders.> and the JetStream API and subscribe his inbox and subscribe.
func bobBeside(t *testing.T, stream jetstream.StreamConfig, subscribe ...string) (*Conn, jetstream.Stream) {
	t.Helper()
	s := natstest.JetStream(t, func(o *server.Options) {
		o.Users = []*server.User{
			{Username: "admin", Password: "a"},
			{Username: "bob", Password: "b", Permissions: &server.Permissions{
				Publish:   &server.SubjectPermission{Allow: []string{"orders.>", "$JS.API.>"}},
				Subscribe: &server.SubjectPermission{Allow: append([]string{"_INBOX.bob.>"}, subscribe...)},
			}},
		}
	})
	_, js := natstest.Connect(t, s.ClientURL(), nats.UserInfo("admin", "a"))
	st, err := js.CreateStream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := Connect(s.ClientURL(), "bob", nats.UserInfo("bob", "b"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bob.Close)
	return bob, st
}
