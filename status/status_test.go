package status

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/apply/wire"
	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/internal/output"
	"github.com/meshc-dev/meshc/lint"
	"github.com/meshc-dev/meshc/up"
)

// meshc status against `meshc up`'s bus, read as mesh-controller: catalog runs and emits, and is
// connected; notifier, which consumes catalog's event, is stopped, so it is not connected and its
// consumer is behind by what catalog emitted; audit's consumer, whose module pulled and acked,
// is caught up; a consumer changed by hand on the bus differs from the plan, naming the field.
func TestStatusShowsAStoppedModuleAndAConsumerBehind(t *testing.T) {
	cat, loaded := cataloguetest.Load(t, "testdata/mesh.txtar")
	cat.Mesh.Isolation.Value = catalogue.IsolationPerModule
	_, plan := lint.Check(cat, loaded)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, _, err := up.Start(ctx, plan, up.Options{State: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()

	catalog, err := b.Connect("mod.anchor.catalog")
	if err != nil {
		t.Fatal(err)
	}
	defer catalog.Close()
	js, _ := jetstream.New(catalog)
	for range 3 {
		if _, err := js.Publish(ctx, "mesh.mod.catalog.event.upgraded", []byte("upgraded")); err != nil {
			t.Fatal(err)
		}
	}
	audit, err := b.Connect("mod.laptop.audit")
	if err != nil {
		t.Fatal(err)
	}
	defer audit.Close()
	ajs, _ := jetstream.New(audit)
	cons, err := ajs.Consumer(ctx, "EVENTS", "laptop_audit")
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(3, jetstream.FetchMaxWait(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	controller, err := wire.Connect(b.Controller())
	if err != nil {
		t.Fatal(err)
	}
	defer controller.Close()
	cjs, _ := controller.JetStream()
	holder, err := cjs.Consumer(ctx, "SEAT_IMAGE_STORE", "holder")
	if err != nil {
		t.Fatal(err)
	}
	changed := holder.CachedInfo().Config
	changed.AckWait = 3 * time.Minute
	if _, err := cjs.UpdateConsumer(ctx, "SEAT_IMAGE_STORE", changed); err != nil {
		t.Fatal(err)
	}

	r, err := Read(ctx, controller, plan, FromServer(b.Server))
	if err != nil {
		t.Fatal(err)
	}
	modules := map[string]Principal{}
	for _, m := range r.Machines {
		for _, p := range m.Modules {
			modules[p.User] = p
		}
	}
	if p := modules["mod.anchor.catalog"]; p.Connected == nil || !*p.Connected || len(p.Connections) != 1 || p.Connections[0].InMsgs < 3 {
		t.Errorf("catalog, running and emitting, is not shown connected with what it sent: %+v", p)
	}
	notifier := modules["mod.laptop.notifier"]
	if notifier.Connected == nil || *notifier.Connected {
		t.Errorf("notifier, stopped, is not shown as not connected: %+v", notifier)
	}
	if len(notifier.Consumers) != 1 || notifier.Consumers[0].Pending != 3 || notifier.Consumers[0].Plan != "matches" {
		t.Errorf("notifier's consumer is not shown 3 behind and as planned: %+v", notifier.Consumers)
	}
	if c := modules["mod.laptop.audit"].Consumers; len(c) != 1 || c[0].Pending != 0 || c[0].AckPending != 0 {
		t.Errorf("audit's consumer, read to its end, is not caught up: %+v", c)
	}
	if c := modules["mod.anchor.registry"].Consumers; len(c) != 1 || c[0].Name != "holder" || c[0].Plan != "differs: ack_wait" {
		t.Errorf("the seat's holder consumer, changed by hand, is not shown to its holder as differing in ack_wait: %+v", c)
	}
	var text bytes.Buffer
	if err := Write(&text, output.Text, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"machine laptop",
		"notifier               not connected",
		"consumer EVENTS/laptop_notifier: behind: 3 pending, 0 awaiting an ack; matches",
		"consumer EVENTS/laptop_audit: caught up; matches",
		"catalog                connected (1 connection",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text does not say %q:\n%s", want, text.String())
		}
	}
	for _, s := range r.Streams {
		if s.Plan != "matches" {
			t.Errorf("stream %s is %q, want matches", s.Name, s.Plan)
		}
	}
}
