// Package principal connects to a bus as one of its principals — a bus user meshc composed — and
// tries what that user may and may not do, each try judged by the server's own answer: a refusal
// is the server's Permissions Violation for that subject, never a request that merely timed out
// (a timeout with no violation means the server let it through and nobody answered: docs/nats.md,
// "Denials arrive asynchronously"); a publish is the PubAck of the stream that stored it; a read
// is a delivery acknowledged twice. The permission proof (proof/) and `meshc verify` are made of
// these tries, so both judge a bus by the same rules.
package principal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/compiler"
)

// syncQueue is how many messages a try's synchronous subscription holds: a try reads a few.
const syncQueue = 1024

// nop takes a message nobody reads: a subscription made only to be refused, or taken.
func nop(*nats.Msg) {}

// Wait is how long a try waits for the server's answer: a violation, a delivery, a reply. The
// server sends a violation before the PONG that ends a flush, so on a working bus it is a
// moment; the wait is spent only on an answer that never comes, and is long because a server
// busy with a thousand principals' tries answers late, not never.
const Wait = 10 * time.Second

// Conn is one principal's connection, remembering every permission violation the server sent it
// and every other asynchronous error (a limit's refusal).
type Conn struct {
	User string
	NC   *nats.Conn
	JS   jetstream.JetStream

	mu         sync.Mutex
	violations []string
	others     []error
	// recorded is the last violation the error handler recorded, cleared the last one a try
	// took with every violation before it: the connection's last error is old news when it is
	// the cleared one, so a connection can make tries that expect violations and then tries that
	// expect none.
	recorded, cleared error
	// each is every violation the error handler recorded, by identity: nats.go makes each the
	// connection's last error before it hands it to the handler, so once the last error after a
	// flush is among them, every violation the server sent before the flush's PONG is recorded.
	each map[error]bool
}

// Connect connects to url as user with the inbox prefix its grant names, `_INBOX.<user>` (a user
// may subscribe only its own inbox: docs/nats.md, "Inbox prefixes"), without reconnecting: a
// try on a connection the server closed must fail, not wait. opts carry the credentials.
func Connect(url, user string, opts ...nats.Option) (*Conn, error) {
	c := &Conn{User: user}
	all := append([]nats.Option{
		nats.CustomInboxPrefix(compiler.InboxPrefix(user)),
		nats.NoReconnect(),
		// A synchronous subscription's queue is allocated whole when it is made (512 Ki
		// messages by default): thousands of tries would allocate gigabytes for nothing.
		nats.SyncQueueLen(syncQueue),
	}, opts...)
	// Last, so no option given replaces it.
	all = append(all, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { c.record(err) }))
	nc, err := nats.Connect(url, all...)
	if err != nil {
		return nil, fmt.Errorf("%s cannot connect: %w", user, err)
	}
	c.NC = nc
	if c.JS, err = jetstream.New(nc, jetstream.WithDefaultTimeout(5*time.Second)); err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

func (c *Conn) record(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if errors.Is(err, nats.ErrPermissionViolation) {
		c.violations = append(c.violations, err.Error())
		c.recorded = err
		if c.each == nil {
			c.each = map[error]bool{}
		}
		c.each[err] = true
	} else {
		c.others = append(c.others, err)
	}
}

// Close closes the connection.
func (c *Conn) Close() { c.NC.Close() }

// Seen is every violation not yet taken by a try that expected it.
func (c *Conn) Seen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.violations)
}

// SawNoViolation requires that the server never refused this connection anything. The server
// writes a violation before the PONG that ends Flush, and the client records it as the
// connection's last error while reading, so after Flush LastError is complete.
func (c *Conn) SawNoViolation() error {
	if err := c.NC.FlushTimeout(30 * time.Second); err != nil {
		return fmt.Errorf("%s: %w", c.User, err)
	}
	if err := c.untaken(); err != nil {
		return fmt.Errorf("%s was refused: %v (all violations: %v)", c.User, err, c.Seen())
	}
	if v := c.Seen(); len(v) > 0 {
		return fmt.Errorf("%s was refused: %v", c.User, v)
	}
	return nil
}

// TakeViolations returns and forgets the violations seen so far: a batch of tries that expected
// them reads them at once. It first lets the error handler catch up with the violations the
// client has read (RecordedBefore), so a violation read and not yet handled is not left to
// count against the next try.
func (c *Conn) TakeViolations() []string {
	last := c.NC.LastError()
	for deadline := time.Now().Add(Wait); errors.Is(last, nats.ErrPermissionViolation) && !c.RecordedBefore(last) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.violations
	c.violations, c.cleared = nil, c.recorded
	return v
}

// RecordedBefore says whether every violation the server sent before a flush has reached the
// error handler, given last, the connection's last error read right after that flush: the server
// writes a violation before the PONG that ends the flush, and the client makes it the last error
// as it reads it, then queues it for the handler. No last error means no violation ever; a last
// error that is no violation (a slow consumer) says nothing, and the caller waits.
func (c *Conn) RecordedBefore(last error) bool {
	if last == nil {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.each[last]
}

// untaken is the connection's last error when it is a violation no try has taken yet: the
// server's refusal of what this connection did since, once a flush has returned.
func (c *Conn) untaken() error {
	last := c.NC.LastError()
	c.mu.Lock()
	defer c.mu.Unlock()
	if errors.Is(last, nats.ErrPermissionViolation) && last != c.cleared {
		return last
	}
	return nil
}

// Violated waits up to wait for a violation containing want on this connection and takes it;
// what says what was refused, for the error when none comes.
func (c *Conn) Violated(want, what string, wait time.Duration) error {
	if err := c.NC.FlushTimeout(30 * time.Second); err != nil {
		return fmt.Errorf("%s: %w", c.User, err)
	}
	last := c.NC.LastError()
	deadline := time.Now().Add(wait)
	for {
		c.mu.Lock()
		// Read under the lock the handler records under, with the list: once the last error is
		// recorded, every violation before it is in the list too.
		settled := last == nil || c.each[last]
		i := slices.IndexFunc(c.violations, func(v string) bool { return strings.Contains(v, want) })
		if i >= 0 {
			c.violations = slices.Delete(c.violations, i, i+1)
			if len(c.violations) == 0 {
				c.cleared = c.recorded
			}
		}
		c.mu.Unlock()
		if i >= 0 {
			return nil
		}
		// Every violation sent before the flush is in, and none was this: said now, not after
		// wait (a widened grant made verify wait out each refusal it expected, 10 s each).
		if settled {
			return fmt.Errorf("the server did not refuse %s %s: it answered the flush after it without that violation (violations seen: %v)", c.User, what, c.Seen())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server did not refuse %s %s within %s (violations seen: %v)", c.User, what, wait, c.Seen())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Op is what a violation was for: the server says "Publish" or "Subscription".
type Op string

const (
	Publish      Op = "Publish"
	Subscription Op = "Subscription"
)

// Violation is the server's words for refusing op on subject.
func Violation(op Op, subject string) string {
	return fmt.Sprintf("Permissions Violation for %s to %q", op, subject)
}

// Refused waits for the server's "Permissions Violation for <op> to "<subject>"" on this
// connection. The error handler runs on the client's own goroutine a moment after the flush.
func (c *Conn) Refused(op Op, subject string) error {
	return c.Violated(Violation(op, subject), strings.ToLower(string(op))+" on "+subject, Wait)
}

// IsRefusedPublishing publishes body on subject and requires the server's violation for it.
func (c *Conn) IsRefusedPublishing(subject, body string) error {
	if err := c.NC.Publish(subject, []byte(body)); err != nil {
		return err
	}
	return c.Refused(Publish, subject)
}

// IsRefusedRequesting sends a request on subject with a reply in the user's own inbox (a pull, an
// API call) and requires the server's violation for it — not merely no answer.
func (c *Conn) IsRefusedRequesting(subject string) error {
	if err := c.NC.PublishRequest(subject, c.NC.NewInbox(), []byte("{}")); err != nil {
		return err
	}
	return c.Refused(Publish, subject)
}

// IsRefusedSubscribing subscribes subject and requires the server's violation for it.
func (c *Conn) IsRefusedSubscribing(subject string) error {
	sub, err := c.NC.Subscribe(subject, nop)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	return c.Refused(Subscription, subject)
}

// IsRefusedQueueSubscribing subscribes subject in queue group queue and requires the server's
// violation for it.
func (c *Conn) IsRefusedQueueSubscribing(subject, queue string) error {
	sub, err := c.NC.QueueSubscribe(subject, queue, nop)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	return c.Violated(fmt.Sprintf("Permissions Violation for Subscription to %q using queue %q", subject, queue),
		"subscription on "+subject+" in queue group "+queue, Wait)
}

// PublishesAndIsStored publishes body on subject as a JetStream publish and requires the PubAck
// of stream: the grant let it through and the stream stored it.
func (c *Conn) PublishesAndIsStored(ctx context.Context, subject, stream, body string) error {
	// Published asynchronously, so that a refusal is said at the flush: the server never
	// answers a publish it refused, and a publish left to wait waited out ctx.
	f, err := c.JS.PublishAsync(subject, []byte(body))
	if err != nil {
		return fmt.Errorf("%s publishing %s: %v", c.User, subject, err)
	}
	if err := c.NC.FlushTimeout(30 * time.Second); err != nil {
		return fmt.Errorf("%s: %w", c.User, err)
	}
	if refused := c.untaken(); refused != nil {
		return fmt.Errorf("%s publishing %s got no PubAck: %v (violations: %v)", c.User, subject, refused, c.Seen())
	}
	var ack *jetstream.PubAck
	select {
	case ack = <-f.Ok():
	case err = <-f.Err():
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("%s publishing %s got no PubAck: %v (violations: %v)", c.User, subject, err, c.Seen())
	}
	if ack.Stream != stream {
		return fmt.Errorf("%s published %s and %s stored it, want %s", c.User, subject, ack.Stream, stream)
	}
	return c.SawNoViolation()
}

// PublishesLive publishes body on subject without JetStream (heartbeats, answers) and requires no
// violation.
func (c *Conn) PublishesLive(subject, body string) error {
	if err := c.NC.Publish(subject, []byte(body)); err != nil {
		return err
	}
	return c.SawNoViolation()
}

// Subscribes subscribes subject and requires the server to take the subscription.
func (c *Conn) Subscribes(subject string) (*nats.Subscription, error) {
	return c.taken(c.NC.SubscribeSync(subject))
}

// taken requires the server to have taken a subscription just made, dropping it when refused.
func (c *Conn) taken(sub *nats.Subscription, err error) (*nats.Subscription, error) {
	if err != nil {
		return nil, err
	}
	if err := c.SawNoViolation(); err != nil {
		sub.Unsubscribe()
		return nil, err
	}
	return sub, nil
}

// PullsAndAcksTwice binds the durable consumer of stream with the user's own grants and pulls
// until every wanted body has arrived. Every message fetched is acknowledged twice, `+WPI` then
// `+ACK` (waiting for the server's confirmation): with allow_responses a missing ack grant would
// pass for one ack and fail only the second (docs/nats.md, "allow_responses: one reply, two
// minutes"). It then requires nothing awaiting an ack, and returns the wanted messages in the
// order given.
func (c *Conn) PullsAndAcksTwice(ctx context.Context, stream, consumer string, want ...string) ([]jetstream.Msg, error) {
	cons, err := c.JS.Consumer(ctx, stream, consumer)
	if err != nil {
		return nil, fmt.Errorf("%s cannot bind its consumer %s on %s: %v (violations: %v)", c.User, consumer, stream, err, c.Seen())
	}
	got := map[string]jetstream.Msg{}
	for len(got) < len(want) {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(Wait))
		if err != nil {
			return nil, fmt.Errorf("%s pulling %s: %v (violations: %v)", c.User, consumer, err, c.Seen())
		}
		n := 0
		for m := range batch.Messages() {
			n++
			if err := AckTwice(ctx, m); err != nil {
				return nil, fmt.Errorf("%s on %s: %v (violations: %v)", c.User, consumer, err, c.Seen())
			}
			if slices.Contains(want, string(m.Data())) {
				got[string(m.Data())] = m
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return nil, fmt.Errorf("%s pulling %s: %v (violations: %v)", c.User, consumer, err, c.Seen())
		}
		if n == 0 {
			return nil, fmt.Errorf("%s's consumer %s on %s delivered nothing in %s; still missing %d of %d messages (violations: %v)",
				c.User, consumer, stream, Wait, len(want)-len(got), len(want), c.Seen())
		}
	}
	if err := c.settled(ctx, cons); err != nil {
		return nil, err
	}
	out := make([]jetstream.Msg, len(want))
	for i, w := range want {
		out[i] = got[w]
	}
	return out, nil
}

// AckTwice acknowledges a delivery twice, `+WPI` then `+ACK` waiting for the server's
// confirmation.
func AckTwice(ctx context.Context, m jetstream.Msg) error {
	if err := m.InProgress(); err != nil {
		return fmt.Errorf("sending +WPI: %w", err)
	}
	if err := m.DoubleAck(ctx); err != nil {
		return fmt.Errorf("acknowledging after +WPI: %w", err)
	}
	return nil
}

// Drains reads everything a pull consumer holds, as its owner, until the consumer says nothing
// is left to deliver; it returns the bodies it read, by subject, and then requires nothing
// awaiting an ack. The first delivery of each batch is acknowledged twice, `+WPI` then `+ACK`
// waiting for the server's confirmation (what proves the ack grant: AckTwice), the rest once
// without waiting, which the settling then confirms.
//
// Each pull asks for exactly what the consumer reports pending (at most 256) and waits up to
// Wait for it. A pull that waits for nothing (FetchNoWait) still gives up on its answer after a
// second; on a busy machine the server then delivered into the abandoned pull, and those
// messages waited out their ack wait, unread: `meshc verify` reported an ack refused, or a
// consumer's filters narrower than the manifests.
func (c *Conn) Drains(ctx context.Context, stream, consumer string) (map[string][]string, error) {
	cons, err := c.JS.Consumer(ctx, stream, consumer)
	if err != nil {
		return nil, fmt.Errorf("%s cannot bind its consumer %s on %s: %v (violations: %v)", c.User, consumer, stream, err, c.Seen())
	}
	read := map[string][]string{}
	for {
		info, err := cons.Info(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s reading its consumer %s/%s: %v (violations: %v)", c.User, stream, consumer, err, c.Seen())
		}
		if info.NumPending == 0 {
			break
		}
		if beforePull != nil {
			beforePull()
		}
		batch, err := cons.Fetch(int(min(info.NumPending, 256)), jetstream.FetchMaxWait(Wait))
		if err != nil {
			return nil, fmt.Errorf("%s pulling %s/%s: %v (violations: %v)", c.User, stream, consumer, err, c.Seen())
		}
		n := 0
		for m := range batch.Messages() {
			if n == 0 {
				err = AckTwice(ctx, m)
			} else {
				err = m.Ack()
			}
			if err != nil {
				return nil, fmt.Errorf("%s on %s/%s: %v (violations: %v)", c.User, stream, consumer, err, c.Seen())
			}
			n++
			read[m.Subject()] = append(read[m.Subject()], string(m.Data()))
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return nil, fmt.Errorf("%s pulling %s/%s: %v (violations: %v)", c.User, stream, consumer, err, c.Seen())
		}
		if n == 0 {
			return nil, fmt.Errorf("%s pulling %s/%s: nothing came within %s, though the consumer reported %d pending (violations: %v); the server is too slow to answer, or something else read the consumer meanwhile: run it again when the server is idle", c.User, stream, consumer, Wait, info.NumPending, c.Seen())
		}
	}
	if err := c.NC.FlushTimeout(30 * time.Second); err != nil {
		return nil, err
	}
	if err := c.settled(ctx, cons); err != nil {
		return nil, err
	}
	return read, nil
}

// beforePull, when set, runs before each of Drains' pulls: the tests' way to make the server
// answer one late. Only a test that is not parallel sets it.
var beforePull func()

// settled requires a consumer its user acknowledged everything of to hold nothing awaiting an
// ack, within Wait: an ack sent without waiting reaches the server a moment later.
func (c *Conn) settled(ctx context.Context, cons jetstream.Consumer) error {
	var info *jetstream.ConsumerInfo
	for deadline := time.Now().Add(Wait); ; time.Sleep(10 * time.Millisecond) {
		var err error
		if info, err = cons.Info(ctx); err != nil {
			return fmt.Errorf("%s reading its consumer: %v", c.User, err)
		}
		if info.NumAckPending == 0 || time.Now().After(deadline) {
			break
		}
	}
	if info.NumAckPending != 0 {
		return fmt.Errorf("%s acknowledged everything it pulled from %s/%s, yet %d messages still await an ack: the server refused an ack",
			c.User, info.Stream, info.Name, info.NumAckPending)
	}
	return c.SawNoViolation()
}

// ReceivesPushedAndAcksTwice takes the wanted body from a push consumer's delivery subscription
// and acks it twice, `+WPI` then `+ACK` waiting for the server's confirmation.
func (c *Conn) ReceivesPushedAndAcksTwice(sub *nats.Subscription, want string) (*nats.Msg, error) {
	for {
		m, err := sub.NextMsg(Wait)
		if err != nil {
			return nil, fmt.Errorf("%s received nothing on %s: %v (violations: %v)", c.User, sub.Subject, err, c.Seen())
		}
		if err := m.InProgress(); err != nil {
			return nil, err
		}
		if err := m.AckSync(nats.AckWait(Wait)); err != nil {
			return nil, fmt.Errorf("%s acknowledging a delivery on %s after +WPI: %v (violations: %v)", c.User, sub.Subject, err, c.Seen())
		}
		if string(m.Data) == want {
			return m, c.SawNoViolation()
		}
	}
}

// ConsumerInfo reads a consumer by the API's INFO request, which answers for pull and push
// consumers alike (the jetstream client binds each kind by a different call).
func (c *Conn) ConsumerInfo(ctx context.Context, stream, consumer string) (*jetstream.ConsumerInfo, error) {
	m, err := c.NC.RequestWithContext(ctx, compiler.ConsumerInfo(stream, consumer), nil)
	if err != nil {
		return nil, fmt.Errorf("%s reading %s/%s: %v (violations: %v)", c.User, stream, consumer, err, c.Seen())
	}
	var info struct {
		jetstream.ConsumerInfo
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &info); err != nil {
		return nil, fmt.Errorf("%s reading %s/%s: %v", c.User, stream, consumer, err)
	}
	if info.Error != nil {
		return nil, fmt.Errorf("%s reading %s/%s: %v", c.User, stream, consumer, info.Error)
	}
	return &info.ConsumerInfo, nil
}

// ServesSync subscribes a tool in queue group queue, as its grant requires (the module's name:
// docs/catalogue.md, "Serving a tool"), leaving the calls for the caller to read.
func (c *Conn) ServesSync(tool, queue string) (*nats.Subscription, error) {
	return c.taken(c.NC.QueueSubscribeSync(tool, queue))
}

// Serves answers every call of a tool with answer, subscribed in queue group queue.
func (c *Conn) Serves(tool, queue string, answer func(*nats.Msg)) (*nats.Subscription, error) {
	return c.taken(c.NC.QueueSubscribe(tool, queue, answer))
}

// Takes subscribes subject (in queue group queue, when given) with nobody reading what
// arrives, and requires the server to take the subscription: a try of a subscribe grant.
func (c *Conn) Takes(subject, queue string) (*nats.Subscription, error) {
	return c.taken(c.NC.QueueSubscribe(subject, queue, nop))
}

// Answer is how a tool server the tries run answers: its user, then the call's body, so a caller
// can tell the tool's answer from anything else arriving at its reply.
func (c *Conn) Answer(m *nats.Msg) { m.Respond([]byte(c.User + Answers + string(m.Data))) }

// Answers joins the serving user's name and the body it answers.
const Answers = " answers "

// CallsAndIsAnswered calls a tool with body and requires an answer its server made with Answer.
func (c *Conn) CallsAndIsAnswered(tool, body string) error {
	reply, err := c.NC.Request(tool, []byte(body), Wait)
	if err != nil {
		return fmt.Errorf("%s calling %s: %v (violations: %v)", c.User, tool, err, c.Seen())
	}
	if !strings.HasSuffix(string(reply.Data), Answers+body) {
		return fmt.Errorf("%s called %s and got %q, not the tool's answer", c.User, tool, reply.Data)
	}
	return c.SawNoViolation()
}

// RequestsWithReply publishes a request the user is allowed to make, with a reply subject of its
// choosing, and requires the server to have refused it nothing.
func (c *Conn) RequestsWithReply(subject, reply, body string) error {
	if err := c.NC.PublishRequest(subject, reply, []byte(body)); err != nil {
		return err
	}
	return c.SawNoViolation()
}

// LastMessage reads the newest message on subject in stream as a user allowed the API, or nil.
func (c *Conn) LastMessage(ctx context.Context, stream, subject string) (*jetstream.RawStreamMsg, error) {
	s, err := c.JS.Stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	m, err := s.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	return m, err
}

// Meets waits for the server's asynchronous refusal want on this connection (a limit's).
func (c *Conn) Meets(want error, wait time.Duration) error {
	if err := c.NC.Flush(); err != nil && !errors.Is(err, want) {
		return err
	}
	deadline := time.Now().Add(wait)
	for {
		c.mu.Lock()
		met := slices.ContainsFunc(c.others, func(err error) bool { return errors.Is(err, want) })
		c.mu.Unlock()
		if met || errors.Is(c.NC.LastError(), want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server did not refuse %s with %q within %s (violations: %v)", c.User, want, wait, c.Seen())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Receives requires the wanted body to arrive on sub within wait.
func Receives(sub *nats.Subscription, want string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		m, err := sub.NextMsg(time.Until(deadline))
		if err != nil {
			return fmt.Errorf("%q never arrived on %s: %v", want, sub.Subject, err)
		}
		if string(m.Data) == want {
			return nil
		}
	}
}

// ReceivesNothing requires nothing to arrive on sub within wait. Called after a refusal was
// already proven by its violation, so a short wait only catches a message the server let through
// anyway.
func ReceivesNothing(sub *nats.Subscription, wait time.Duration) error {
	if m, err := sub.NextMsg(wait); err == nil {
		return fmt.Errorf("%q arrived on %s", m.Data, sub.Subject)
	}
	return nil
}
