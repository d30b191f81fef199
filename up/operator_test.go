package up

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/testwait"
)

func compileProof(t *testing.T, isolation, auth string) *compiler.Plan {
	t.Helper()
	c, _ := cataloguetest.Load(t, "../proof/testdata/proof.txtar")
	c.Mesh.Isolation.Value, c.Mesh.Auth.Value = isolation, auth
	p, _ := compiler.Compile(catalogue.NewIndex(c))
	return p
}

// startOperatorBus runs plan in operator mode on a development operator, for the test.
func startOperatorBus(t *testing.T, plan *compiler.Plan) *Bus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, _, err := Start(ctx, plan, Options{State: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	return b
}

// A bus that ran from an accounts file moves to operator mode without losing its streams: JetStream
// kept them under the mesh's account name, and in operator mode looks under the account's key, so
// the directory is moved before the server starts. Every stored event and every consumer's
// position is there after the move. Both directories there at once is refused, naming both.
func TestStreamsSurviveTheMoveToOperatorMode(t *testing.T) {
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	before, _, err := Start(ctx, compileProof(t, catalogue.IsolationShared, catalogue.AuthPassword), Options{State: state})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := before.Connect("mod.anchor.catalog")
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	for range 3 {
		if _, err := js.Publish(ctx, "mesh.mod.catalog.event.upgraded", []byte("before the move")); err != nil {
			t.Fatal(err)
		}
	}
	nc.Close()
	before.Stop()

	after, _, err := Start(ctx, compileProof(t, catalogue.IsolationPerModule, catalogue.AuthOperator), Options{State: state})
	if err != nil {
		t.Fatalf("starting in operator mode on the same state: %v", err)
	}
	defer after.Stop()
	if !after.Pushed.MeshNew {
		t.Error("the resolver held the mesh's account before its first push")
	}
	controller, err := after.Connect(compiler.ControllerUser)
	if err != nil {
		t.Fatal(err)
	}
	defer controller.Close()
	cjs, _ := jetstream.New(controller)
	events, err := cjs.Stream(ctx, "EVENTS")
	if err != nil {
		t.Fatalf("EVENTS after the move: %v", err)
	}
	if info, _ := events.Info(ctx); info.State.Msgs != 3 {
		t.Fatalf("EVENTS holds %d messages after the move, want the 3 stored before", info.State.Msgs)
	}
	notifier, err := after.Connect("mod.laptop.notifier")
	if err != nil {
		t.Fatal(err)
	}
	defer notifier.Close()
	njs, _ := jetstream.New(notifier)
	consumer, err := njs.Consumer(ctx, "EVENTS", "laptop_notifier")
	if err != nil {
		t.Fatal(err)
	}
	batch, err := consumer.Fetch(3, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for m := range batch.Messages() {
		if string(m.Data()) == "before the move" {
			n++
		}
		m.Ack()
	}
	if n != 3 {
		t.Fatalf("the consumer delivered %d of the 3 events stored before the move", n)
	}
	after.Stop()

	// Both directories: the mesh's name again beside its key, as a second accounts-file run would
	// leave it.
	base := filepath.Join(state, "jetstream", "jetstream")
	if err := os.MkdirAll(filepath.Join(base, "proof"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Start(ctx, compileProof(t, catalogue.IsolationPerModule, catalogue.AuthOperator), Options{State: state}); err == nil || !strings.Contains(err.Error(), "both") {
		t.Fatalf("both directories: %v", err)
	}
}

// A running bus in operator mode takes a catalogue change as pushes: the accounts that changed and
// nothing else, no reload, the new user working, and a client of another account still connected.
func TestUpdatePushesWithoutAReload(t *testing.T) {
	plan := compileProof(t, catalogue.IsolationPerModule, catalogue.AuthOperator)
	b := startOperatorBus(t, plan)
	catalog, err := b.Connect("mod.anchor.catalog")
	if err != nil {
		t.Fatal(err)
	}
	defer catalog.Close()
	cid, _ := catalog.GetClientID()

	// bob may now call prune too: his account changes, and nothing else.
	changed := compileProof(t, catalogue.IsolationPerModule, catalogue.AuthOperator)
	bob := changed.User("person.bob")
	bob.Publish.Allow = append(bob.Publish.Allow, "mesh.mod.registry.tool.prune")
	i := slices.IndexFunc(changed.Accounts, func(a compiler.Account) bool { return a.Name == "person.bob" })
	changed.Accounts[i].Imports = append(changed.Accounts[i].Imports, compiler.Import{Kind: compiler.ServiceExport, Subject: "mesh.mod.registry.tool.prune", Account: "mod.registry"})
	reloads, _, err := b.Update(t.Context(), changed)
	if err != nil {
		t.Fatal(err)
	}
	if reloads != 0 || !slices.Equal(b.Pushed.Pushed, []string{"person.bob"}) {
		t.Fatalf("update: %d reloads, pushed %v", reloads, b.Pushed.Pushed)
	}
	registry, _ := b.Connect("serve.anchor.registry")
	defer registry.Close()
	registry.QueueSubscribe("mesh.mod.registry.tool.prune", "registry", func(m *nats.Msg) { m.Respond([]byte("pruned")) })
	registry.Flush()
	caller, err := b.Connect("person.bob")
	if err != nil {
		t.Fatal(err)
	}
	defer caller.Close()
	if m, err := caller.Request("mesh.mod.registry.tool.prune", nil, 2*time.Second); err != nil || string(m.Data) != "pruned" {
		t.Fatalf("bob's new call: %v", err)
	}
	if now, _ := catalog.GetClientID(); now != cid || !catalog.IsConnected() {
		t.Fatal("a client of another account was disconnected by the push")
	}
}

// An account JWT carries the limits accounts.conf gives the same account (docs/catalogue.md,
// "Limits and their defaults"): a user's connections past its account's share and the probe's
// one are refused, and so is a subscription past the account's per-connection maximum.
func TestOperatorModeAccountsHoldTheirLimits(t *testing.T) {
	plan := compileProof(t, catalogue.IsolationPerModule, catalogue.AuthOperator)
	b := startOperatorBus(t, plan)
	i := slices.IndexFunc(plan.Accounts, func(a compiler.Account) bool { return a.Name == plan.User("person.bob").Account })
	if i < 0 {
		t.Fatal("person.bob has no account")
	}
	bob := plan.Accounts[i]
	if len(bob.Users) != 1 || bob.Limits.Connections == 0 || bob.Limits.Subscriptions == 0 {
		t.Fatalf("person.bob's account: %+v", bob)
	}
	allowed := int(bob.Limits.Connections) + 1 // the probe's
	var conns []*nats.Conn
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	for i := range allowed {
		nc, err := b.Connect("person.bob")
		if err != nil {
			t.Fatalf("connection %d of the %d allowed: %v", i+1, allowed, err)
		}
		conns = append(conns, nc)
	}
	if nc, err := b.Connect("person.bob"); err == nil {
		nc.Close()
		t.Fatalf("connection %d, past the account's %d, was accepted", allowed+1, allowed)
	} else if !strings.Contains(err.Error(), "maximum account active connections") {
		t.Fatalf("connection past the limit refused for another reason: %v", err)
	}

	// A connection free again, dialled as a client does (apply.Dial keeps its own error handler).
	conns[0].Close()
	conns = conns[1:]
	refused := make(chan error, 1)
	var nc *nats.Conn
	testwait.ForNil(t, "a connection to be free again", 10*time.Second, func() (err error) {
		nc, err = nats.Connect(b.URL, b.As("person.bob"), nats.CustomInboxPrefix(compiler.InboxPrefix("person.bob")),
			nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
				select {
				case refused <- err:
				default:
				}
			}))
		return err
	})
	conns = append(conns, nc)
	for i := range int(bob.Limits.Subscriptions) + 1 {
		if _, err := nc.SubscribeSync(fmt.Sprintf("%s.limit.%d", compiler.InboxPrefix("person.bob"), i)); err != nil {
			t.Fatal(err)
		}
	}
	nc.Flush()
	select {
	case err := <-refused:
		if !errors.Is(err, nats.ErrMaxSubscriptionsExceeded) {
			t.Fatalf("the subscription past the limit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("subscription %d, past the account's %d per connection, was accepted", bob.Limits.Subscriptions+1, bob.Limits.Subscriptions)
	}
}
