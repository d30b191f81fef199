package proof

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/testwait"
)

// What a module's instances can do to each other. With an account per principal each instance
// has an account of its own, and the module's tools are served from the module's account by one
// serving user per instance (docs/nats.md, "An account per instance, the tools apart"): an
// answer to anything an instance asks lands in its own account, where no sibling listens. Before,
// a module's instances shared the module's account, so an answer an instance steered — through
// any request it may make, its own call to its own tool answered by itself, or a call to a
// colluding module's tool — was delivered to whatever a sibling subscribed there, and followed
// the imports of the sibling's consumer. These are the attacks, each by relay on anchor against
// its sibling on laptop (testdata/instances.txtar: relay runs on three machines, consumes
// source's event through a consumer per machine, serves ask and calls it, and calls peer's tool):
// aimed at the sibling's pull, its consumer info, its acks and its inbox, to read its messages,
// park them, acknowledge them away, or feed its pulls what it never stored.
//
// Each attack runs in both isolations on a fresh bus. Blocked means the sibling's consumer
// delivered nothing and the attacker received nothing; where the server refuses the request
// itself, its Permissions Violation is required too. In one account they land: a requester
// chooses where the answer goes (docs/nats.md, "A requester chooses where the answer goes").
func TestASiblingInstanceAgainstItsSiblingsConsumer(t *testing.T) {
	t.Parallel()
	for _, a := range siblingAttacks {
		for _, isolation := range inLoop(isolations) {
			t.Run(a.name+"/"+isolation, func(t *testing.T) {
				t.Parallel()
				s := startSiblings(t, isolation)
				s.isolated = isolation == catalogue.IsolationPerModule
				lands := a.landsShared
				if isolation == catalogue.IsolationPerModule {
					lands = a.landsIsolated
				}
				a.attack(t, s)
				s.judge(t, lands, a.reads)
			})
		}
	}
}

// siblingAttack is one attack and where it lands.
type siblingAttack struct {
	name                       string
	landsShared, landsIsolated bool
	// reads is true when a landing attack delivers the sibling's messages to the attacker (or
	// its accomplice), not only parks them.
	reads  bool
	attack func(t *testing.T, s *siblings)
}

const (
	victimConsumer = "laptop_relay"
	victimNext     = "$JS.API.CONSUMER.MSG.NEXT.EVENTS." + victimConsumer
	ownNext        = "$JS.API.CONSUMER.MSG.NEXT.EVENTS.anchor_relay"
)

var siblingAttacks = []siblingAttack{
	{
		// The answer comes back through the pull export and would cross the same export again
		// to reach the sibling's pull: the server drops it as a cycle. In one account
		// JetStream's delivery lands on the sibling's pull subject as a pull of its own,
		// answered into the attacker's ack subject: the sibling's message is parked.
		name: "its own pull answered into the sibling's pull", landsShared: true, landsIsolated: false,
		attack: func(t *testing.T, s *siblings) {
			s.attacker.requestsWithReply(t, ownNext, victimNext, `{"batch":1}`)
		},
	},
	{
		name: "its consumer info answered into the sibling's pull",
		attack: func(t *testing.T, s *siblings) {
			s.attacker.requestsWithReply(t, "$JS.API.CONSUMER.INFO.EVENTS.anchor_relay", victimNext, `{"batch":1}`)
		},
	},
	{
		name: "its event's PubAck answered into the sibling's pull",
		attack: func(t *testing.T, s *siblings) {
			s.attacker.requestsWithReply(t, "mesh.mod.relay.event.moved", victimNext, `{"batch":1}`)
		},
	},
	{
		name: "its own ack's confirmation answered into the sibling's pull",
		attack: func(t *testing.T, s *siblings) {
			m := s.attacker.pullsOne(t, "anchor_relay")
			s.attacker.requestsWithReply(t, m.Reply, victimNext, "+ACK")
		},
	},
	{
		// The ack's answer comes back through the export the pull crosses too (the mesh's
		// account exports every $JS subject as one service): dropped as a cycle. With the acks
		// exported apart it crossed, and JetStream parked the sibling's next message in the
		// attacker's ack subject; in one account it still does.
		name: "its own ack's +NXT answered into the sibling's pull", landsShared: true, landsIsolated: false,
		attack: func(t *testing.T, s *siblings) {
			m := s.attacker.pullsOne(t, "anchor_relay")
			s.attacker.requestsWithReply(t, m.Reply, victimNext, `+NXT {"batch":1}`)
		},
	},
	{
		name: "a call to another module's tool answered into the sibling's pull",
		attack: func(t *testing.T, s *siblings) {
			b := s.bus
			b.connect(t, "serve.anchor.peer").serves(t, "mesh.mod.peer.tool.peek")
			s.attacker.requestsWithReply(t, "mesh.mod.peer.tool.peek", victimNext, `{"batch":1}`)
		},
	},
	{
		name: "the sibling's pull, info and acks published directly",
		attack: func(t *testing.T, s *siblings) {
			a := s.attacker
			a.isRefusedRequesting(t, victimNext)
			a.isRefusedRequesting(t, "$JS.API.CONSUMER.INFO.EVENTS."+victimConsumer)
			v1 := fmt.Sprintf("$JS.ACK.EVENTS.%s.1.%d.1.1.0", victimConsumer, s.pending.Sequence.Stream)
			a.isRefusedPublishing(t, v1)
			a.isRefusedPublishing(t, fmt.Sprintf("$JS.ACK._.HASH.EVENTS.%s.1.%d.1.1.0", victimConsumer, s.pending.Sequence.Stream))
		},
	},
	{
		// A client may never give an ack subject (or an _R_ subject) as its reply: the server
		// reserves them, so nothing a request provokes can be aimed at an ack.
		name: "any request with the sibling's ack as its reply",
		attack: func(t *testing.T, s *siblings) {
			ack := fmt.Sprintf("$JS.ACK.EVENTS.%s.1.%d.1.1.0", victimConsumer, s.pending.Sequence.Stream)
			if err := s.attacker.nc.PublishRequest(ownNext, ack, []byte(`{"batch":1,"no_wait":true}`)); err != nil {
				t.Fatal(err)
			}
			s.attacker.violated(t, fmt.Sprintf("Permissions Violation for Publish with Reply of %q", ack), "a reply on "+ack)
			if err := s.attacker.nc.PublishRequest("mesh.mod.relay.tool.ask", ack, nil); err != nil {
				t.Fatal(err)
			}
			s.attacker.violated(t, fmt.Sprintf("Permissions Violation for Publish with Reply of %q", ack), "a reply on "+ack)
		},
	},
	{
		// A module that calls its own tool: the attacker's machine holds its instance's user and
		// its serving user, and no sibling serves on this bus, so the call is the attacker's to
		// answer. Its serving user answers at the reply the call carries, with a reply of its
		// own: in one account that reply is the sibling's pull, which allow_responses lets it
		// publish on, and JetStream delivers the sibling's messages to the attacker. With an
		// account per principal the call crossed an import and carries the server's `_R_`
		// reply: the answer goes back into the attacker's own account, where the sibling's pull
		// is nothing.
		name: "a call to its own module's tool, answered by itself into the sibling's pull", landsShared: true, landsIsolated: false, reads: true,
		attack: func(t *testing.T, s *siblings) {
			a := s.attacker
			inbox := a.nc.NewInbox()
			stolen := a.subscribes(t, inbox)
			server := s.bus.connect(t, "serve.anchor.relay")
			if _, err := server.nc.QueueSubscribe("mesh.mod.relay.tool.ask", "relay", func(m *nats.Msg) {
				server.nc.PublishRequest(m.Reply, inbox, []byte(`{"batch":5}`))
			}); err != nil {
				t.Fatal(err)
			}
			server.sawNoViolation(t)
			a.requestsWithReply(t, "mesh.mod.relay.tool.ask", victimNext, "steer")
			for {
				m, err := stolen.NextMsg(time.Second)
				if err != nil {
					break
				}
				s.stolen = append(s.stolen, m)
			}
			server.sawNoViolation(t)
		},
	},
	{
		// With an accomplice: the server of a tool the attacker may call answers into the
		// attacker's account, on the reply the attacker chose, with a reply of its own. When the
		// instances shared an account the sibling's messages went to the accomplice (which could
		// not ack them: their acks were imported into relay's account only); with an account
		// per instance the sibling's pull is no subject of the attacker's account.
		name: "a colluding server of a tool it calls answers into the sibling's pull", landsShared: true, landsIsolated: false, reads: true,
		attack: func(t *testing.T, s *siblings) {
			peer := s.bus.connect(t, "serve.anchor.peer")
			// The accomplice reads with a user of its own machine that may subscribe an inbox.
			reader := s.bus.connect(t, "mod.anchor.peer")
			inbox := reader.nc.NewInbox()
			stolen := reader.subscribes(t, inbox)
			if _, err := peer.nc.QueueSubscribe("mesh.mod.peer.tool.peek", "peer", func(m *nats.Msg) {
				peer.nc.PublishRequest(m.Reply, inbox, []byte(`{"batch":5}`))
			}); err != nil {
				t.Fatal(err)
			}
			peer.sawNoViolation(t)
			s.attacker.requestsWithReply(t, "mesh.mod.peer.tool.peek", victimNext, "steer")
			if m, err := stolen.NextMsg(3 * time.Second); err == nil {
				s.stolen = append(s.stolen, m)
			}
		},
	},
}

// siblings is a bus running testdata/instances.txtar with events waiting on the sibling's
// consumer and one of them delivered to the sibling and not yet acknowledged.
type siblings struct {
	bus        *bus
	controller *client
	attacker   *client
	victim     *client
	// pending is the message the sibling holds, unacknowledged.
	pending  *nats.MsgMetadata
	before   *jetstream.ConsumerInfo
	stolen   []*nats.Msg
	isolated bool
}

func startSiblings(t *testing.T, isolation string) *siblings {
	t.Helper()
	b := startBus(t, "testdata/instances.txtar", "", isolation)
	s := &siblings{bus: b, controller: b.connect(t, "mesh-controller"),
		attacker: b.connect(t, "mod.anchor.relay"), victim: b.connect(t, "mod.laptop.relay")}
	source := b.connect(t, "mod.anchor.source")
	for range 4 {
		source.publishesAndIsStored(t, "mesh.mod.source.event.made", "EVENTS")
	}
	held := s.victim.pullsOne(t, victimConsumer)
	md, err := held.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	s.pending = md
	// The consumer's count of what waits can trail the stream by a moment under load.
	testwait.ForNil(t, "the sibling's consumer to hold one message unacknowledged and three waiting", 3*time.Second, func() error {
		s.before = s.controller.consumerInfo(t, "EVENTS", victimConsumer)
		if s.before.NumAckPending != 1 || s.before.NumPending != 3 {
			return fmt.Errorf("it holds %d unacknowledged and %d waiting", s.before.NumAckPending, s.before.NumPending)
		}
		return nil
	})
	return s
}

// judge requires the attack to have landed or been blocked. Landed: the sibling's consumer
// delivered more, or its held message was acknowledged by someone else. Blocked: neither, and
// nothing of the sibling's arrived anywhere the attacker could read it.
func (s *siblings) judge(t *testing.T, lands, reads bool) {
	t.Helper()
	var after *jetstream.ConsumerInfo
	steered := func() bool {
		after = s.controller.consumerInfo(t, "EVENTS", victimConsumer)
		return after.Delivered.Consumer != s.before.Delivered.Consumer || after.AckFloor.Stream != s.before.AckFloor.Stream
	}
	if lands {
		testwait.For(t, "the attack to steer "+victimConsumer+" (docs/nats.md#an-account-per-instance-the-tools-apart)", 3*time.Second, steered)
	} else {
		// The answer had its chance to travel.
		testwait.Never(t, "blocked in this mode, yet "+victimConsumer+" was steered", time.Second, steered)
	}
	if !lands {
		if len(s.stolen) > 0 {
			t.Fatalf("blocked, yet %q arrived for the attacker", s.stolen[0].Data)
		}
		return
	}
	t.Logf("landed: %s delivered %d → %d, awaiting ack %d → %d, ack floor %d → %d; %d of its messages read",
		victimConsumer, s.before.Delivered.Consumer, after.Delivered.Consumer, s.before.NumAckPending, after.NumAckPending,
		s.before.AckFloor.Stream, after.AckFloor.Stream, len(s.stolen))
	if reads && len(s.stolen) == 0 {
		t.Fatalf("the attack steered %s but none of its messages reached the attacker", victimConsumer)
	}
	for _, m := range s.stolen {
		if !strings.HasPrefix(m.Reply, "$JS.ACK.EVENTS."+victimConsumer+".") {
			t.Fatalf("a message arrived that is not the sibling's delivery: %q (reply %q)", m.Data, m.Reply)
		}
	}
}

// pullsOne pulls one message of the user's own consumer on EVENTS and leaves it unacknowledged.
func (c *client) pullsOne(t *testing.T, consumer string) *nats.Msg {
	t.Helper()
	inbox := c.nc.NewInbox()
	sub := c.subscribes(t, inbox)
	defer sub.Unsubscribe()
	if err := c.nc.PublishRequest("$JS.API.CONSUMER.MSG.NEXT.EVENTS."+consumer, inbox, []byte(`{"batch":1,"expires":3000000000}`)); err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(5 * time.Second)
	if err != nil || m.Reply == "" {
		t.Fatalf("%s pulling %s: %v %v (violations: %v)", c.user, consumer, m, err, c.seen())
	}
	return m
}

// TestASiblingInstanceCannotWriteIntoItsSiblingsPullInbox: an instance that knows its sibling's
// pull inbox (nats.go's inboxes are a NUID, predictable once one is seen: docs/nats.md, "Inbox
// prefixes") must not be able to put anything there — a forged event the sibling's Consume hands
// its handler as stored, or a forged "409 Consumer Deleted", which stops Consume for good. When a
// module's instances shared an account, a module calling its own tool granted each instance its
// siblings' inboxes (`_INBOX.mod.*.<module>.>`) to answer those calls, and every answer an
// instance steered landed in the shared account where the sibling's pull inbox is. Each way in,
// in every mode: a plain publish is refused everywhere; the steered answers land in one account
// (a requester chooses where the answer goes there, TestInjections) and nowhere else.
func TestASiblingInstanceCannotWriteIntoItsSiblingsPullInbox(t *testing.T) {
	t.Parallel()
	forged := func(m *nats.Msg) {
		m.Header = nats.Header{"Status": []string{"409"}, "Description": []string{"Consumer Deleted"}}
	}
	for _, mode := range inLoop(modes) {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := startBus(t, "testdata/instances.txtar", "", mode)
			lands := !b.isolated
			for _, way := range []struct {
				name   string
				refuse bool // the server refuses the attacker's publish itself
				write  func(t *testing.T, inbox string)
			}{
				{"published directly", true, func(t *testing.T, inbox string) {
					a := b.connect(t, "mod.anchor.relay")
					m := nats.NewMsg(inbox)
					forged(m)
					if err := a.nc.PublishMsg(m); err != nil {
						t.Fatal(err)
					}
					a.refused(t, "Publish", inbox)
				}},
				{"its own call to its module's tool, answered by its own serving user", false, func(t *testing.T, inbox string) {
					answers(t, b.connect(t, "serve.anchor.relay"), "mesh.mod.relay.tool.ask", forged, func() {
						b.connect(t, "mod.anchor.relay").requestsWithReply(t, "mesh.mod.relay.tool.ask", inbox, "steer")
					})
				}},
				{"a call to a colluding module's tool", false, func(t *testing.T, inbox string) {
					answers(t, b.connect(t, "serve.anchor.peer"), "mesh.mod.peer.tool.peek", forged, func() {
						b.connect(t, "mod.anchor.relay").requestsWithReply(t, "mesh.mod.peer.tool.peek", inbox, "steer")
					})
				}},
				{"its own pull, answered into the sibling's inbox", false, func(t *testing.T, inbox string) {
					// JetStream delivers the attacker's own consumer's message into the sibling's
					// Consume, which takes it for one of its own.
					b.connect(t, "mod.anchor.source").publishesAndIsStored(t, "mesh.mod.source.event.made", "EVENTS")
					b.connect(t, "mod.anchor.relay").requestsWithReply(t, ownNext, inbox, `{"batch":1}`)
				}},
			} {
				t.Run(way.name, func(t *testing.T) {
					victim := b.connect(t, "mod.laptop.relay")
					consumer, err := victim.js.Consumer(context5s(t), "EVENTS", victimConsumer)
					if err != nil {
						t.Fatal(err)
					}
					// What the sibling's Consume was fed: an error it never had (a forged status),
					// or a message that is not its own consumer's delivery.
					fed := make(chan string, 16)
					own := "$JS.ACK.EVENTS." + victimConsumer + "."
					cc, err := consumer.Consume(func(m jetstream.Msg) {
						if !strings.HasPrefix(m.Reply(), own) {
							fed <- "a message not its consumer's: " + m.Reply()
						}
						m.Ack()
					}, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
						if !errors.Is(err, nats.ErrTimeout) {
							fed <- err.Error()
						}
					}))
					if err != nil {
						t.Fatal(err)
					}
					defer cc.Stop()
					inbox := pullInbox(t, b, victim)
					way.write(t, inbox)
					got := func() bool {
						select {
						case what := <-fed:
							t.Logf("the sibling's Consume was fed: %s", what)
							return true
						default:
							return false
						}
					}
					if lands && !way.refuse {
						testwait.For(t, "the sibling's Consume to be fed what the attacker wrote, in one account", 3*time.Second, got)
						return
					}
					testwait.Never(t, "the sibling's Consume was fed what the attacker wrote", time.Second, got)
					victim.sawNoViolation(t)
				})
			}
		})
	}
}

// answers serves tool as server, answering the one call call makes with an answer forge shapes,
// at the call's reply, and returns once it has.
func answers(t *testing.T, server *client, tool string, forge func(*nats.Msg), call func()) {
	t.Helper()
	answered := make(chan struct{}, 1)
	sub, err := server.nc.QueueSubscribe(tool, toolQueue(tool), func(c *nats.Msg) {
		m := nats.NewMsg(c.Reply)
		forge(m)
		server.nc.PublishMsg(m)
		server.nc.Flush()
		answered <- struct{}{}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	server.sawNoViolation(t)
	call()
	select {
	case <-answered:
	case <-time.After(3 * time.Second):
		t.Fatalf("%s never received the call to %s", server.user, tool)
	}
	server.sawNoViolation(t)
}

// pullInbox is the inbox of c's one running Consume: the subscription on its connection under its
// inbox prefix that is not the request mux's wildcard. The test reads it from the server; an
// attacker predicts it.
func pullInbox(t *testing.T, b *bus, c *client) string {
	t.Helper()
	cid, err := c.nc.GetClientID()
	if err != nil {
		t.Fatal(err)
	}
	var inbox string
	testwait.ForNil(t, "the sibling's pull inbox to be subscribed", 3*time.Second, func() error {
		conns, err := b.running.Server.Connz(&server.ConnzOptions{Subscriptions: true, CID: cid})
		if err != nil {
			return err
		}
		for _, conn := range conns.Conns {
			for _, s := range conn.Subs {
				if strings.HasPrefix(s, compiler.InboxPrefix(c.user)+".") && !strings.HasSuffix(s, ".*") {
					inbox = s
					return nil
				}
			}
		}
		return fmt.Errorf("no pull inbox of %s subscribed", c.user)
	})
	return inbox
}

// TestASiblingAndAColluderCannotForgeACaller: a module that serves a tool and calls another
// module's runs on two machines; one instance is compromised, and so is the server of the tool
// it calls. The instance calls the colluder's tool with its reply aimed at its own module's tool;
// the colluder answers with a reply of its own and a header naming bob. When a module's instances
// shared its account, the answer arrived at the honest sibling's tool server as a call with the
// server's `_R_` reply and no `svc`: indistinguishable from bob's own (bob may call it), so the
// check believed bob, and the colluder read the honest answer meant for him. With the tools
// served from an account of their own, the forged call reaches them across the attacker's
// account's import, a second hop: the server sets `svc`, and the check refuses it. Every mode
// with an account per principal; in one account the check names the mesh's account for any call
// and believes nobody in particular.
func TestASiblingAndAColluderCannotForgeACaller(t *testing.T) {
	t.Parallel()
	for _, mode := range inLoop(isolatedModes) {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := startBus(t, "testdata/instances.txtar", "", mode)
			ask := b.running.LocalPlan().ServedTool("mesh.mod.relay.tool.ask")
			if ask == nil || !slices.Contains(ask.Callers, "person.bob") {
				t.Fatalf("the plan's relay.ask: %+v, want bob among its callers", ask)
			}
			bob := "person.bob"
			if b.operator {
				bob = b.running.AccountKey(bob) // the server names accounts by their keys there
			}
			// The honest sibling serves relay.ask, checking each caller.
			honest := b.connect(t, "serve.laptop.relay")
			verdicts := make(chan error, 1)
			if _, err := honest.nc.QueueSubscribe("mesh.mod.relay.tool.ask", "relay", func(m *nats.Msg) {
				who, err := ask.Caller(m.Reply, m.Header.Get(compiler.RequestInfoHeader))
				if err == nil && who != "person.bob" {
					err = fmt.Errorf("believed %s", who)
				}
				if err == nil {
					m.Respond([]byte("bob's secret"))
				}
				verdicts <- err
			}); err != nil {
				t.Fatal(err)
			}
			honest.sawNoViolation(t)
			// The colluding server of peer.peek answers with a forged header and a reply of its
			// own, where it would read the honest answer.
			peer := b.connect(t, "serve.anchor.peer")
			if _, err := peer.nc.QueueSubscribe("mesh.mod.peer.tool.peek", "peer", func(m *nats.Msg) {
				answer := nats.NewMsg(m.Reply)
				answer.Header.Set(compiler.RequestInfoHeader, `{"acc":"`+bob+`"}`)
				answer.Reply = "_INBOX.mod.anchor.peer.reads"
				answer.Data = []byte("forged")
				peer.nc.PublishMsg(answer)
			}); err != nil {
				t.Fatal(err)
			}
			peer.sawNoViolation(t)
			b.connect(t, "mod.anchor.relay").requestsWithReply(t, "mesh.mod.peer.tool.peek", "mesh.mod.relay.tool.ask", "relay this")
			select {
			case err := <-verdicts:
				if err == nil || !strings.Contains(err.Error(), "crossed more than one import") {
					t.Fatalf("the honest server's check on the forged call: %v; want it refused as a second hop", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the forged call never reached the honest server: the check was not put to the test")
			}
			// Bob's own call is believed.
			bobs := b.connect(t, "person.bob")
			if _, err := bobs.nc.Request("mesh.mod.relay.tool.ask", []byte("mine"), 3*time.Second); err != nil {
				t.Fatalf("bob's own call: %v", err)
			}
			if err := <-verdicts; err != nil {
				t.Fatalf("the check on bob's own call: %v", err)
			}
		})
	}
}

// With an account per principal a serving user may publish on `_R_.>`, the replies the server
// gives calls that cross into its module's account. The replies of calls to another module's
// tools live in that module's account: a serving user publishing on such a reply, seen or
// guessed, reaches nothing, and the caller gets the answer of the module it called.
func TestAToolServerCannotAnswerAnotherModulesCalls(t *testing.T) {
	t.Parallel()
	b := startBus(t, "testdata/instances.txtar", "", catalogue.IsolationPerModule)
	relay, peer, bob := b.connect(t, "serve.anchor.relay"), b.connect(t, "serve.anchor.peer"), b.connect(t, "person.bob")
	calls := make(chan *nats.Msg, 1)
	if _, err := relay.nc.QueueSubscribe("mesh.mod.relay.tool.ask", "relay", func(m *nats.Msg) { calls <- m }); err != nil {
		t.Fatal(err)
	}
	relay.sawNoViolation(t)
	answer := make(chan string, 1)
	go func() {
		m, err := bob.nc.Request("mesh.mod.relay.tool.ask", []byte("?"), 5*time.Second)
		if err != nil {
			answer <- err.Error()
			return
		}
		answer <- string(m.Data)
	}()
	call := <-calls
	if !strings.HasPrefix(call.Reply, "_R_.") {
		t.Fatalf("a call from another account arrived with the reply %q, not the server's _R_.…", call.Reply)
	}
	// peer's serving user holds _R_.> too; the reply is relay's account's.
	if err := peer.nc.Publish(call.Reply, []byte("forged")); err != nil {
		t.Fatal(err)
	}
	peer.sawNoViolation(t)
	if err := call.Respond([]byte("relay's answer")); err != nil {
		t.Fatal(err)
	}
	relay.sawNoViolation(t)
	if got := <-answer; got != "relay's answer" {
		t.Fatalf("bob's call to relay was answered %q", got)
	}
}
