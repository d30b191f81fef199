package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/internal/testwait"
)

// Switching a running bus from one account to an account per principal: every account the reload
// creates has dead service imports until the server reloads again (docs/nats.md, "Reload and scale
// with many accounts"), so up reloads twice when the accounts file gains accounts. Proven by what a
// module does right after: publish an event and get its PubAck (through a service import of a new
// account), and call a tool.
func TestUpSwitchesARunningBusToAnAccountPerPrincipal(t *testing.T) {
	dir := cataloguetest.Extract(t, "testdata/up.txtar")
	if err := os.WriteFile(filepath.Join(dir, "mesh.yaml"), []byte("name: novox\nisolation: shared-account\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := startUp(t, dir)
	url, state, stderr := r.url, r.state, &r.stderr

	// Saying nothing is an account per module.
	if err := os.WriteFile(filepath.Join(dir, "mesh.yaml"), []byte("name: novox\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the reload", 20*time.Second, func() bool { return strings.Contains(stderr.String(), "reloaded the accounts in place") })
	testwait.For(t, "the apply after it", 20*time.Second, func() bool { return strings.Contains(stderr.String(), "applied: ") })

	connect := func(user string) *nats.Conn {
		nc, err := nats.Connect(url, nats.UserInfo(user, devPassword(t, state, user)), nats.CustomInboxPrefix("_INBOX."+user))
		if err != nil {
			t.Fatalf("%s cannot connect after the switch: %v", user, err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	server := connect("serve.anchor.catalog")
	if _, err := server.QueueSubscribe("mesh.mod.catalog.tool.lookup", "catalog", func(m *nats.Msg) { m.Respond([]byte("found")) }); err != nil {
		t.Fatal(err)
	}
	server.Flush()
	catalog := connect("mod.anchor.catalog")
	builder := connect("mod.anchor.builder")
	js, err := jetstream.New(builder)
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer pcancel()
	if ack, err := js.Publish(pctx, "mesh.mod.builder.event.built", []byte("built")); err != nil || ack.Stream != "EVENTS" {
		t.Fatalf("a module's event after the switch got no PubAck from EVENTS: %v %v\n%s", ack, err, stderr.String())
	}
	cjs, err := jetstream.New(catalog)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := cjs.Consumer(pctx, "EVENTS", "anchor_catalog")
	if err != nil {
		t.Fatalf("catalog cannot bind its consumer after the switch: %v", err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for m := range batch.Messages() {
		got++
		if err := m.DoubleAck(pctx); err != nil {
			t.Fatalf("catalog's ack after the switch: %v", err)
		}
	}
	if got != 1 {
		t.Fatalf("catalog's consumer delivered %d messages after the switch, want 1 (%v)", got, batch.Error())
	}
}

// apply --accounts --reload switching a running nats-server to an account per principal signals
// it twice, so a person's call through the service import of an account the reload created is
// answered at once.
func TestApplyAccountsReloadsTwiceWhenAccountsAreAdded(t *testing.T) {
	b := newDeliveryBus(t, true, func(t *testing.T, dir string) {
		withDave(t, dir)
		if err := os.WriteFile(filepath.Join(dir, "mesh.yaml"), []byte("name: novox\nisolation: shared-account\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	dir, pw, accounts, s, monitor := b.dir, b.pw, b.accounts, b.s, b.s.monitor

	if err := os.WriteFile(filepath.Join(dir, "mesh.yaml"), []byte("name: novox\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := meshc(t, "apply", dir, "--accounts", accounts, "--reload", s.pid(), "--monitor", monitor)
	if code != 0 || !strings.Contains(errs, "the server reloaded it twice") {
		t.Fatalf("apply --accounts --reload adding accounts: %d %s", code, errs)
	}
	catalog, err := nats.Connect(s.url, nats.UserInfo("serve.anchor.catalog", pw["serve.anchor.catalog"]))
	if err != nil {
		t.Fatal(err)
	}
	defer catalog.Close()
	if _, err := catalog.QueueSubscribe("mesh.mod.catalog.tool.lookup", "catalog", func(m *nats.Msg) { m.Respond([]byte("found")) }); err != nil {
		t.Fatal(err)
	}
	catalog.Flush()
	dave, err := nats.Connect(s.url, nats.UserInfo("person.dave", pw["person.dave"]), nats.CustomInboxPrefix("_INBOX.person.dave"))
	if err != nil {
		t.Fatal(err)
	}
	defer dave.Close()
	if reply, err := dave.Request("mesh.mod.catalog.tool.lookup", []byte("?"), 2*time.Second); err != nil || string(reply.Data) != "found" {
		t.Fatalf("dave's call through his new account's import: %v %v", reply, err)
	}
}
