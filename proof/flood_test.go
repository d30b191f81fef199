package proof

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/internal/testwait"
	"github.com/meshc-dev/meshc/principal"
)

// TestAFloodIsCutOffByALimit floods, as each kind of principal — an enrolling machine, a machine,
// a module, a person — what it may publish or hold: its enrolment requests, reports, events, work
// for a seat, pulls, subscriptions, connections and message size. Each flood must meet a limit
// meshc derived (the server's refusal or the stream's discard, docs/catalogue.md "Limits and their
// defaults"), in both isolations, with the catalogue's defaults: mesh.yaml sets no limit. Then
// the consumers the floods filled are read by their owners and the whole permission proof runs
// again on the same bus: nothing else was degraded.
//
// Without the limits (docs/history.md, "A machine that was only enrolling filled a stream") a
// machine holding only an enrolment token stored 200 × 512 KiB in CONTROL, and every flood below
// went as far as it was sent.
func TestAFloodIsCutOffByALimit(t *testing.T) {
	t.Parallel()
	for _, isolation := range inLoop(isolations) {
		t.Run(isolation, func(t *testing.T) {
			t.Parallel()
			// The server itself would take 8 MiB messages, so what stops a larger one than 1 MiB
			// is the account's limit, not the server's default.
			b := startBus(t, "testdata/proof.txtar", "max_payload: 8MB\n", isolation)
			proveFloodsAreCutOff(t, b, isolation)
		})
	}
}

func proveFloodsAreCutOff(t *testing.T, b *bus, isolation string) {
	controller := b.connect(t, "mesh-controller")
	control := catalogue.ControlDefaults

	t.Run("an enrolling machine's enrolment requests", func(t *testing.T) {
		enrol := b.connect(t, "enrol.laptop")
		report := b.connect(t, "node.anchor").publishesAndIsStored(t, "mesh.control.report.anchor", "CONTROL")
		const subject = "mesh.control.enrol.laptop"
		// The attack as first found: 200 requests of 512 KiB. Each is refused by CONTROL's
		// largest message; nothing is stored.
		for range 200 {
			enrol.publishIsRefused(t, subject, bytes.Repeat([]byte("x"), 512<<10), 10054, "message size exceeds maximum allowed")
		}
		if n := controller.holds(t, "CONTROL", subject); n != 0 {
			t.Fatalf("CONTROL holds %d oversized enrolment requests", n)
		}
		// Small ones are taken, and the subject keeps only its newest: the machine's own.
		if stored, refused := enrol.floods(t, subject, 1000, []byte(`{"answer":"_INBOX.enrol.laptop.flood"}`)); stored != 1000 || refused != nil {
			t.Fatalf("CONTROL took %d of 1000 enrolment requests (%v): a full subject drops its oldest, it refuses nothing", stored, refused)
		}
		if n := controller.holds(t, "CONTROL", subject); n != uint64(control.MaxMsgsPerSubject) {
			t.Fatalf("after 1000 enrolment requests CONTROL holds %d of them, want its cap per subject %d", n, control.MaxMsgsPerSubject)
		}
		// Another machine's report was not pushed out, and the controller still reads both.
		controller.pullsAndAcksTwice(t, "CONTROL", "reports", report)
		newest := enrol.publishesAndIsStored(t, subject, "CONTROL")
		controller.pullsAndAcksTwice(t, "CONTROL", "enrolments", newest)
		enrol.sawNoViolation(t)
	})

	t.Run("a machine's reports", func(t *testing.T) {
		node := b.connect(t, "node.anchor")
		request, _ := json.Marshal(map[string]string{"answer": "_INBOX.enrol.laptop.x"})
		b.connect(t, "enrol.laptop").publishesAndIsStoredWith(t, "mesh.control.enrol.laptop", "CONTROL", string(request))
		const subject = "mesh.control.report.anchor"
		node.publishIsRefused(t, subject, bytes.Repeat([]byte("r"), 100<<10), 10054, "message size exceeds maximum allowed")
		if stored, refused := node.floods(t, subject, 1000, bytes.Repeat([]byte("r"), 1<<10)); stored != 1000 || refused != nil {
			t.Fatalf("CONTROL took %d of 1000 reports (%v)", stored, refused)
		}
		if n := controller.holds(t, "CONTROL", subject); n != uint64(control.MaxMsgsPerSubject) {
			t.Fatalf("after 1000 reports CONTROL holds %d of them, want %d", n, control.MaxMsgsPerSubject)
		}
		controller.pullsAndAcksTwice(t, "CONTROL", "enrolments", string(request))
		heartbeats := controller.subscribes(t, "mesh.control.heartbeat.*")
		receives(t, heartbeats, node.publishesLive(t, "mesh.control.heartbeat.anchor"))
		node.sawNoViolation(t)
	})

	t.Run("a module's pulls", func(t *testing.T) {
		notifier := b.connect(t, "mod.laptop.notifier")
		const next = "$JS.API.CONSUMER.MSG.NEXT.EVENTS.laptop_notifier"
		// One pull may not wait longer than the consumer's max_expires: past it, in an isolated
		// mesh, its messages would be delivered into nothing.
		answers := notifier.pulls(t, next, 1, fmt.Sprintf(`{"batch":1,"expires":%d}`, 5*time.Minute), time.Second)
		if len(answers) != 1 || !status(answers[0], "409", "Exceeded MaxRequestExpires") {
			t.Fatalf("a pull waiting 5 minutes was not refused for its expiry: %v", describeAll(answers))
		}
		// A consumer holds at most 512 waiting pulls (the server's max_waiting); the rest of a
		// flood is refused at once.
		answers = notifier.pulls(t, next, 600, fmt.Sprintf(`{"batch":1,"expires":%d}`, 2*time.Second), time.Second)
		refused := 0
		for _, a := range answers {
			if status(a, "409", "Exceeded MaxWaiting") {
				refused++
			}
		}
		if refused != 600-512 {
			t.Fatalf("600 waiting pulls: %d refused for max_waiting, want 88 (answers: %v)", refused, describeAll(answers))
		}
		controller.waitsForNoWaitingPulls(t, "EVENTS", "laptop_notifier")
		// The consumer still delivers to its owner, and nobody else's was touched.
		upgraded := b.connect(t, "mod.anchor.catalog").publishesAndIsStored(t, "mesh.mod.catalog.event.upgraded", "EVENTS")
		notifier.pullsAndAcksTwice(t, "EVENTS", "laptop_notifier", upgraded)
		b.connect(t, "mod.laptop.audit").pullsAndAcksTwice(t, "EVENTS", "laptop_audit", upgraded)
		notifier.sawNoViolation(t)
	})

	t.Run("a module's events", func(t *testing.T) {
		catalog := b.connect(t, "mod.anchor.catalog")
		builder := b.connect(t, "mod.laptop.builder")
		events := catalogue.EventsDefaults
		const subject, other = "mesh.mod.catalog.event.upgraded", "mesh.seat.mesh-build-machine.event.built"
		built := builder.publishesAndIsStored(t, other, "EVENTS")
		before := controller.holds(t, "EVENTS", other)
		catalog.publishIsRefused(t, subject, bytes.Repeat([]byte("e"), int(events.MaxMsgSize)+1), 10054, "message size exceeds maximum allowed")
		n := int(events.MaxMsgsPerSubject) + 100
		if stored, refused := catalog.floods(t, subject, n, []byte("flood")); stored != n || refused != nil {
			t.Fatalf("EVENTS took %d of %d events (%v)", stored, n, refused)
		}
		if got := controller.holds(t, "EVENTS", subject); got != uint64(events.MaxMsgsPerSubject) {
			t.Fatalf("after %d events EVENTS holds %d of them, want its cap per subject %d", n, got, events.MaxMsgsPerSubject)
		}
		if after := controller.holds(t, "EVENTS", other); after != before {
			t.Fatalf("the flood pushed out another emitter's events: %s held %d, now %d", other, before, after)
		}
		catalog.pullsAndAcksTwice(t, "EVENTS", "anchor_catalog", built)
		catalog.sawNoViolation(t)
	})

	t.Run("a module's work for a seat", func(t *testing.T) {
		builder := b.connect(t, "mod.laptop.builder")
		seats := catalogue.SeatsDefaults
		const subject = "mesh.seat.image-store.accept.push"
		first := builder.publishesAndIsStored(t, subject, "SEAT_IMAGE_STORE")
		builder.publishIsRefused(t, subject, bytes.Repeat([]byte("w"), int(seats.MaxMsgSize)+1), 10054, "message size exceeds maximum allowed")
		// Work the size of the largest item, more than the queue holds: a full queue refuses new
		// work and keeps what it accepted.
		item := bytes.Repeat([]byte("w"), int(seats.MaxMsgSize)-1024)
		most := int(seats.MaxBytes)/len(item) + 1
		stored, refused := builder.floods(t, subject, most+20, item)
		if stored >= most || !isAPIError(refused, 10077, "maximum bytes exceeded") {
			t.Fatalf("SEAT_IMAGE_STORE took %d of %d items of %d bytes (refused with %v), want at most %d and then the stream's refusal",
				stored, most+20, len(item), refused, most-1)
		}
		// Nothing it accepted was dropped: the holder takes the first item first, and then the
		// queue has room again.
		registry := b.connect(t, "mod.anchor.registry")
		registry.pullsAndAcksTwice(t, "SEAT_IMAGE_STORE", "holder", first)
		builder.publishesAndIsStored(t, subject, "SEAT_IMAGE_STORE")
		// Another seat's queue is untouched.
		build := controller.publishesAndIsStored(t, "mesh.seat.mesh-build-machine.accept.build", "SEAT_MESH_BUILD_MACHINE")
		builder.pullsAndAcksTwice(t, "SEAT_MESH_BUILD_MACHINE", "holder", build)
		builder.sawNoViolation(t)
	})

	// Every kind of principal, with a subject it may publish and one it may subscribe.
	principals := []struct{ user, publish string }{
		{"enrol.laptop", "mesh.control.enrol.laptop"},
		{"node.anchor", "mesh.control.report.anchor"},
		{"mod.anchor.catalog", "mesh.mod.catalog.event.upgraded"},
		{"person.bob", "mesh.mod.catalog.tool.lookup"},
	}
	limits := b.plan.MeshAccount().Limits

	t.Run("subscriptions", func(t *testing.T) {
		for _, p := range principals {
			t.Run(p.user, func(t *testing.T) {
				c := b.connect(t, p.user)
				for i := range limits.Subscriptions {
					c.subscribes(t, fmt.Sprintf("_INBOX.%s.flood.%d", p.user, i))
				}
				if _, err := c.nc.SubscribeSync(fmt.Sprintf("_INBOX.%s.flood.last", p.user)); err != nil {
					t.Fatal(err)
				}
				c.meets(t, nats.ErrMaxSubscriptionsExceeded)
				// The limit is the connection's: another connection of the same user subscribes.
				b.connect(t, p.user).subscribes(t, "_INBOX."+p.user+".other")
			})
		}
	})

	t.Run("message size", func(t *testing.T) {
		for _, p := range principals {
			t.Run(p.user, func(t *testing.T) {
				b.publishesRawAndIsClosed(t, p.user, p.publish, int(limits.Payload)+1)
				b.connect(t, p.user).sawNoViolation(t)
			})
		}
	})

	t.Run("connections", func(t *testing.T) {
		if isolation == catalogue.IsolationShared {
			// The server's configuration has no limit per user: in one account every user draws on
			// the mesh's connections, so one user holding them all locks every other out too. An
			// account of its own is what makes the limit one principal's.
			// The controller's connection of this test is the one other in the account.
			pool := int(limits.Connections)
			if held := b.connectsUntilRefused(t, "person.bob", 1, pool+1); held != pool-1 {
				t.Fatalf("person.bob held %d connections before the account refused one, want the account's %d less the controller's", held, pool)
			}
			if _, err := b.dial("person.alice"); !errors.Is(err, nats.ErrMaxAccountConnectionsExceeded) {
				t.Fatalf("with the shared account's connections all held, another user connected: %v", err)
			}
			return
		}
		for _, p := range principals {
			t.Run(p.user, func(t *testing.T) {
				each := int(catalogue.DefaultConnectionsPerUser)
				if held := b.connectsUntilRefused(t, p.user, 0, each+1); held != each {
					t.Fatalf("%s held %d connections before its account refused one, want %d", p.user, held, each)
				}
				// Its limit is its own: every other principal still connects and works.
				b.connect(t, "person.alice").sawNoViolation(t)
				b.connect(t, "mod.laptop.builder").publishesAndIsStored(t, "mesh.seat.mesh-build-machine.event.built", "EVENTS")
			})
		}
	})

	t.Run("every legitimate flow still passes", func(t *testing.T) {
		// The flooded subjects' messages are their consumers' to read; read, what is left is the
		// bus as it was.
		b.connect(t, "mod.laptop.notifier").drains(t, "EVENTS", "laptop_notifier")
		b.connect(t, "mod.laptop.audit").drains(t, "EVENTS", "laptop_audit")
		b.connect(t, "mod.anchor.registry").drains(t, "SEAT_IMAGE_STORE", "holder")
		proveGrantsAndRefusals(t, b)
	})
}

// publishIsRefused makes a JetStream publish the stream must refuse with the API error code and
// description.
func (c *client) publishIsRefused(t *testing.T, subject string, body []byte, code jetstream.ErrorCode, description string) {
	t.Helper()
	_, err := c.js.Publish(context5s(t), subject, body)
	if !isAPIError(err, code, description) {
		t.Fatalf("%s published %d bytes on %s: %v, want the stream's refusal %d %q", c.user, len(body), subject, err, code, description)
	}
}

func isAPIError(err error, code jetstream.ErrorCode, description string) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && api.ErrorCode == code && strings.Contains(api.Description, description)
}

// floods publishes n messages of body on subject as JetStream publishes, at most 500 awaiting
// their PubAck at once, and returns how many were stored and the first refusal.
func (c *client) floods(t *testing.T, subject string, n int, body []byte) (stored int, refused error) {
	t.Helper()
	for sent := 0; sent < n; {
		futures := make([]jetstream.PubAckFuture, min(500, n-sent))
		for i := range futures {
			f, err := c.js.PublishAsync(subject, body)
			if err != nil {
				t.Fatalf("%s flooding %s: %v", c.user, subject, err)
			}
			futures[i] = f
		}
		select {
		case <-c.js.PublishAsyncComplete():
		case <-time.After(30 * time.Second):
			t.Fatalf("%s flooding %s: no PubAcks for 30 s", c.user, subject)
		}
		for _, f := range futures {
			select {
			case <-f.Ok():
				stored++
			case err := <-f.Err():
				if refused == nil {
					refused = err
				}
			}
		}
		sent += len(futures)
	}
	return stored, refused
}

// holds reads how many messages stream holds on subject, as a user allowed to ask.
func (c *client) holds(t *testing.T, stream, subject string) uint64 {
	t.Helper()
	ctx := context5s(t)
	s, err := c.js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("%s reading %s: %v", c.user, stream, err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatalf("%s reading %s on %s: %v", c.user, stream, subject, err)
	}
	return info.State.Subjects[subject]
}

// pulls sends n raw pull requests with one body, each with a reply of its own in the user's
// inbox, and returns every answer that arrives within wait after the last.
func (c *client) pulls(t *testing.T, subject string, n int, request string, wait time.Duration) []*nats.Msg {
	t.Helper()
	prefix := c.nc.NewInbox()
	sub, err := c.nc.SubscribeSync(prefix + ".*")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	for i := range n {
		if err := c.nc.PublishRequest(subject, fmt.Sprintf("%s.%d", prefix, i), []byte(request)); err != nil {
			t.Fatal(err)
		}
	}
	var out []*nats.Msg
	for {
		m, err := sub.NextMsg(wait)
		if err != nil {
			return out
		}
		out = append(out, m)
	}
}

// status reports whether a pull's answer is the server's status code with a description
// starting so.
func status(m *nats.Msg, code, description string) bool {
	return m.Header.Get("Status") == code && strings.HasPrefix(m.Header.Get("Description"), description)
}

func describeAll(ms []*nats.Msg) string {
	count := map[string]int{}
	for _, m := range ms {
		count[m.Header.Get("Status")+" "+m.Header.Get("Description")]++
	}
	return fmt.Sprint(count)
}

// waitsForNoWaitingPulls waits until no pull waits on a consumer.
func (c *client) waitsForNoWaitingPulls(t *testing.T, stream, consumer string) {
	t.Helper()
	testwait.For(t, fmt.Sprintf("no pull to wait on %s/%s", stream, consumer), 10*time.Second, func() bool {
		return c.consumerInfo(t, stream, consumer).NumWaiting == 0
	})
}

// drains reads everything a consumer holds, as its owner, in batches, and acknowledges it.
func (c *client) drains(t *testing.T, stream, consumer string) {
	t.Helper()
	ctx := t.Context() // each request has the client's own timeout
	cons, err := c.js.Consumer(ctx, stream, consumer)
	if err != nil {
		t.Fatalf("%s binding %s/%s: %v", c.user, stream, consumer, err)
	}
	// Each pull asks for what the consumer reports pending, so it ends when that has come
	// rather than waiting out its time for a full batch (a second a pull, most of this proof's).
	testwait.ForNil(t, fmt.Sprintf("%s to read %s/%s to its end", c.user, stream, consumer), 30*time.Second, func() error {
		info, err := cons.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumPending > 0 {
			batch, err := cons.Fetch(int(min(info.NumPending, 500)), jetstream.FetchMaxWait(5*time.Second))
			if err != nil {
				return err
			}
			for m := range batch.Messages() {
				if err := m.Ack(); err != nil {
					return err
				}
			}
			if err := c.nc.Flush(); err != nil {
				return err
			}
			if info, err = cons.Info(ctx); err != nil {
				return err
			}
		}
		if info.NumPending > 0 || info.NumAckPending > 0 {
			return fmt.Errorf("%d pending, %d awaiting an ack", info.NumPending, info.NumAckPending)
		}
		return nil
	})
	c.sawNoViolation(t)
}

// meets waits for the server's asynchronous refusal err on this connection.
func (c *client) meets(t *testing.T, want error) {
	t.Helper()
	must(t, c.Meets(want, principal.Wait))
}

// dial connects as user the way a client does, for a test that counts connections.
func (b *bus) dial(user string) (*nats.Conn, error) {
	return nats.Connect(b.url, nats.UserInfo(user, b.running.Password(user)), nats.CustomInboxPrefix("_INBOX."+user), nats.NoReconnect())
}

// connectsUntilRefused opens connections as user until the server refuses one for its account's
// limit, at most tries, and returns how many it held. It first waits until the user's account
// holds only the others connections expected there, none left from an earlier subtest (a close
// reaches the server a moment later).
func (b *bus) connectsUntilRefused(t *testing.T, user string, others, tries int) int {
	t.Helper()
	account, err := b.running.Server.LookupAccount(b.plan.User(user).Account)
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, fmt.Sprintf("account %s to hold no connection but the %d expected", account.Name, others), 5*time.Second, func() bool {
		return account.NumLocalConnections() <= others
	})
	for held := 0; held < tries; held++ {
		nc, err := b.dial(user)
		if errors.Is(err, nats.ErrMaxAccountConnectionsExceeded) {
			return held
		}
		if err != nil {
			t.Fatalf("%s's connection %d: %v", user, held+1, err)
		}
		t.Cleanup(nc.Close)
	}
	return tries
}

// publishesRawAndIsClosed publishes size bytes on subject as user over the wire protocol itself,
// as a hostile client would (nats.go refuses a message past the limit the server tells it), and
// requires the server to refuse it and close the connection.
func (b *bus) publishesRawAndIsClosed(t *testing.T, user, subject string, size int) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(b.url, "nats://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "INFO ") {
		t.Fatalf("no INFO from the server: %q %v", line, err)
	}
	connect, _ := json.Marshal(map[string]any{"user": user, "pass": b.running.Password(user), "verbose": false, "pedantic": false, "protocol": 1, "headers": true})
	fmt.Fprintf(conn, "CONNECT %s\r\nPING\r\n", connect)
	if line, err := r.ReadString('\n'); err != nil || line != "PONG\r\n" {
		t.Fatalf("%s was not let in: %q %v", user, line, err)
	}
	fmt.Fprintf(conn, "PUB %s %d\r\n%s\r\n", subject, size, bytes.Repeat([]byte("p"), size))
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("%s published %d bytes and the server did not refuse it: %v", user, size, err)
		}
		if strings.Contains(line, "Maximum Payload Violation") {
			break
		}
	}
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatalf("%s's connection stayed open after the payload violation", user)
	}
}
