package proof

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/lint"
	"github.com/meshc-dev/meshc/operator"
	"github.com/meshc-dev/meshc/principal"
	"github.com/meshc-dev/meshc/up"
)

// TestPermissionsOnARealServer proves docs/catalogue.md, "Permissions", against a real nats-server:
// every grant the compiler derives does what its holder needs, and a set of things no declaration
// grants is refused by the server. The subjects are written out as that page derives them, not
// taken from the compiler's own helpers, so a drift between the page and the code fails here too.
//
// A refusal is proven by the server's "Permissions Violation" for that subject, never by a
// request that merely timed out: a timeout with no violation means the request was allowed and
// nobody answered (docs/nats.md, "Denials arrive asynchronously"). A grant is proven by the thing
// working and the connection having seen no violation at all.
//
// It runs in both isolations: the grants and refusals are the users' own and stay inside every
// account, so an account per module changes none of them (docs/nats.md, "Accounts, exports and
// imports"), but for how a tool server answers. And it runs in operator mode, where the same
// grants reach the server as the templates of scoped signing keys in pushed account JWTs
// (docs/nats.md, "Operator mode").
func TestPermissionsOnARealServer(t *testing.T) {
	t.Parallel()
	for _, mode := range inLoop(modes) {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			proveGrantsAndRefusals(t, startBus(t, "testdata/proof.txtar", "", mode))
		})
	}
}

// isolations are the two modes every proof runs in; modes adds nkey and operator auth to each,
// for the proofs that must hold there too.
var (
	isolations = []string{catalogue.IsolationShared, catalogue.IsolationPerModule}
	modes      = []string{catalogue.IsolationShared, catalogue.IsolationPerModule,
		catalogue.IsolationShared + nkeyMode, catalogue.IsolationPerModule + nkeyMode,
		catalogue.IsolationShared + operatorMode, catalogue.IsolationPerModule + operatorMode}
	// isolatedModes are the modes with an account per principal, in each auth.
	isolatedModes = []string{catalogue.IsolationPerModule, catalogue.IsolationPerModule + nkeyMode, catalogue.IsolationPerModule + operatorMode}
)

// inLoop is the modes of all that a proof runs in: every one, or under -short (`go test -short
// ./...`, the inner loop) the default's alone, an account per module with passwords (or the
// first of all when it lacks that). CI runs every mode. Each mode's proof starts its own server
// on a free port, in temporary directories of its own, so the modes run in parallel.
func inLoop(all []string) []string {
	if !testing.Short() {
		return all
	}
	if slices.Contains(all, catalogue.IsolationPerModule) {
		return []string{catalogue.IsolationPerModule}
	}
	return all[:1]
}

// operatorMode marks a mode run with auth: operator; nkeyMode one run with auth: nkey, its users
// connecting with development nkeys.
const (
	operatorMode = "+operator"
	nkeyMode     = "+nkey"
)

func proveGrantsAndRefusals(t *testing.T, b *bus) {
	t.Run("granted", func(t *testing.T) {
		t.Run("a module publishes its own event and the consuming module's consumer delivers it, acked twice", func(t *testing.T) {
			catalog := b.connect(t, "mod.anchor.catalog")
			notifier := b.connect(t, "mod.laptop.notifier")
			first := catalog.publishesAndIsStored(t, "mesh.mod.catalog.event.upgraded", "EVENTS")
			second := catalog.publishesAndIsStored(t, "mesh.mod.catalog.event.upgraded", "EVENTS")
			notifier.pullsAndAcksTwice(t, "EVENTS", "laptop_notifier", first, second)
			catalog.sawNoViolation(t)
		})
		t.Run("a module consuming a role's event gets it after the role's holder announces it", func(t *testing.T) {
			builder := b.connect(t, "mod.laptop.builder")
			catalog := b.connect(t, "mod.anchor.catalog")
			built := builder.publishesAndIsStored(t, "mesh.seat.mesh-build-machine.event.built", "EVENTS")
			catalog.pullsAndAcksTwice(t, "EVENTS", "anchor_catalog", built)
			builder.sawNoViolation(t)
		})
		t.Run("a module consuming a module-declared seat's event gets it after the seat's holder announces it", func(t *testing.T) {
			registry := b.connect(t, "mod.anchor.registry")
			catalog := b.connect(t, "mod.anchor.catalog")
			pushed := registry.publishesAndIsStored(t, "mesh.seat.image-store.event.pushed", "EVENTS")
			catalog.pullsAndAcksTwice(t, "EVENTS", "anchor_catalog", pushed)
			registry.sawNoViolation(t)
		})
		t.Run("the audit consumer hears a module's event and a role's event", func(t *testing.T) {
			catalog := b.connect(t, "mod.anchor.catalog")
			builder := b.connect(t, "mod.laptop.builder")
			audit := b.connect(t, "mod.laptop.audit")
			upgraded := catalog.publishesAndIsStored(t, "mesh.mod.catalog.event.upgraded", "EVENTS")
			built := builder.publishesAndIsStored(t, "mesh.seat.mesh-build-machine.event.built", "EVENTS")
			audit.pullsAndAcksTwice(t, "EVENTS", "laptop_audit", upgraded, built)
		})
		t.Run("the holder of a module-declared seat pulls the work a user of the seat submitted, and acks it", func(t *testing.T) {
			builder := b.connect(t, "mod.laptop.builder")
			registry := b.connect(t, "mod.anchor.registry")
			push := builder.publishesAndIsStored(t, "mesh.seat.image-store.accept.push", "SEAT_IMAGE_STORE")
			registry.pullsAndAcksTwice(t, "SEAT_IMAGE_STORE", "holder", push)
			builder.sawNoViolation(t)
		})
		t.Run("the holder of a role pulls the work the controller submitted, and acks it", func(t *testing.T) {
			controller := b.connect(t, "mesh-controller")
			builder := b.connect(t, "mod.laptop.builder")
			build := controller.publishesAndIsStored(t, "mesh.seat.mesh-build-machine.accept.build", "SEAT_MESH_BUILD_MACHINE")
			builder.pullsAndAcksTwice(t, "SEAT_MESH_BUILD_MACHINE", "holder", build)
			controller.sawNoViolation(t)
		})
		t.Run("a module calls another module's tool and gets the reply", func(t *testing.T) {
			b.connect(t, "serve.anchor.catalog").serves(t, "mesh.mod.catalog.tool.lookup")
			b.connect(t, "mod.laptop.notifier").callsAndIsAnswered(t, "mesh.mod.catalog.tool.lookup")
		})
		t.Run("a person calls the tool they were granted", func(t *testing.T) {
			b.connect(t, "serve.anchor.catalog").serves(t, "mesh.mod.catalog.tool.lookup")
			b.connect(t, "person.bob").callsAndIsAnswered(t, "mesh.mod.catalog.tool.lookup")
		})
		t.Run("an administrator calls any tool", func(t *testing.T) {
			b.connect(t, "serve.anchor.catalog").serves(t, "mesh.mod.catalog.tool.lookup")
			b.connect(t, "serve.anchor.registry").serves(t, "mesh.mod.registry.tool.prune")
			alice := b.connect(t, "person.alice")
			alice.callsAndIsAnswered(t, "mesh.mod.catalog.tool.lookup")
			alice.callsAndIsAnswered(t, "mesh.mod.registry.tool.prune")
		})
		t.Run("a machine receives its declaration from the controller and acks it twice", func(t *testing.T) {
			node := b.connect(t, "node.anchor")
			controller := b.connect(t, "mesh-controller")
			deliveries := node.subscribes(t, "_DELIVER.NODES.anchor")
			declaration := controller.publishesAndIsStored(t, "mesh.node.anchor.declare", "NODES")
			node.receivesPushedAndAcksTwice(t, deliveries, declaration)
			controller.seesNothingAwaitingAck(t, "NODES", "anchor")
		})
		t.Run("a machine reports and beats its heart, and the controller hears both", func(t *testing.T) {
			node := b.connect(t, "node.anchor")
			controller := b.connect(t, "mesh-controller")
			heartbeats := controller.subscribes(t, "mesh.control.heartbeat.*")
			report := node.publishesAndIsStored(t, "mesh.control.report.anchor", "CONTROL")
			beat := node.publishesLive(t, "mesh.control.heartbeat.anchor")
			receives(t, heartbeats, beat)
			controller.pullsAndAcksTwice(t, "CONTROL", "reports", report)
		})
		t.Run("an enrolling machine asks to enrol and the controller answers into its inbox", func(t *testing.T) {
			enrol := b.connect(t, "enrol.laptop")
			controller := b.connect(t, "mesh-controller")
			answerTo := enrol.nc.NewInbox() // _INBOX.enrol.laptop.<nuid>, from the inbox prefix
			answers := enrol.subscribes(t, answerTo)
			// The answer address travels in the payload: the transport reply of a request CONTROL
			// captures is taken by the stream's PubAck (docs/nats.md, "A stream answers the
			// requests it captures").
			request, _ := json.Marshal(map[string]string{"answer": answerTo})
			enrol.publishesAndIsStoredWith(t, "mesh.control.enrol.laptop", "CONTROL", string(request))
			got := controller.pullsAndAcksTwice(t, "CONTROL", "enrolments", string(request))
			var asked struct{ Answer string }
			if err := json.Unmarshal(got[0].Data(), &asked); err != nil || !strings.HasPrefix(asked.Answer, "_INBOX.enrol.laptop.") {
				t.Fatalf("the enrolment request on CONTROL carries no answer address under _INBOX.enrol.laptop. (%q, %v)", got[0].Data(), err)
			}
			welcome := controller.publishesLive(t, asked.Answer)
			receives(t, answers, welcome)
			enrol.sawNoViolation(t)
		})
	})

	t.Run("refused", func(t *testing.T) {
		t.Run("a module publishing another module's event", func(t *testing.T) {
			b.connect(t, "mod.anchor.registry").isRefusedPublishing(t, "mesh.mod.catalog.event.upgraded")
		})
		t.Run("a module announcing the event of a seat it does not hold", func(t *testing.T) {
			b.connect(t, "mod.anchor.catalog").isRefusedPublishing(t, "mesh.seat.mesh-build-machine.event.built")
		})
		t.Run("a module serving its tool outside its module's queue group", func(t *testing.T) {
			// A plain subscription would see every call beside the instance the queue picks: a
			// call served twice. Another group would split nothing with its siblings.
			catalog := b.connect(t, "serve.anchor.catalog")
			catalog.isRefusedSubscribing(t, "mesh.mod.catalog.tool.lookup")
			catalog.isRefusedQueueSubscribing(t, "mesh.mod.catalog.tool.lookup", "lookup")
		})
		t.Run("a module's own user serving its tool", func(t *testing.T) {
			// Serving is its serving user's alone: the calls then reach an account where none of
			// the module's requests are made (docs/nats.md, "An account per instance, the tools
			// apart").
			b.connect(t, "mod.anchor.catalog").isRefusedQueueSubscribing(t, "mesh.mod.catalog.tool.lookup", "catalog")
		})
		t.Run("anyone but a serving user answering at the server's replies", func(t *testing.T) {
			// `_R_.…` are the replies the server gives calls crossing into a module's account:
			// only its serving users may answer there, and only with an account per principal.
			for _, user := range []string{"mod.anchor.catalog", "mod.laptop.notifier", "person.alice", "node.anchor", "enrol.laptop"} {
				b.connect(t, user).isRefusedPublishing(t, "_R_.AbCdEf.GhIjKlMn")
			}
			if !b.isolated {
				b.connect(t, "serve.anchor.catalog").isRefusedPublishing(t, "_R_.AbCdEf.GhIjKlMn")
			}
		})
		t.Run("a serving user doing anything but serve its module's tools", func(t *testing.T) {
			server := b.connect(t, "serve.anchor.catalog")
			for _, subject := range []string{
				"mesh.mod.catalog.event.upgraded",
				"mesh.mod.registry.tool.prune",
				"mesh.mod.catalog.tool.lookup",
				"$JS.API.CONSUMER.INFO.EVENTS.anchor_catalog",
				"_INBOX.mod.anchor.catalog.x",
			} {
				server.isRefusedPublishing(t, subject)
			}
			server.isRefusedQueueSubscribing(t, "mesh.mod.registry.tool.prune", "registry")
			server.isRefusedSubscribing(t, "_INBOX.serve.anchor.catalog.>")
			server.isRefusedSubscribing(t, "_R_.>")
		})
		t.Run("a module calling a tool it does not declare", func(t *testing.T) {
			b.connect(t, "mod.laptop.audit").isRefusedPublishing(t, "mesh.mod.catalog.tool.lookup")
		})
		t.Run("a person publishing an event", func(t *testing.T) {
			alice := b.connect(t, "person.alice")
			alice.isRefusedPublishing(t, "mesh.mod.catalog.event.upgraded")
			alice.isRefusedPublishing(t, "mesh.seat.mesh-build-machine.event.built")
		})
		t.Run("a person calling a tool they were not granted", func(t *testing.T) {
			b.connect(t, "person.bob").isRefusedPublishing(t, "mesh.mod.registry.tool.prune")
		})
		t.Run("a person answering a request", func(t *testing.T) {
			bob := b.connect(t, "person.bob")
			bob.isRefusedSubscribing(t, "mesh.mod.catalog.tool.lookup")
			// An answer goes to a caller's reply subject; the caller must see nothing of it.
			alice := b.connect(t, "person.alice")
			replyTo := alice.nc.NewInbox()
			replies := alice.subscribes(t, replyTo)
			bob.isRefusedPublishing(t, replyTo)
			receivesNothing(t, replies)
		})
		t.Run("a machine acking another machine's declaration consumer", func(t *testing.T) {
			node := b.connect(t, "node.anchor")
			node.isRefusedPublishing(t, "$JS.ACK.NODES.laptop.1.1.1.1700000000000000000.0")
			node.isRefusedPublishing(t, "$JS.ACK._.ACCHASH.NODES.laptop.1.1.1.1700000000000000000.0")
		})
		t.Run("a machine reading another machine's declarations", func(t *testing.T) {
			node := b.connect(t, "node.anchor")
			node.isRefusedSubscribing(t, "_DELIVER.NODES.laptop")
			node.isRefusedRequesting(t, "$JS.API.CONSUMER.INFO.NODES.laptop")
		})
		t.Run("a machine declaring itself", func(t *testing.T) {
			b.connect(t, "node.anchor").isRefusedPublishing(t, "mesh.node.anchor.declare")
		})
		t.Run("a module pulling the work of a seat it does not hold", func(t *testing.T) {
			controller := b.connect(t, "mesh-controller")
			b.connect(t, "mod.laptop.builder").publishesAndIsStored(t, "mesh.seat.image-store.accept.push", "SEAT_IMAGE_STORE")
			before := controller.consumerInfo(t, "SEAT_IMAGE_STORE", "holder")
			b.connect(t, "mod.anchor.catalog").isRefusedRequesting(t, "$JS.API.CONSUMER.MSG.NEXT.SEAT_IMAGE_STORE.holder")
			after := controller.consumerInfo(t, "SEAT_IMAGE_STORE", "holder")
			if after.NumAckPending != before.NumAckPending || after.Delivered.Consumer != before.Delivered.Consumer {
				t.Fatalf("the refused pull still delivered work: awaiting ack %d → %d, delivered %d → %d",
					before.NumAckPending, after.NumAckPending, before.Delivered.Consumer, after.Delivered.Consumer)
			}
		})
		t.Run("a module pulling another module's consumer", func(t *testing.T) {
			b.connect(t, "mod.anchor.catalog").isRefusedRequesting(t, "$JS.API.CONSUMER.MSG.NEXT.EVENTS.laptop_notifier")
		})
		t.Run("a module subscribing to another user's inbox", func(t *testing.T) {
			catalog := b.connect(t, "mod.anchor.catalog")
			catalog.isRefusedSubscribing(t, "_INBOX.mod.laptop.notifier.>")
			catalog.isRefusedSubscribing(t, "_INBOX.>")
		})
		t.Run("a module touching the JetStream API beyond its own consumer", func(t *testing.T) {
			notifier := b.connect(t, "mod.laptop.notifier")
			notifier.isRefusedRequesting(t, "$JS.API.STREAM.INFO.EVENTS")
			notifier.isRefusedRequesting(t, "$JS.API.CONSUMER.DELETE.EVENTS.laptop_notifier")
		})
		t.Run("the controller speaking for a module, a role or a machine", func(t *testing.T) {
			// It owns the JetStream API and the control plane, and nothing a module, a role's
			// holder or a machine says: those subjects are theirs alone.
			controller := b.connect(t, "mesh-controller")
			controller.isRefusedPublishing(t, "mesh.mod.catalog.event.upgraded")
			controller.isRefusedPublishing(t, "mesh.seat.mesh-build-machine.event.built")
			controller.isRefusedPublishing(t, "mesh.mod.catalog.tool.lookup")
			controller.isRefusedPublishing(t, "mesh.control.report.anchor")
			controller.isRefusedSubscribing(t, "_INBOX.mod.anchor.catalog.>")
			controller.isRefusedSubscribing(t, "mesh.mod.catalog.tool.lookup")
		})
		t.Run("an unknown user", func(t *testing.T) {
			switch {
			case b.operator:
				// A JWT for a real account, signed by a key that account does not list.
				stranger, _ := nkeys.CreateAccount()
				b.cannotConnectWith(t, "mod.anchor.catalog", b.signedBy(t, stranger, "mod.anchor.catalog"))
				return
			case b.nkeys:
				// An nkey no user of the accounts file has.
				stranger, _ := nkeys.CreateUser()
				public, _ := stranger.PublicKey()
				b.cannotConnectWith(t, "a stranger", nats.Nkey(public, stranger.Sign))
				return
			}
			b.cannotConnect(t, "mod.anchor.ghost", b.running.Password("mod.anchor.catalog"))
		})
		t.Run("a known user with a wrong password", func(t *testing.T) {
			if b.nkeys {
				// The key is the user: a known user's password is no credential at all here.
				b.cannotConnect(t, "mod.anchor.catalog", b.running.Password("mod.anchor.catalog"))
				return
			}
			if b.operator {
				// Another user's real signing key, naming this user's account: with an account
				// per principal, that key is not the account's.
				if !b.isolated {
					t.Skip("in one account every user's key is the account's: a key's scope, not the name in the JWT, is what a user may do")
				}
				b.cannotConnectWith(t, "mod.anchor.catalog", b.signedBy(t, b.running.UserSigner("mod.laptop.notifier"), "mod.anchor.catalog"))
				return
			}
			// Another user's real password: a credential that works, for someone else.
			b.cannotConnect(t, "mod.anchor.catalog", b.running.Password("mod.laptop.notifier"))
		})
		t.Run("the enrolment user publishing anything but its enrolment request", func(t *testing.T) {
			enrol := b.connect(t, "enrol.laptop")
			for _, subject := range []string{
				"mesh.control.enrol.anchor",
				"mesh.control.report.laptop",
				"mesh.control.heartbeat.laptop",
				"mesh.mod.catalog.event.upgraded",
				"mesh.mod.catalog.tool.lookup",
				"mesh.seat.image-store.accept.push",
				"$JS.API.STREAM.INFO.CONTROL",
			} {
				enrol.isRefusedPublishing(t, subject)
			}
			enrol.isRefusedSubscribing(t, "_INBOX.enrol.anchor.>")
			enrol.isRefusedSubscribing(t, "_DELIVER.NODES.laptop")
		})
	})
}

// TestAckGrantsCoverTheNewerAckForm proves the second ack grant, `$JS.ACK.*.*.S.C.>`: with
// js_ack_fc_v2 on, a server sends `$JS.ACK.<domain>.<account hash>.S.C.…` as the reply of every
// delivery, and a v1-only grant refuses every ack (docs/nats.md, "What a consumer's user needs").
// The flag is off by default in 2.15.2 and due to become the default, so a mesh must survive the
// day its server turns it on.
func TestAckGrantsCoverTheNewerAckForm(t *testing.T) {
	t.Parallel()
	for _, isolation := range inLoop(isolations) {
		t.Run(isolation, func(t *testing.T) {
			t.Parallel()
			proveNewerAckForm(t, startBus(t, "testdata/proof.txtar", "feature_flags {\n  js_ack_fc_v2: true\n}\n", isolation))
		})
	}
}

func proveNewerAckForm(t *testing.T, b *bus) {
	t.Run("a module acks its own consumer twice in the newer form", func(t *testing.T) {
		catalog := b.connect(t, "mod.anchor.catalog")
		notifier := b.connect(t, "mod.laptop.notifier")
		upgraded := catalog.publishesAndIsStored(t, "mesh.mod.catalog.event.upgraded", "EVENTS")
		got := notifier.pullsAndAcksTwice(t, "EVENTS", "laptop_notifier", upgraded)
		requireNewerAckForm(t, got[0].Reply(), "EVENTS", "laptop_notifier")
	})
	t.Run("a holder acks its seat's work twice in the newer form", func(t *testing.T) {
		builder := b.connect(t, "mod.laptop.builder")
		registry := b.connect(t, "mod.anchor.registry")
		push := builder.publishesAndIsStored(t, "mesh.seat.image-store.accept.push", "SEAT_IMAGE_STORE")
		got := registry.pullsAndAcksTwice(t, "SEAT_IMAGE_STORE", "holder", push)
		requireNewerAckForm(t, got[0].Reply(), "SEAT_IMAGE_STORE", "holder")
	})
	t.Run("a machine acks its declaration twice in the newer form", func(t *testing.T) {
		node := b.connect(t, "node.anchor")
		controller := b.connect(t, "mesh-controller")
		deliveries := node.subscribes(t, "_DELIVER.NODES.anchor")
		declaration := controller.publishesAndIsStored(t, "mesh.node.anchor.declare", "NODES")
		m := node.receivesPushedAndAcksTwice(t, deliveries, declaration)
		requireNewerAckForm(t, m.Reply, "NODES", "anchor")
		controller.seesNothingAwaitingAck(t, "NODES", "anchor")
	})
	t.Run("a machine acking another machine's consumer in the newer form is refused", func(t *testing.T) {
		b.connect(t, "node.anchor").isRefusedPublishing(t, "$JS.ACK._.ACCHASH.NODES.laptop.1.1.1.1700000000000000000.0")
	})
}

// requireNewerAckForm requires a delivery's reply to be the v2 ack subject of stream/consumer,
// so the test above cannot pass on the v1 form if the flag is ever dropped or renamed.
func requireNewerAckForm(t *testing.T, reply, stream, consumer string) {
	t.Helper()
	tokens := strings.Split(reply, ".")
	if len(tokens) < 11 || tokens[0] != "$JS" || tokens[1] != "ACK" || tokens[4] != stream || tokens[5] != consumer {
		t.Fatalf("the delivery's reply %q is not the newer ack form $JS.ACK.<domain>.<account hash>.%s.%s.…", reply, stream, consumer)
	}
}

// bus is a real embedded server running a compiled catalogue, with every user's credentials.
type bus struct {
	url     string
	running *up.Bus
	plan    *compiler.Plan
	// operator: the mesh runs in operator mode; nkeys: with auth: nkey; isolated: with an
	// account per principal.
	operator, nkeys, isolated bool
}

// startBus loads a catalogue and runs it as `meshc up` does (package up): development passwords
// for every user, the accounts file as meshc composes it, the server started from its file, and
// the plan applied as mesh-controller with the grants the catalogue gives it — or in operator
// mode, a development operator and the accounts pushed to the server's resolver. serverConf is
// added to the server's own half; mode (an isolation, with operatorMode for auth: operator)
// overrides the catalogue's.
func startBus(t *testing.T, archive, serverConf, mode string) *bus {
	t.Helper()
	cat, findings := cataloguetest.Load(t, archive)
	isolation, op := strings.CutSuffix(mode, operatorMode)
	isolation, nkey := strings.CutSuffix(isolation, nkeyMode)
	switch {
	case op:
		cat.Mesh.Auth.Value = catalogue.AuthOperator
	case nkey:
		cat.Mesh.Auth.Value = catalogue.AuthNKey
	}
	return startCatalogue(t, cat, findings, serverConf, isolation)
}

// startCatalogue is startBus for a catalogue already loaded: it must lint without an error, as a
// catalogue `meshc up` runs must.
func startCatalogue(t *testing.T, cat *catalogue.Catalogue, loaded catalogue.Findings, serverConf, isolation string, edits ...func(*compiler.Plan)) *bus {
	t.Helper()
	cat.Mesh.Isolation.Value = isolation
	findings, plan := lint.Check(cat, loaded)
	for _, f := range findings {
		if f.Severity == catalogue.Error {
			t.Fatalf("the catalogue does not lint clean: %v", f)
		}
	}
	for _, edit := range edits {
		edit(plan)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	state := t.TempDir()
	started := shareCredentials(t, state, plan)
	running, _, err := up.Start(ctx, plan, up.Options{State: state, ServerConf: serverConf, NKeys: true})
	started()
	if err != nil {
		t.Fatalf("running the catalogue as meshc up does: %v", err)
	}
	t.Cleanup(running.Stop)
	return &bus{url: running.URL, running: running, plan: plan,
		operator: cat.Mesh.Operator(), nkeys: cat.Mesh.NKeys(), isolated: isolation == catalogue.IsolationPerModule}
}

// client is one bus user's connection, remembering every permission violation the server sent
// it: a principal.Conn, whose tries are meshc verify's too, each wrapped here to end the test.
type client struct {
	*principal.Conn
	user string
	nc   *nats.Conn
	js   jetstream.JetStream
}

// connect connects as user with its own inbox prefix, as every mesh client does (a user may only
// subscribe its own inbox), for the rest of the subtest.
func (b *bus) connect(t *testing.T, user string) *client {
	t.Helper()
	c, err := principal.Connect(b.url, user, b.running.As(user))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &client{Conn: c, user: user, nc: c.NC, js: c.JS}
}

// cannotConnect proves the server refuses user with password at connect.
func (b *bus) cannotConnect(t *testing.T, user, password string) {
	t.Helper()
	nc, err := nats.Connect(b.url, nats.UserInfo(user, password), nats.NoReconnect())
	if err == nil {
		nc.Close()
		t.Fatalf("%s connected with a password that is not its own", user)
	}
	if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("%s was turned away, but not by authorization: %v", user, err)
	}
}

// signedBy is a user JWT naming the user's account, signed by signer: a credential the server
// must judge by whether the account lists the signer.
func (b *bus) signedBy(t *testing.T, signer nkeys.KeyPair, user string) nats.Option {
	t.Helper()
	token, kp, err := operator.IssueUser(signer, user, b.running.AccountKey(b.running.Plan().User(user).Account))
	if err != nil {
		t.Fatal(err)
	}
	return operator.UserOption(token, kp)
}

// cannotConnectWith proves the server refuses a connection with these credentials.
func (b *bus) cannotConnectWith(t *testing.T, user string, creds nats.Option) {
	t.Helper()
	nc, err := nats.Connect(b.url, creds, nats.NoReconnect())
	if err == nil {
		nc.Close()
		t.Fatalf("%s connected with credentials that are not its own", user)
	}
	if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("%s was turned away, but not by authorization: %v", user, err)
	}
}

func context5s(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// payload makes a message body no other subtest sends, so a consumer shared across subtests can
// tell this subtest's messages from earlier ones.
func payload(t *testing.T, subject string) string {
	return fmt.Sprintf("%s %s %d", t.Name(), subject, time.Now().UnixNano())
}

// publishesAndIsStored publishes on subject as a JetStream publish and requires the PubAck of
// stream: the grant let it through and the stream stored it. It returns the body it sent.
func (c *client) publishesAndIsStored(t *testing.T, subject, stream string) string {
	t.Helper()
	body := payload(t, subject)
	c.publishesAndIsStoredWith(t, subject, stream, body)
	return body
}

func (c *client) publishesAndIsStoredWith(t *testing.T, subject, stream, body string) {
	t.Helper()
	must(t, c.PublishesAndIsStored(context5s(t), subject, stream, body))
}

// publishesLive publishes on subject without JetStream (heartbeats, answers) and returns the body.
func (c *client) publishesLive(t *testing.T, subject string) string {
	t.Helper()
	body := payload(t, subject)
	must(t, c.PublishesLive(subject, body))
	return body
}

// subscribes subscribes subject and requires the server to take the subscription.
func (c *client) subscribes(t *testing.T, subject string) *nats.Subscription {
	t.Helper()
	sub, err := c.Subscribes(subject)
	must(t, err)
	return sub
}

// pullsAndAcksTwice binds the durable consumer of stream with the user's own grants and pulls
// until every wanted body has arrived, acknowledging each delivery twice (principal's
// PullsAndAcksTwice says why), and returns the wanted messages in the order given.
func (c *client) pullsAndAcksTwice(t *testing.T, stream, consumer string, want ...string) []jetstream.Msg {
	t.Helper()
	got, err := c.PullsAndAcksTwice(context5s(t), stream, consumer, want...)
	must(t, err)
	return got
}

// receivesPushedAndAcksTwice takes the wanted body from a push consumer's delivery subscription
// and acks it twice, `+WPI` then `+ACK` waiting for the server's confirmation.
func (c *client) receivesPushedAndAcksTwice(t *testing.T, sub *nats.Subscription, want string) *nats.Msg {
	t.Helper()
	m, err := c.ReceivesPushedAndAcksTwice(sub, want)
	must(t, err)
	return m
}

// seesNothingAwaitingAck reads a consumer (as a user allowed to) and requires every delivery acked.
func (c *client) seesNothingAwaitingAck(t *testing.T, stream, consumer string) {
	t.Helper()
	if info := c.consumerInfo(t, stream, consumer); info.NumAckPending != 0 {
		t.Fatalf("%d messages on %s/%s still await an ack: the server refused an ack", info.NumAckPending, stream, consumer)
	}
}

// consumerInfo reads a consumer by the API's INFO request, which answers for pull and push
// consumers alike.
func (c *client) consumerInfo(t *testing.T, stream, consumer string) *jetstream.ConsumerInfo {
	t.Helper()
	info, err := c.ConsumerInfo(context5s(t), stream, consumer)
	must(t, err)
	return info
}

// servesSync subscribes a tool in its module's queue group, as its grant requires, leaving the
// calls for the test to read.
func (c *client) servesSync(t *testing.T, tool string) *nats.Subscription {
	t.Helper()
	sub, err := c.ServesSync(tool, toolQueue(tool))
	must(t, err)
	return sub
}

// serves answers every request on a tool subject for the rest of the subtest, subscribed in the
// queue group of the module serving it, as its grant requires.
func (c *client) serves(t *testing.T, tool string) {
	t.Helper()
	_, err := c.Serves(tool, toolQueue(tool), c.Answer)
	must(t, err)
	t.Cleanup(func() {
		if c.nc.LastError() != nil {
			t.Errorf("%s serving %s: %v (violations: %v)", c.user, tool, c.nc.LastError(), c.seen())
		}
	})
}

// toolQueue is the queue group a tool's module serves it in: the module's name, the third token
// of `mesh.mod.<module>.tool.<tool>` (docs/catalogue.md, "Serving a tool").
func toolQueue(tool string) string { return compiler.ToolQueue(strings.Split(tool, ".")[2]) }

// callsAndIsAnswered calls a tool and requires the server's answer from the module serving it.
func (c *client) callsAndIsAnswered(t *testing.T, tool string) {
	t.Helper()
	must(t, c.CallsAndIsAnswered(tool, payload(t, tool)))
}

// receives requires the wanted body to arrive on sub.
func receives(t *testing.T, sub *nats.Subscription, want string) {
	t.Helper()
	must(t, principal.Receives(sub, want, principal.Wait))
}

// receivesNothing requires nothing to arrive on sub. Called after a refusal was already proven by
// its violation, so the short wait only catches a message the server let through anyway.
func receivesNothing(t *testing.T, sub *nats.Subscription) {
	t.Helper()
	must(t, principal.ReceivesNothing(sub, 200*time.Millisecond))
}

// isRefusedPublishing publishes on subject and requires the server's violation for it.
func (c *client) isRefusedPublishing(t *testing.T, subject string) {
	t.Helper()
	must(t, c.IsRefusedPublishing(subject, payload(t, subject)))
}

// isRefusedRequesting sends a request on subject with a reply to the user's own inbox (a pull, an
// API call) and requires the server's violation for it — not merely no answer.
func (c *client) isRefusedRequesting(t *testing.T, subject string) {
	t.Helper()
	must(t, c.IsRefusedRequesting(subject))
}

// isRefusedSubscribing subscribes subject and requires the server's violation for it.
func (c *client) isRefusedSubscribing(t *testing.T, subject string) {
	t.Helper()
	must(t, c.IsRefusedSubscribing(subject))
}

// isRefusedQueueSubscribing subscribes subject in queue group queue and requires the server's
// violation for it.
func (c *client) isRefusedQueueSubscribing(t *testing.T, subject, queue string) {
	t.Helper()
	must(t, c.IsRefusedQueueSubscribing(subject, queue))
}

// refused waits for the server's "Permissions Violation for <op> to "<subject>"" on this
// connection; op is "Publish" or "Subscription".
func (c *client) refused(t *testing.T, op, subject string) {
	t.Helper()
	must(t, c.Refused(principal.Op(op), subject))
}

// violated waits for a violation containing want on this connection; what says what was refused.
func (c *client) violated(t *testing.T, want, what string) {
	t.Helper()
	must(t, c.Violated(want, what, principal.Wait))
}

// sawNoViolation requires that the server never refused this connection anything.
func (c *client) sawNoViolation(t *testing.T) {
	t.Helper()
	must(t, c.SawNoViolation())
}

func (c *client) seen() []string { return c.Seen() }

// must ends the test at a try that failed.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
