package proof

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/internal/testwait"
)

// A module's instances share the module's account in isolation, so that a call to its tool is
// served once (TestMultiInstanceCataloguesRunAndServeEachCallOnce). An account's imports are the
// union of its users' grants, and an answer arriving in an account follows the account's imports
// without a per-user check: each instance's account now also holds the imports of its siblings'
// consumers. These are the attacks that sharing opens, each by relay on anchor against its
// sibling on laptop (testdata/instances.txtar: relay runs on three machines, consumes source's
// event through a consumer per machine, serves ask and calls it, and calls peer's tool):
// through every import the shared account holds, aimed at the sibling's pull, its consumer
// info, its acks and its inbox, to read its messages, park them or acknowledge them away.
//
// Each attack runs in both isolations on a fresh bus. Blocked means the sibling's consumer
// delivered nothing and the attacker received nothing; where the server refuses the request
// itself, its Permissions Violation is required too. What lands is the trade-off docs/nats.md
// ("One account per module") states: proven here so the page cannot drift from the server.
func TestASiblingInstanceAgainstItsSiblingsConsumer(t *testing.T) {
	for _, a := range siblingAttacks {
		for _, isolation := range isolations {
			t.Run(a.name+"/"+isolation, func(t *testing.T) {
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
			b.connect(t, "mod.anchor.peer").serves(t, "mesh.mod.peer.tool.peek")
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
		// A module that calls its own tool sends the call inside its account, where no import
		// rewrites the reply. With allow_responses the instance answering it could answer once
		// at that reply, with a reply of its own: aimed at the sibling's pull, JetStream
		// delivered the sibling's messages to the attacker, and each delivery's ack subject let
		// it answer once more, acknowledging them away. In one account it still does. With an
		// account per module a tool server has no allow_responses: it may answer the server's
		// `_R_` replies and its siblings' inboxes, nothing else, so the answer is refused.
		name: "a call to its own module's tool, answered by itself into the sibling's pull", landsShared: true, landsIsolated: false, reads: true,
		attack: func(t *testing.T, s *siblings) {
			a := s.attacker
			inbox := a.nc.NewInbox()
			stolen := a.subscribes(t, inbox)
			if _, err := a.nc.QueueSubscribe("mesh.mod.relay.tool.ask", "relay", func(m *nats.Msg) {
				if m.Reply == victimNext {
					a.nc.PublishRequest(m.Reply, inbox, []byte(`{"batch":5}`))
				}
			}); err != nil {
				t.Fatal(err)
			}
			// No sibling serves on this bus: the call is the attacker's to answer.
			a.requestsWithReply(t, "mesh.mod.relay.tool.ask", victimNext, "steer")
			if s.isolated {
				a.refused(t, "Publish", victimNext)
				return
			}
			for {
				m, err := stolen.NextMsg(time.Second)
				if err != nil {
					break
				}
				s.stolen = append(s.stolen, m)
				if strings.HasPrefix(m.Reply, "$JS.ACK.EVENTS."+victimConsumer+".") {
					a.nc.Publish(m.Reply, nil) // acknowledged away, with allow_responses
				}
			}
			a.sawNoViolation(t)
			// The three messages waiting for the sibling are gone: delivered to the attacker and
			// acknowledged; only the one the sibling holds still awaits its ack.
			gone := func() bool {
				info := s.controller.consumerInfo(t, "EVENTS", victimConsumer)
				return info.NumPending == 0 && info.NumAckPending == 1
			}
			testwait.For(t, "the sibling's waiting messages to be acknowledged away", 3*time.Second, gone)
		},
	},
	{
		// The trade-off with an accomplice: the server of a tool the attacker may call answers
		// into the attacker's account, on the reply the attacker chose, with a reply of its
		// own: the sibling's messages go to the accomplice (which cannot ack them: their acks
		// are imported into relay's account only).
		name: "a colluding server of a tool it calls answers into the sibling's pull", landsShared: true, landsIsolated: true, reads: true,
		attack: func(t *testing.T, s *siblings) {
			peer := s.bus.connect(t, "mod.anchor.peer")
			inbox := peer.nc.NewInbox()
			stolen := peer.subscribes(t, inbox)
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
		testwait.For(t, "the attack to steer "+victimConsumer+" (docs/nats.md#one-account-per-module)", 3*time.Second, steered)
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

// TestASiblingInstanceWritesIntoItsSiblingsInboxOnlyToAnswerIt: a module that calls its own tool
// is answered by a sibling, in the module's account, at the caller's own inbox; with an account
// per module the instances of such a module are granted each other's inboxes (`_INBOX.mod.*.<m>.>`)
// for it, and nothing more. So an instance may write into a sibling's inbox subject it knows —
// the trade-off docs/nats.md states: a client's inbox subjects end in a random token nobody else
// sees, which is what keeps a forged answer from meeting a request. An instance of a module that
// does not call itself is refused, and so is every instance in one account, where answers travel
// by allow_responses (which is how the same forgery lands there, TestInjections).
func TestASiblingInstanceWritesIntoItsSiblingsInboxOnlyToAnswerIt(t *testing.T) {
	for _, isolation := range isolations {
		t.Run(isolation, func(t *testing.T) {
			b := startBus(t, "testdata/instances.txtar", "", isolation)
			for _, m := range []struct {
				module string
				victim string
				lands  bool
			}{
				{"relay", "mod.laptop.relay", isolation == catalogue.IsolationPerModule},
				{"peer", "mod.laptop.peer", false},
				// The grant names the module: another module's instances stay out of reach.
				{"relay", "mod.laptop.peer", false},
			} {
				victim := b.connect(t, m.victim)
				known := "_INBOX." + m.victim + ".known"
				inbox := victim.subscribes(t, known)
				attacker := b.connect(t, "mod.anchor."+m.module)
				if err := attacker.nc.Publish(known, []byte("forged")); err != nil {
					t.Fatal(err)
				}
				if !m.lands {
					attacker.refused(t, "Publish", known)
					receivesNothing(t, inbox)
					continue
				}
				attacker.sawNoViolation(t)
				receives(t, inbox, "forged")
			}
		})
	}
}

// With an account per module a tool server may publish on `_R_.>`, the replies the server gives
// calls that cross into its account. The replies of calls to another module's tools live in that
// module's account: a tool server publishing on such a reply, seen or guessed, reaches nothing,
// and the caller gets the answer of the module it called.
func TestAToolServerCannotAnswerAnotherModulesCalls(t *testing.T) {
	b := startBus(t, "testdata/instances.txtar", "", catalogue.IsolationPerModule)
	relay, peer, bob := b.connect(t, "mod.anchor.relay"), b.connect(t, "mod.anchor.peer"), b.connect(t, "person.bob")
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
	// peer holds _R_.> too; the reply is relay's account's.
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
