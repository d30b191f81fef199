package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/principal"
)

// message is one message the flow class published, for whoever must read it.
type message struct {
	user, stream, subject, body string
}

// flows proves every flow the catalogue declares, on the throwaway server: every principal
// publishes what it may store (its events, a held seat's events, work for the seats it uses, a
// machine's report, an enrolment request), and every pull consumer the catalogue derives is
// read to its end by its owner, each delivery acknowledged twice. A consumer must deliver every
// message its filters admit and nothing else; then the controller answers each enrolment into
// the address it carries, each machine receives its declaration pushed, the controller hears
// every heartbeat, and every tool call the grant class made was served exactly once.
func (p *proof) flows() {
	if p.live {
		p.skip(Flow, "a flow publishes real events, work and declarations, which a live bus's consumers would take; run meshc verify without --server to prove the flows on a throwaway server")
		return
	}
	ctx, cancel := p.timeout()
	defer cancel()
	var sent []message
	for _, u := range p.connected() {
		c := p.conns[u.Name]
		for _, s := range u.Publish.Allow {
			if strings.ContainsAny(s, "*>") {
				continue
			}
			stream := p.streamOf(s)
			if stream == "" || stream == compiler.NodesStream || compiler.Covers(anyHeartbeat, s) {
				continue // not stored, or the controller's declarations: below
			}
			body := fmt.Sprintf("meshc verify: %s publishes %s", u.Name, s)
			if compiler.Covers(compiler.Enrolment("*"), s) {
				b, _ := json.Marshal(map[string]string{"answer": c.NC.NewInbox()})
				body = string(b)
			}
			p.try(Flow, 1)
			if err := c.PublishesAndIsStored(ctx, s, stream, body); err != nil {
				p.fail(Flow, u.Name, s, "", "%v", err)
				continue
			}
			sent = append(sent, message{u.Name, stream, s, body})
		}
	}
	read := 0
	var enrolments []string
	var mu sync.Mutex
	parallel(len(p.expected.Consumers), func(i int) {
		cons := p.expected.Consumers[i]
		if cons.Config.DeliverSubject != "" {
			return
		}
		name := compiler.ConsumerName(cons.Config)
		owner := p.ownerOf(cons)
		if owner == "" {
			return // a seat nobody running holds: its work waits
		}
		var want []message
		for _, m := range sent {
			if m.stream == cons.Stream && admits(cons, m.subject) {
				want = append(want, m)
			}
		}
		p.try(Flow, 1)
		ctx, cancel := context.WithTimeout(p.ctx, 2*time.Minute)
		got, err := p.conns[owner].Drains(ctx, cons.Stream, name)
		cancel()
		if err != nil {
			p.failPlan(owner, cons, "", "%v", err)
			return
		}
		for _, m := range want {
			if !slices.Contains(got[m.subject], m.body) {
				p.failPlan(owner, cons, m.subject, "%s published %s and %s stored it, but consumer %s/%s never delivered it to %s, whose catalogue consumes it: the consumer's filters in %s are narrower than the manifests",
					m.user, m.subject, m.stream, cons.Stream, name, owner, emit.PlanFile)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for subject, bodies := range got {
			if !admits(cons, subject) {
				p.failPlan(owner, cons, subject, "consumer %s/%s delivered %s to %s, which its catalogue does not consume: the consumer's filters in %s are wider than the manifests",
					cons.Stream, name, subject, owner, emit.PlanFile)
			}
			if name == compiler.EnrolmentsConsumer {
				enrolments = append(enrolments, bodies...)
			}
			read += len(bodies)
		}
	})
	p.answerEnrolments(enrolments, sent)
	declared := p.declarations()
	beats := p.heartbeats()
	calls := 0
	for _, c := range p.calls {
		calls++
		if n := len(p.served.received(c.body)); n != 1 {
			p.fail(Flow, c.user, c.tool, "", "%s called %s once and it was served %d times: a call must reach one instance of its module (its queue group)", c.user, c.tool, n)
		}
	}
	p.said(Flow, "%d messages published, %d deliveries read and acknowledged twice by their consumers' owners, %d declarations pushed, %d heartbeats heard, %d tool calls each served once",
		len(sent), read, declared, beats, calls)
}

// admits reports whether a consumer's filters, as the catalogue derives them, admit subject.
func admits(c compiler.Consumer, subject string) bool {
	filters := c.Config.FilterSubjects
	if c.Config.FilterSubject != "" {
		filters = append(filters, c.Config.FilterSubject)
	}
	if len(filters) == 0 {
		return true
	}
	return slices.ContainsFunc(filters, func(f string) bool { return compiler.Covers(f, subject) })
}

// ownerOf is who reads a pull consumer: its one user, or for a seat's holder consumer the first
// connected principal granted its pulls; "" when none is connected.
func (p *proof) ownerOf(c compiler.Consumer) string {
	if c.User != "" {
		if p.conns[c.User] != nil {
			return c.User
		}
		return ""
	}
	next := compiler.PullNext(c.Stream, compiler.ConsumerName(c.Config))
	for _, u := range p.connected() {
		if slices.Contains(u.Publish.Allow, next) {
			return u.Name
		}
	}
	return ""
}

// failPlan records a flow failure of a consumer, placed at the consumer in plan.json.
func (p *proof) failPlan(user string, c compiler.Consumer, subject, format string, args ...any) {
	p.failInPlan(Flow, user, subject, c.Stream+"/"+compiler.ConsumerName(c.Config), format, args...)
}

// planLine is the line of plan.json naming a stream (consumer "") or a consumer of it, 0 when
// there is none.
func (g *golden) planLine(stream, consumer string) int {
	inStream := false
	for i, l := range strings.Split(g.planText, "\n") {
		switch {
		case consumer == "" && strings.Contains(l, `"name": "`+stream+`"`):
			return i + 1
		case strings.Contains(l, `"stream_name": "`+stream+`"`):
			inStream = true
		case inStream && strings.Contains(l, `"name": "`+consumer+`"`):
			return i + 1
		}
	}
	return 0
}

// answerEnrolments has the controller answer each enrolment request it read at the address the
// request carries, and the enrolling machine receive it (docs/nats.md, "A stream answers the
// requests it captures").
func (p *proof) answerEnrolments(read []string, sent []message) {
	controller := p.controller()
	if controller == nil {
		return
	}
	for _, m := range sent {
		if !slices.Contains(read, m.body) || !compiler.Covers(compiler.Enrolment("*"), m.subject) {
			continue
		}
		var asked struct{ Answer string }
		json.Unmarshal([]byte(m.body), &asked)
		p.try(Flow, 1)
		answers, err := p.conns[m.user].Subscribes(asked.Answer)
		if err != nil {
			p.fail(Flow, m.user, asked.Answer, "", "%v", err)
			continue
		}
		welcome := "meshc verify: welcome " + m.user
		err = controller.PublishesLive(asked.Answer, welcome)
		if err == nil {
			err = principal.Receives(answers, welcome, principal.Wait)
		}
		answers.Unsubscribe()
		if err != nil {
			p.fail(Flow, compiler.ControllerUser, asked.Answer, "", "the controller answering %s's enrolment at the address it gave: %v", m.user, err)
		}
	}
}

// declarations has the controller declare each machine, and each machine receive its declaration
// pushed to its delivery subject and acknowledge it twice.
func (p *proof) declarations() int {
	controller := p.controller()
	if controller == nil {
		return 0
	}
	ctx, cancel := p.timeout()
	defer cancel()
	n := 0
	for _, cons := range p.expected.Consumers {
		node := p.conns[cons.User]
		if cons.Config.DeliverSubject == "" || node == nil {
			continue
		}
		p.try(Flow, 1)
		sub, err := node.Subscribes(cons.Config.DeliverSubject)
		if err != nil {
			p.fail(Flow, cons.User, cons.Config.DeliverSubject, "", "%v", err)
			continue
		}
		body := "meshc verify: a declaration for " + cons.User
		declared := cons.Config.FilterSubject
		if err := controller.PublishesAndIsStored(ctx, declared, cons.Stream, body); err != nil {
			p.fail(Flow, compiler.ControllerUser, declared, "", "%v", err)
		} else if _, err := node.ReceivesPushedAndAcksTwice(sub, body); err != nil {
			p.failPlan(cons.User, cons, declared, "%v", err)
		} else {
			n++
		}
		sub.Unsubscribe()
	}
	return n
}

// heartbeats has every machine beat its heart and whoever subscribes heartbeats hear each.
func (p *proof) heartbeats() int {
	var listeners []*nats.Subscription
	defer func() {
		for _, s := range listeners {
			s.Unsubscribe()
		}
	}()
	byListener := map[*nats.Subscription]string{}
	for _, u := range p.connected() {
		for _, s := range u.Subscribe.Allow {
			if compiler.Covers(s, compiler.Heartbeat("x")) || compiler.Covers(anyHeartbeat, s) {
				sub, err := p.conns[u.Name].Subscribes(s)
				if err != nil {
					p.fail(Flow, u.Name, s, "", "%v", err)
					continue
				}
				listeners = append(listeners, sub)
				byListener[sub] = u.Name
			}
		}
	}
	n := 0
	for _, u := range p.connected() {
		for _, s := range u.Publish.Allow {
			if !compiler.Covers(anyHeartbeat, s) || strings.ContainsAny(s, "*>") {
				continue
			}
			body := "meshc verify: " + u.Name + " beats"
			p.try(Flow, 1)
			if err := p.conns[u.Name].PublishesLive(s, body); err != nil {
				p.fail(Flow, u.Name, s, "", "%v", err)
				continue
			}
			for _, l := range listeners {
				if !compiler.Covers(l.Subject, s) {
					continue
				}
				if err := principal.Receives(l, body, principal.Wait); err != nil {
					p.fail(Flow, byListener[l], s, "", "%s never heard %s's heartbeat: %v", byListener[l], u.Name, err)
				}
			}
			n++
		}
	}
	return n
}
