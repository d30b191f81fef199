package principal

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A Try is one publish or subscription made to learn whether the server refuses it.
type Try struct {
	Op      Op
	Subject string
	// Queue makes a subscription one in this queue group.
	Queue string
	// Body and Reply are a publish's; an empty Body sends an inert one (Inert).
	Body, Reply string
}

func (t Try) String() string {
	switch {
	case t.Op == Publish:
		return "publish " + t.Subject
	case t.Queue != "":
		return "subscribe " + t.Subject + " in queue group " + t.Queue
	}
	return "subscribe " + t.Subject
}

// violation is the server's words for refusing the try.
func (t Try) violation() string {
	if t.Queue != "" {
		return fmt.Sprintf("Permissions Violation for Subscription to %q using queue %q", t.Subject, t.Queue)
	}
	return Violation(t.Op, t.Subject)
}

// Inert marks a publish that no stream stores: it expects a last sequence no stream reaches,
// so a stream capturing the subject answers 10071 "wrong last sequence" and keeps nothing. A try
// on a live bus is sent so: if a hole lets it through, it still lands in no stream.
func Inert() nats.Header {
	return nats.Header{jetstream.ExpectedLastSeqHeader: []string{strconv.FormatUint(^uint64(0), 10)}}
}

// Unrefused makes every try at once — each publish inert unless it has a body of its own, each
// subscription dropped again — and
// returns those the server did not refuse, in the order given. The server answers every try it
// refuses with a violation before the PONG that ends the flush, so once every violation sent
// before it is recorded (RecordedBefore) the rest were let through; wait bounds the wait for a
// connection whose last error says nothing.
func (c *Conn) Unrefused(tries []Try, wait time.Duration) ([]Try, error) {
	c.TakeViolations()
	var subs []*nats.Subscription
	defer func() {
		for _, s := range subs {
			s.Unsubscribe()
		}
	}()
	want := make(map[string][]int, len(tries))
	for i, t := range tries {
		want[t.violation()] = append(want[t.violation()], i)
		switch {
		case t.Op == Publish && t.Body != "":
			if err := c.NC.PublishRequest(t.Subject, t.Reply, []byte(t.Body)); err != nil {
				return nil, err
			}
		case t.Op == Publish:
			if err := c.NC.PublishMsg(&nats.Msg{Subject: t.Subject, Reply: t.Reply, Header: Inert(), Data: []byte("meshc verify")}); err != nil {
				return nil, err
			}
		default:
			s, err := c.NC.QueueSubscribe(t.Subject, t.Queue, nop)
			if err != nil {
				return nil, err
			}
			subs = append(subs, s)
		}
	}
	if err := c.NC.FlushTimeout(flushWait(len(tries))); err != nil {
		return nil, fmt.Errorf("%s: %w", c.User, err)
	}
	last := c.NC.LastError()
	refused := make([]bool, len(tries))
	left := len(tries)
	deadline := time.Now().Add(wait)
	for left > 0 && time.Now().Before(deadline) {
		// Taken after the check: once every violation before the flush is recorded, this
		// round's take holds the last of them, and the rest were let through.
		settled := c.RecordedBefore(last)
		for _, v := range c.TakeViolations() {
			// The server's words follow nats.go's prefix: "nats: permissions violation: <words>".
			_, words, _ := strings.Cut(v, ": permissions violation: ")
			for _, i := range want[words] {
				if !refused[i] {
					refused[i] = true
					left--
				}
			}
			delete(want, words)
		}
		if settled {
			break
		}
		if left > 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	var out []Try
	for i, t := range tries {
		if !refused[i] {
			out = append(out, t)
		}
	}
	return out, nil
}

// flushWait bounds the flush after n tries: a server busy with many principals' tries answers
// each flush late, not never.
func flushWait(n int) time.Duration { return 30*time.Second + time.Duration(n)*time.Millisecond }

// PublishesInert sends an inert publish on subject as a request and returns the stream that
// answered it ("" when nothing did: no stream captures the subject), requiring no violation. A
// stream's answer proves the grant and, across accounts, the import that carried it there and
// the answer back; nothing is stored.
func (c *Conn) PublishesInert(subject string, wait time.Duration) (stream string, err error) {
	// A request made by hand, so that a refusal is said at the flush: the server never answers
	// a publish it refused, and a request left to wait waited out its whole wait.
	sub, err := c.NC.SubscribeSync(c.NC.NewInbox())
	if err != nil {
		return "", fmt.Errorf("%s: %w", c.User, err)
	}
	defer sub.Unsubscribe()
	if err := c.NC.PublishMsg(&nats.Msg{Subject: subject, Reply: sub.Subject, Header: Inert(), Data: []byte("meshc verify")}); err != nil {
		return "", fmt.Errorf("%s publishing %s: %w", c.User, subject, err)
	}
	if err := c.NC.FlushTimeout(flushWait(1)); err != nil {
		return "", fmt.Errorf("%s: %w", c.User, err)
	}
	if c.untaken() != nil {
		return "", c.SawNoViolation()
	}
	m, err := sub.NextMsg(wait)
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) {
		return "", c.SawNoViolation()
	}
	if err != nil {
		return "", fmt.Errorf("%s publishing %s: %v (violations: %v)", c.User, subject, err, c.Seen())
	}
	var ack struct {
		Stream string              `json:"stream"`
		Error  *jetstream.APIError `json:"error"`
	}
	if json.Unmarshal(m.Data, &ack) != nil || ack.Stream == "" {
		// Something that is not a stream answered: the subject reaches a responder.
		return "", c.SawNoViolation()
	}
	// A replicated stream answers 10164, the same refusal.
	if ack.Error == nil || (ack.Error.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence && ack.Error.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		return ack.Stream, fmt.Errorf("%s published %s, which stream %s answered %s, not with the refusal of an inert publish (%v)", c.User, subject, ack.Stream, m.Data, ack.Error)
	}
	return ack.Stream, c.SawNoViolation()
}
