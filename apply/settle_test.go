package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshc-dev/meshc/apply/wire"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/testwait"
)

// replacedFlow is one of the example's module consumers on EVENTS, the user that reads it and a
// user that publishes into its first filter, each connected as itself.
type replacedFlow struct {
	b        *meshBus
	index    int // in the plan's consumers
	consumer string
	subject  string
	reader   jetstream.Consumer
	writer   jetstream.JetStream
}

func startReplacedFlow(t *testing.T) *replacedFlow {
	t.Helper()
	plan := examplePlan(t)
	// A module's consumer whose first filter is one event some module's user publishes.
	i, subject, publisher := -1, "", ""
	for j, c := range plan.Consumers {
		if c.Stream != compiler.EventsStream || c.Config.DeliverSubject != "" || c.User == "" || c.User == compiler.ControllerUser {
			continue
		}
		filter := c.Config.FilterSubject
		if filter == "" {
			filter = c.Config.FilterSubjects[0]
		}
		for _, u := range plan.Users {
			if u.Kind == compiler.KindModule && slices.Contains(u.Publish.Allow, filter) {
				i, subject, publisher = j, filter, u.Name
				break
			}
		}
		if i >= 0 {
			break
		}
	}
	if i < 0 {
		t.Fatal("the example has no module's pull consumer on EVENTS of an event a module publishes")
	}
	pc := plan.Consumers[i]
	b := startMeshBusIn(t, t.TempDir(), plan, pc.User, publisher)
	if _, _, err := converge(t, b.controller.nc, b.controller.js, b.plan, change.DiffOptions{}, Options{}); err != nil {
		t.Fatal(err)
	}
	f := &replacedFlow{b: b, index: i, consumer: compiler.ConsumerName(pc.Config), subject: subject}
	var err error
	_, readerJS := b.as(t, pc.User)
	if f.reader, err = readerJS.Consumer(t.Context(), compiler.EventsStream, f.consumer); err != nil {
		t.Fatal(err)
	}
	_, f.writer = b.as(t, publisher)
	return f
}

// as connects as one of the bus's users, with its own inbox, as a module does.
func (b *meshBus) as(t *testing.T, user string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	pw, ok := b.passwords[user]
	if !ok {
		t.Fatalf("no password minted for %s", user)
	}
	nc, err := nats.Connect(b.url, nats.UserInfo(user, pw), nats.CustomInboxPrefix(compiler.InboxPrefix(user)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// replacing returns the plan with the flow's consumer changed so that it must be replaced
// (max_waiting cannot change in place).
func (f *replacedFlow) replacing(maxWaiting int) *compiler.Plan {
	p := clonePlanUsers(f.b.plan)
	p.Consumers = slices.Clone(f.b.plan.Consumers)
	p.Consumers[f.index].Config.MaxWaiting = maxWaiting
	return p
}

// The deterministic case: of six messages delivered, the first is still pending and the five
// above it are acknowledged. The ack floor is 0, so a replacement would deliver all six again;
// the plan says so, apply pauses the consumer, waits, reads it again and refuses, leaving it as
// it was and delivering. Once the first is acknowledged the replace goes through and delivers
// nothing acknowledged again.
func TestAReplaceThatWouldDeliverAcknowledgedMessagesAgainIsRefused(t *testing.T) {
	t.Parallel()
	f := startReplacedFlow(t)
	ctx := t.Context()
	for n := range 6 {
		if _, err := f.writer.Publish(ctx, f.subject, fmt.Appendf(nil, "%d", n+1)); err != nil {
			t.Fatal(err)
		}
	}
	batch, err := f.reader.Fetch(6, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var first jetstream.Msg
	for m := range batch.Messages() {
		if first == nil {
			first = m
			continue
		}
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if first == nil {
		t.Fatal("nothing was delivered")
	}

	plan := f.replacing(100)
	cs := diffNow(t, f.b.controller.nc, plan, change.DiffOptions{})
	c := only(t, cs)
	if c.Action != change.Replace || !strings.Contains(strings.Join(c.Notes, " "), "has acknowledged up to 5 messages above its ack floor, past 1 delivered") {
		t.Fatalf("the plan does not say what a replace would deliver again: %+v", c)
	}
	_, err = Apply(ctx, f.b.controller.js, cs, Options{AllowReplace: true, SettleFor: 500 * time.Millisecond})
	if !errors.Is(err, wire.ErrRefused) || !strings.Contains(err.Error(), "would deliver again up to 5 messages it acknowledged") ||
		!strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("a replace that would deliver 5 acknowledged messages again: %v", err)
	}
	info, err := f.reader.Info(ctx)
	if err != nil || info.Paused || info.Config.MaxWaiting == 100 || info.NumAckPending != 1 || info.AckFloor.Stream != 0 {
		t.Fatalf("the refused replace left the consumer otherwise than it was: %+v %v", info, err)
	}
	f.b.controller.requireNoViolation(t)

	// Its reader acknowledges the one pending: now nothing acknowledged lies above the floor.
	if err := first.DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
	cs = diffNow(t, f.b.controller.nc, plan, change.DiffOptions{})
	if _, err := Apply(ctx, f.b.controller.js, cs, Options{AllowReplace: true}); err != nil {
		t.Fatalf("the replace once everything was acknowledged: %v", err)
	}
	requireEmpty(t, diffNow(t, f.b.controller.nc, plan, change.DiffOptions{}), "the consumer was replaced")
	if _, err := f.writer.Publish(ctx, f.subject, []byte("7")); err != nil {
		t.Fatal(err)
	}
	batch, err = f.reader.Fetch(10, jetstream.FetchMaxWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for m := range batch.Messages() {
		got = append(got, string(m.Data()))
	}
	if !slices.Equal(got, []string{"7"}) {
		t.Fatalf("the replacement delivered %q: want only the new message 7", got)
	}
}

// A steady publisher and a reader acknowledging each message, confirmed by the server, while the
// consumer is replaced three times: no message the server confirmed acknowledged is delivered
// again, and every message published is delivered.
func TestAReplaceUnderSteadyTrafficDeliversNothingAcknowledgedAgain(t *testing.T) {
	t.Parallel()
	f := startReplacedFlow(t)
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	publishing, stopPublishing := context.WithCancel(ctx)
	defer stopPublishing()
	var mu sync.Mutex
	acked := map[uint64]bool{}
	var again []uint64
	published := 0
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for n := 0; publishing.Err() == nil; n++ {
			if _, err := f.writer.Publish(publishing, f.subject, fmt.Appendf(nil, "%d", n)); err == nil {
				mu.Lock()
				published++
				mu.Unlock()
			}
			select {
			case <-publishing.Done():
			case <-tick.C:
			}
		}
	}()
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			batch, err := f.reader.Fetch(20, jetstream.FetchMaxWait(200*time.Millisecond))
			if err != nil {
				continue // the consumer between its delete and its create
			}
			for m := range batch.Messages() {
				md, err := m.Metadata()
				if err != nil {
					continue
				}
				mu.Lock()
				if acked[md.Sequence.Stream] {
					again = append(again, md.Sequence.Stream)
				}
				mu.Unlock()
				if m.DoubleAck(ctx) == nil {
					mu.Lock()
					acked[md.Sequence.Stream] = true
					mu.Unlock()
				}
			}
		}
	}()
	ackedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	testwait.For(t, "the reader to acknowledge a hundred messages", 30*time.Second, func() bool { return ackedCount() >= 100 })
	for i, maxWaiting := range []int{100, 200, 300} {
		plan := f.replacing(maxWaiting)
		cs := diffNow(t, f.b.controller.nc, plan, change.DiffOptions{})
		if c := only(t, cs); c.Action != change.Replace {
			t.Fatalf("replace %d: %+v", i+1, c)
		}
		if _, err := Apply(t.Context(), f.b.controller.js, cs, Options{AllowReplace: true}); err != nil {
			t.Fatalf("replace %d under traffic: %v", i+1, err)
		}
		was := ackedCount()
		testwait.For(t, "the replacement to deliver", 30*time.Second, func() bool { return ackedCount() >= was+50 })
	}
	stopPublishing()
	testwait.For(t, "every message published to be delivered and acknowledged", 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= published
	})
	stop()
	wg.Wait()
	if len(again) > 0 {
		t.Fatalf("%d messages acknowledged and confirmed were delivered again after the replaces (stream sequences %v)", len(again), again)
	}
	t.Logf("%d published, %d acknowledged, none delivered again", published, len(acked))
	f.b.controller.requireNoViolation(t)
}

// A consumer replace needs a pause, which nats-server 2.11 brought: on an older server it is
// refused before anything is written, naming the version, whatever the flags.
func TestAReplaceOnAServerWithoutPauseIsRefused(t *testing.T) {
	t.Parallel()
	cs := change.Changes{Items: []change.Change{{Action: change.Replace, Kind: change.KindConsumer, Stream: "EVENTS", Consumer: "anchor_catalog",
		Fields: []change.Field{{Name: "max_waiting", Old: "512", New: "100", Replaces: true}}}}}
	err := Refusals(cs, Options{AllowReplace: true, ServerVersion: "2.10.29"})
	if err == nil || !strings.Contains(err.Error(), "runs nats-server 2.10.29: replacing a consumer without delivering again what it acknowledged needs 2.11.0 or later") {
		t.Fatalf("a consumer replace on 2.10: %v", err)
	}
	if err := Refusals(cs, Options{AllowReplace: true, ServerVersion: "2.11.0"}); err != nil {
		t.Fatalf("a consumer replace on 2.11: %v", err)
	}
	// A stream's replace needs no pause.
	cs.Items[0].Kind, cs.Items[0].Consumer = change.KindStream, ""
	if err := Refusals(cs, Options{AllowReplace: true, ServerVersion: "2.10.29"}); err != nil {
		t.Fatalf("a stream replace on 2.10: %v", err)
	}
}
