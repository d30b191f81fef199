package proof

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/internal/testwait"
)

// TestInjections runs each injection of docs/nats.md, "What separate accounts block", the way it
// arrives — a user sending a request it is allowed to send, with a reply subject it chose — and
// requires it to land in one account and to be blocked with an account per principal. Within one
// account the server publishes an answer wherever its requester says, without a permission check
// (docs/nats.md, "A requester chooses where the answer goes"); across accounts the reply travels
// through an import and is rewritten to `_R_.…`, so it reaches nothing the requester named. None of
// the requests is a Permissions Violation in either mode: permissions cannot see a reply subject,
// which is the hole.
func TestInjections(t *testing.T) {
	t.Parallel()
	for _, mode := range inLoop(modes) {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			lands := !strings.HasPrefix(mode, catalogue.IsolationPerModule)
			b := startBus(t, "testdata/proof.txtar", "", mode)

			t.Run("a pull's reply aimed at another module's tool", func(t *testing.T) {
				// notifier may pull its own consumer; registry serves prune, which notifier may not call.
				event := b.connect(t, "mod.anchor.catalog").publishesAndIsStored(t, "mesh.mod.catalog.event.upgraded", "EVENTS")
				prune := b.connect(t, "serve.anchor.registry").servesSync(t, "mesh.mod.registry.tool.prune")
				notifier := b.connect(t, "mod.laptop.notifier")
				notifier.requestsWithReply(t, "$JS.API.CONSUMER.MSG.NEXT.EVENTS.laptop_notifier", "mesh.mod.registry.tool.prune", `{"batch":1}`)
				landed(t, lands, prune, event)
			})
			t.Run("a CONSUMER.INFO answer aimed at another module's event subject", func(t *testing.T) {
				controller := b.connect(t, "mesh-controller")
				before := controller.lastSequence(t, "EVENTS", "mesh.mod.catalog.event.upgraded")
				b.connect(t, "mod.laptop.notifier").requestsWithReply(t, "$JS.API.CONSUMER.INFO.EVENTS.laptop_notifier", "mesh.mod.catalog.event.upgraded", "")
				forged := func() bool {
					m := controller.lastMessage(t, "EVENTS", "mesh.mod.catalog.event.upgraded")
					return m != nil && m.Sequence != before && strings.Contains(string(m.Data), "consumer_info_response")
				}
				stored(t, lands, "EVENTS stored the consumer's info as catalog's upgraded event", forged)
			})
			// bob may call catalog.lookup alone, directly; alice may call every tool, which in
			// operator mode she reaches through the tool hubs: two hops, each rewriting the reply.
			for _, caller := range []struct{ person, name string }{
				{"person.bob", "a person's tool call whose reply is a seat's work subject"},
				{"person.alice", "a tool call by a person who may call every tool, whose reply is a seat's work subject"},
			} {
				t.Run(caller.name, func(t *testing.T) {
					controller := b.connect(t, "mesh-controller")
					before := controller.lastSequence(t, "SEAT_IMAGE_STORE", "mesh.seat.image-store.accept.push")
					b.connect(t, "serve.anchor.catalog").serves(t, "mesh.mod.catalog.tool.lookup")
					work := "forged work by " + caller.person
					b.connect(t, caller.person).requestsWithReply(t, "mesh.mod.catalog.tool.lookup", "mesh.seat.image-store.accept.push", work)
					forged := func() bool {
						m := controller.lastMessage(t, "SEAT_IMAGE_STORE", "mesh.seat.image-store.accept.push")
						return m != nil && m.Sequence != before && strings.HasSuffix(string(m.Data), " answers "+work)
					}
					stored(t, lands, "the image store's work queue stored catalog's answer to "+caller.person+" as work", forged)
				})
			}
			t.Run("a forged declaration into a machine's delivery subject", func(t *testing.T) {
				// The controller has declared nothing on this bus: whatever arrives is forged. (What
				// arrives is the consumer's next message, which in one account may be the info
				// answer an earlier injection stored as an event.)
				b.connect(t, "mod.anchor.catalog").publishesAndIsStored(t, "mesh.mod.catalog.event.upgraded", "EVENTS")
				deliveries := b.connect(t, "node.anchor").subscribes(t, "_DELIVER.NODES.anchor")
				b.connect(t, "mod.laptop.notifier").requestsWithReply(t, "$JS.API.CONSUMER.MSG.NEXT.EVENTS.laptop_notifier", "_DELIVER.NODES.anchor", `{"batch":1}`)
				landed(t, lands, deliveries, "")
			})
			t.Run("a forged answer into another user's inbox", func(t *testing.T) {
				b.connect(t, "serve.anchor.catalog").serves(t, "mesh.mod.catalog.tool.lookup")
				alice := b.connect(t, "person.alice")
				inbox := alice.nc.NewInbox()
				answers := alice.subscribes(t, inbox)
				b.connect(t, "person.bob").requestsWithReply(t, "mesh.mod.catalog.tool.lookup", inbox, "forged answer")
				landed(t, lands, answers, "serve.anchor.catalog answers forged answer")
			})
			t.Run("a tool call whose reply is the JetStream API purging a stream", func(t *testing.T) {
				controller := b.connect(t, "mesh-controller")
				b.connect(t, "mod.laptop.builder").publishesAndIsStored(t, "mesh.seat.image-store.accept.push", "SEAT_IMAGE_STORE")
				// A tool that answers with an empty body: a purge request of everything.
				catalog := b.connect(t, "serve.anchor.catalog")
				if _, err := catalog.nc.QueueSubscribe("mesh.mod.catalog.tool.lookup", "catalog", func(m *nats.Msg) { m.Respond(nil) }); err != nil {
					t.Fatal(err)
				}
				catalog.sawNoViolation(t)
				b.connect(t, "person.bob").requestsWithReply(t, "mesh.mod.catalog.tool.lookup", "$JS.API.STREAM.PURGE.SEAT_IMAGE_STORE", "")
				purged := func() bool { return controller.streamMessages(t, "SEAT_IMAGE_STORE") == 0 }
				stored(t, lands, "a person with no JetStream grant purged SEAT_IMAGE_STORE", purged)
			})
		})
	}
}

// requestsWithReply publishes a request the user is allowed to make, with a reply subject of its
// choosing, and requires the server to have refused it nothing.
func (c *client) requestsWithReply(t *testing.T, subject, reply, body string) {
	t.Helper()
	must(t, c.RequestsWithReply(subject, reply, body))
}

// landed requires want (anything, when "") to arrive on sub when the injection lands, and
// nothing to when it is blocked.
func landed(t *testing.T, lands bool, sub *nats.Subscription, want string) {
	t.Helper()
	if lands && want != "" {
		receives(t, sub, want)
		return
	}
	if lands {
		if _, err := sub.NextMsg(3 * time.Second); err != nil {
			t.Fatalf("in one account this injection lands (docs/nats.md#what-separate-accounts-block), yet nothing arrived on %s: %v", sub.Subject, err)
		}
		return
	}
	if m, err := sub.NextMsg(time.Second); err == nil {
		t.Fatalf("blocked in this mode, yet %q arrived on %s", m.Data, sub.Subject)
	}
}

// stored waits for happened when the injection lands, and when it is blocked requires it still
// false after a second: the answer had its chance to travel.
func stored(t *testing.T, lands bool, what string, happened func() bool) {
	t.Helper()
	if lands {
		testwait.For(t, "what in one account this injection does (docs/nats.md#what-separate-accounts-block): "+what, 3*time.Second, happened)
		return
	}
	testwait.Never(t, "blocked in this mode, yet "+what, time.Second, happened)
}

// lastMessage reads the newest message on subject in stream as a user allowed the API, or nil.
func (c *client) lastMessage(t *testing.T, stream, subject string) *jetstream.RawStreamMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := c.LastMessage(ctx, stream, subject)
	must(t, err)
	return m
}

func (c *client) lastSequence(t *testing.T, stream, subject string) uint64 {
	if m := c.lastMessage(t, stream, subject); m != nil {
		return m.Sequence
	}
	return 0
}

func (c *client) streamMessages(t *testing.T, stream string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := c.js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().State.Msgs
}

// The mesh account's usage, through a tool's answer. A person calls a tool with its reply aimed
// at `$JS.API.INFO`, and the colluding tool server answers with a reply of its own, its tool's
// subject: the answer lands in the person's account on $JS.API.INFO and, when that account imports
// it from the mesh's, JetStream answers the mesh account's usage (streams, storage, limits) into
// the colluder's subscription. Every account imported $JS.API.INFO; now only an account whose
// users make JetStream requests does (docs/nats.md, "Traps"), so the person's account answers
// with the server's own "JetStream not enabled". In one account every user shares the JetStream
// account, and it lands (TestInjections has worse).
func TestAColluderCannotReadTheMeshAccountsUsageThroughAPerson(t *testing.T) {
	t.Parallel()
	for _, mode := range inLoop(modes) {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := startBus(t, "testdata/proof.txtar", "", mode)
			server := b.connect(t, "serve.anchor.catalog")
			usage := make(chan string, 4)
			if _, err := server.nc.QueueSubscribe("mesh.mod.catalog.tool.lookup", "catalog", func(m *nats.Msg) {
				if strings.Contains(string(m.Data), "account_info_response") {
					usage <- string(m.Data)
					return
				}
				answer := nats.NewMsg(m.Reply)
				answer.Reply = "mesh.mod.catalog.tool.lookup"
				server.nc.PublishMsg(answer)
			}); err != nil {
				t.Fatal(err)
			}
			server.sawNoViolation(t)
			b.connect(t, "person.bob").requestsWithReply(t, "mesh.mod.catalog.tool.lookup", "$JS.API.INFO", "")
			read := func() bool {
				select {
				case m := <-usage:
					if strings.Contains(m, `"error"`) {
						return false
					}
					t.Logf("the colluder read: %.200s", m)
					return true
				default:
					return false
				}
			}
			if !b.isolated {
				testwait.For(t, "the colluder to read the mesh account's usage, in one account", 3*time.Second, read)
				return
			}
			testwait.Never(t, "the colluder read the mesh account's usage", time.Second, read)
		})
	}
}
