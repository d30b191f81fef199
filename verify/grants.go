package verify

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/principal"
)

// Subject patterns the proof tells tries apart by: each is built by the compiler's own
// derivation, so a subject is classified by the same names it was granted by.
var (
	anyAck       = compiler.Ack("*", "*")
	anyNewerAck  = compiler.AckV2("*", "*")
	anyTool      = compiler.Tool("*", "*")
	anyHeartbeat = compiler.Heartbeat("*")
)

// instance is a subject a grant admits: each wildcard token `0`, which no name the mesh derives
// can be (names begin with a letter), so a try on an instance reaches nobody real.
func instance(subject string) string {
	t := strings.Split(subject, ".")
	for i, x := range t {
		if x == "*" || x == ">" {
			t[i] = "0"
		}
	}
	return strings.Join(t, ".")
}

// served are the tools a throwaway server's proof serves, as every instance of each serving module
// in its module's queue group, on connections of their own: every call is counted, so the flow
// class can require each served once.
type served struct {
	mu sync.Mutex
	// log is every call received, in order; byBody the same by body.
	log    []call
	byBody map[string][]received
	conns  []*principal.Conn
}

// call is a call a tool's server received: its body and what it arrived with.
type call struct {
	received
	body string
}

func newServed() *served { return &served{byBody: map[string][]received{}} }

// Markers a call's body may start with, for the attacks that need a tool's server as an
// accomplice: an answer with an empty body (a purge request, aimed at the JetStream API), and an
// answer that forges a caller (aimed at a second tool).
const (
	purgeMarker   = "meshc verify purge "
	colludeMarker = "meshc verify collude "
)

// serveTools serves every tool the catalogue says a running module serves, as each of its
// instances' serving users (compiler.ServingUser): the module's own users no longer subscribe its
// tools.
func (p *proof) serveTools() error {
	for _, t := range p.expected.Tools {
		for _, u := range p.expected.Users {
			if u.Kind != compiler.KindServer || u.Module != t.Module || p.as[u.Name] == nil {
				continue
			}
			c, err := p.dial(u.Name, p.as[u.Name])
			if err != nil {
				return err
			}
			p.served.conns = append(p.served.conns, c)
			p.try(Grant, 1)
			if _, err := c.Serves(t.Subject, t.Queue, p.served.answer(c)); err != nil {
				p.fail(Grant, u.Name, compiler.QueueGrant(t.Subject, t.Queue), p.golden.allowedBy(u.Name, false, compiler.QueueGrant(t.Subject, t.Queue)),
					"%s serves %s in queue group %s, but the server refused the subscription: %v", u.Name, t.Subject, t.Queue, err)
			}
		}
	}
	return nil
}

func (s *served) answer(c *principal.Conn) func(*nats.Msg) {
	return func(m *nats.Msg) {
		body := string(m.Data)
		s.mu.Lock()
		r := received{m.Subject, m.Reply, m.Header}
		s.log = append(s.log, call{r, body})
		s.byBody[body] = append(s.byBody[body], r)
		s.mu.Unlock()
		switch {
		case strings.HasPrefix(body, purgeMarker):
			m.Respond(nil)
		case strings.HasPrefix(body, colludeMarker):
			// The accomplice: an answer naming another caller, with a reply of its own so the
			// answer it becomes is a call as a real one is (docs/nats.md, "Who called a tool").
			forged, _ := strings.CutPrefix(body, colludeMarker)
			answer := nats.NewMsg(m.Reply)
			answer.Header.Set(compiler.RequestInfoHeader, `{"acc":"`+forged+`"}`)
			answer.Reply = c.NC.NewInbox()
			answer.Data = []byte(colludeMarker + forged)
			c.NC.PublishMsg(answer)
		default:
			c.Answer(m)
		}
	}
}

// received are the calls with body, in order.
func (s *served) received(body string) []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.byBody[body])
}

func (s *served) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.log)
}

// since are the calls received after the first n.
func (s *served) since(n int) []call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log[n:])
}

func (s *served) close() {
	for _, c := range s.conns {
		c.Close()
	}
}

// grants uses every grant the catalogue derives, as its principal, in the form the server
// enforces (each user's minimised permissions): a subject a wider grant covers is tried through
// the wider one. A grant is proven by its try working and the connection seeing no violation.
func (p *proof) grants() {
	pulls, infos := map[string]compiler.Consumer{}, map[string]compiler.Consumer{}
	for _, c := range p.expected.Consumers {
		pulls[compiler.PullNext(c.Stream, compiler.ConsumerName(c.Config))] = c
		infos[compiler.ConsumerInfo(c.Stream, compiler.ConsumerName(c.Config))] = c
	}
	p.each(p.connected(), func(u compiler.User) {
		c := p.conns[u.Name]
		for _, s := range u.Publish.Allow {
			p.usePublish(c, &u, s, pulls, infos)
		}
		for _, s := range u.Subscribe.Allow {
			p.useSubscribe(c, &u, s)
		}
	})
	if p.live {
		p.said(Grant, "%d grants used inert: publishes answered by their stream and storing nothing, pulls past their expiry, consumer info, acks of no delivery, subscriptions", p.tried[Grant.ID].Tries)
		return
	}
	p.said(Grant, "%d grants used: publishes answered by their stream, tool calls answered from the module's queue group, pulls with expiry, consumer info, acks in both forms, subscriptions", p.tried[Grant.ID].Tries)
}

// refusedGrant records a grant the server did not honour.
func (p *proof) refusedGrant(u *compiler.User, publish bool, subject string, err error) {
	action, verb := compiler.Subscribe, "subscribe"
	if publish {
		action, verb = compiler.Publish, "publish"
	}
	because := ""
	if why := u.Why(action, subject); len(why) > 0 {
		because = fmt.Sprintf(" (%s, %s)", why[0].Means, why[0].Source)
	}
	p.fail(Grant, u.Name, subject, "", "%s may %s %s%s, but the try failed: %v; the golden files should grant it: run `meshc emit`",
		u.Name, verb, subject, because, err)
}

func (p *proof) usePublish(c *principal.Conn, u *compiler.User, subject string, pulls, infos map[string]compiler.Consumer) {
	c.TakeViolations()
	switch {
	case compiler.Covers(anyAck, subject) || compiler.Covers(anyNewerAck, subject):
		// An ack of no delivery: `+WPI` for a sequence no stream holds changes nothing, and
		// proves the grant (the flow class acknowledges real deliveries).
		p.try(Grant, 1)
		if err := c.PublishesLive(instance(subject), "+WPI"); err != nil {
			p.refusedGrant(u, true, subject, err)
		}
	case compiler.Covers(subject, compiler.JetStreamInfo):
		p.try(Grant, 1)
		if err := p.request(c, compiler.JetStreamInfo, nil); err != nil {
			p.refusedGrant(u, true, subject, err)
		}
	case pulls[subject].Stream != "":
		p.try(Grant, 1)
		if err := p.pull(c, pulls[subject]); err != nil {
			p.refusedGrant(u, true, subject, err)
		}
	case infos[subject].Stream != "":
		p.try(Grant, 1)
		if err := p.request(c, subject, nil); err != nil {
			p.refusedGrant(u, true, subject, err)
		}
	case compiler.Covers(anyTool, subject):
		if p.live {
			return // a call runs the tool
		}
		for _, t := range p.expected.Tools {
			if !compiler.Covers(subject, t.Subject) {
				continue
			}
			p.try(Grant, 1)
			body := fmt.Sprintf("meshc verify: %s calls %s", u.Name, t.Subject)
			if err := c.CallsAndIsAnswered(t.Subject, body); err != nil {
				p.refusedGrant(u, true, t.Subject, err)
				continue
			}
			p.mu.Lock()
			p.calls = append(p.calls, made{user: u.Name, tool: t.Subject, body: body})
			p.mu.Unlock()
		}
	case compiler.Covers(compiler.ServiceReplies, subject):
		// A serving user's answers across an import (`_R_.>`): the tool calls the grant class
		// makes are answered through it; here the grant itself, on a reply the server gives no
		// request (each is `_R_.<prefix>.<random>`), so the publish reaches nobody, on a live bus
		// too. A serving user has no inbox, so it makes no request.
		p.try(Grant, 1)
		if err := c.PublishesLive(instance(subject), "meshc verify"); err != nil {
			p.refusedGrant(u, true, subject, err)
		}
	case compiler.Covers(anyHeartbeat, subject):
		if p.live {
			return // the controller would take it for the machine's
		}
		p.try(Grant, 1)
		if err := c.PublishesLive(subject, "meshc verify"); err != nil {
			p.refusedGrant(u, true, subject, err)
		}
	default:
		p.try(Grant, 1)
		want := p.streamOf(instance(subject))
		got, err := c.PublishesInert(instance(subject), principal.Wait)
		switch {
		case err != nil:
			p.refusedGrant(u, true, subject, err)
		case got != want && want != "":
			p.failImport(Grant, u.Name, instance(subject),
				"%s publishing %s reached no stream, where %s stores it: with an account per module, the golden files lack the import that carries it into the mesh's account; run `meshc emit`", u.Name, subject, want)
		}
	}
}

// streamOf is the stream of the catalogue that stores subject, "" when none does.
func (p *proof) streamOf(subject string) string {
	for _, s := range p.expected.Streams {
		for _, x := range s.Config.Subjects {
			if compiler.Covers(x, subject) {
				return s.Config.Name
			}
		}
	}
	return ""
}

// request makes a JetStream API request and requires an answer that is no API error.
func (p *proof) request(c *principal.Conn, subject string, body []byte) error {
	m, err := c.NC.Request(subject, body, principal.Wait)
	if err != nil {
		return fmt.Errorf("%v (violations: %v)", err, c.Seen())
	}
	var answer struct {
		Error *jetstream.APIError `json:"error"`
	}
	if json.Unmarshal(m.Data, &answer) == nil && answer.Error != nil {
		return answer.Error
	}
	return c.SawNoViolation()
}

// pull pulls the consumer once. On a throwaway server: a pull with expiry, answered by a
// delivery (acknowledged) or the server's 408 once it expires. On a live bus: a pull asking to
// wait past the consumer's max_expires, which the server refuses (409) delivering nothing.
func (p *proof) pull(c *principal.Conn, cons compiler.Consumer) error {
	expires := 50 * time.Millisecond
	if p.live {
		max := p.golden.consumer(cons.Stream, compiler.ConsumerName(cons.Config)).Config.MaxRequestExpires
		if max <= 0 {
			return nil // with no max_expires, a pull past it would wait, and deliver
		}
		expires = max + time.Minute
	}
	reply := c.NC.NewInbox()
	sub, err := c.NC.SubscribeSync(reply)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	body := fmt.Sprintf(`{"batch":1,"expires":%d}`, expires)
	if err := c.NC.PublishRequest(compiler.PullNext(cons.Stream, compiler.ConsumerName(cons.Config)), reply, []byte(body)); err != nil {
		return err
	}
	m, err := sub.NextMsg(principal.Wait + expires)
	if err != nil {
		return fmt.Errorf("no answer to a pull with expiry: %v (violations: %v)", err, c.Seen())
	}
	status := m.Header.Get("Status")
	switch {
	case p.live && status != "409":
		return fmt.Errorf("a pull asking past max_expires was answered %q %q, not refused", status, m.Header.Get("Description"))
	case status == "":
		// A delivery: acknowledged, so the consumer is left as it was found.
		if err := m.AckSync(nats.AckWait(principal.Wait)); err != nil {
			return fmt.Errorf("acknowledging what a pull delivered: %v (violations: %v)", err, c.Seen())
		}
	case !p.live && status != "408" && status != "404":
		return fmt.Errorf("a pull with expiry was answered %s %q", status, m.Header.Get("Description"))
	}
	return c.SawNoViolation()
}

// consumer is golden/plan.json's consumer of a stream by name, or the zero consumer.
func (g *golden) consumer(stream, name string) compiler.Consumer {
	for _, c := range g.plan.Consumers {
		if c.Stream == stream && compiler.ConsumerName(c.Config) == name {
			return c
		}
	}
	return compiler.Consumer{}
}

func (p *proof) useSubscribe(c *principal.Conn, u *compiler.User, permission string) {
	subject, queue := compiler.SplitQueue(permission)
	if queue != "" {
		// A subscription in a tool's queue group takes a share of its calls. On a throwaway
		// server every served tool is served in its group by each of its module's instances
		// (serveTools), which tries this grant; a second member here would swallow calls the
		// grant class makes. On a live bus it would take a share of live calls.
		return
	}
	c.TakeViolations()
	p.try(Grant, 1)
	sub, err := c.Takes(subject, queue)
	if err != nil {
		p.refusedGrant(u, false, permission, err)
		return
	}
	sub.Unsubscribe()
}
