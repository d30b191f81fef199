package apply

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshc-dev/meshc/apply/deliver"

	"github.com/meshc-dev/meshc/apply/wire"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/output"
	"github.com/meshc-dev/meshc/internal/testwait"
	"github.com/meshc-dev/meshc/operator"
)

// controller connects as mesh-controller, with the credentials its own signing key issues, as
// `meshc apply` does from CI.
func (m *opMesh) controller(t *testing.T, url string) *wire.Bus {
	t.Helper()
	token, kp, err := operator.IssueUser(m.signers[compiler.ControllerUser], compiler.ControllerUser, m.plan.Operator.Accounts[m.plan.Account])
	if err != nil {
		t.Fatal(err)
	}
	bus, err := wire.Connect(wire.Endpoint{URL: url, User: compiler.ControllerUser, Options: []nats.Option{
		operator.UserOption(token, kp), nats.CustomInboxPrefix(compiler.InboxPrefix(compiler.ControllerUser)),
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bus.Close)
	return bus
}

// pusher is the delivery apply opens, as the CI system user.
func (m *opMesh) pusher(t *testing.T, sys *nats.Conn, url string) *deliver.Pusher {
	t.Helper()
	p, err := deliver.PusherOn(t.Context(), sys, m.plan, deliver.PushOptions{Signer: m.op.Signing,
		Dial: func(extra ...nats.Option) (*nats.Conn, error) { return nats.Connect(url, extra...) }}, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// run is one `meshc apply` in operator mode: the resolver read and written as the system user, the
// bus as mesh-controller.
func (m *opMesh) run(t *testing.T, sys *nats.Conn, url string, opts Options, wait time.Duration) (*Outcome, string, error) {
	t.Helper()
	p := m.pusher(t, sys, url)
	if err := p.Bootstrap(t.Context(), false); err != nil {
		return nil, "", err
	}
	var out bytes.Buffer
	r := &Run{Plan: m.plan, Options: opts, Users: p, NewBus: true, Out: &out, Format: output.Text,
		Lock: wire.LockOptions{Holder: wire.HolderName(m.plan.Account), Wait: wait},
		Read: wire.ReadOptions{RequestTimeout: 5 * time.Second}, Say: func(string) {}}
	res, err := r.Do(t.Context(), m.controller(t, url))
	return res, out.String(), err
}

// heldBy is the JWT every server holds of an account, decoded, failing when they differ.
func heldBy(t *testing.T, r *deliver.Resolver, key string) *jwt.AccountClaims {
	t.Helper()
	answers, err := r.Lookup(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	var out *jwt.AccountClaims
	for _, token := range answers {
		if token == "" {
			return nil
		}
		ac, err := jwt.DecodeAccountClaims(token)
		if err != nil {
			t.Fatal(err)
		}
		if out != nil && out.ID != ac.ID {
			t.Fatalf("servers hold different versions of %s", key)
		}
		out = ac
	}
	return out
}

// dropBob takes person.bob out of the plan: his account, and the tools he was let call.
func (m *opMesh) dropBob() (key string) {
	key = m.plan.Operator.Accounts["person.bob"]
	m.plan.Accounts = slices.DeleteFunc(m.plan.Accounts, func(a compiler.Account) bool { return a.Name == "person.bob" })
	return key
}

// The mesh's account recorded under a new key (its line lost from keys.yaml and minted again) is a
// refusal naming the key the servers hold it under and the streams that live there, before
// anything is pushed or deleted: the old account and its streams stay as they were.
func TestAReKeyedMeshAccountIsRefusedNotDeleted(t *testing.T) {
	t.Parallel()
	m := newOpMesh(t)
	s := runOperatorServer(t, m, "")
	sys := m.system(t, s.ClientURL())
	if _, _, err := m.run(t, sys, s.ClientURL(), Options{}, 5*time.Second); err != nil {
		t.Fatalf("the first apply: %v", err)
	}
	old := m.plan.Operator.Accounts[m.plan.Account]
	r, _ := deliver.NewResolver(t.Context(), sys, 3*time.Second)
	before, _ := r.List(t.Context())

	m.plan.Operator.Accounts[m.plan.Account], _ = catalogue.MintAccountKey()
	err := m.pusher(t, sys, s.ClientURL()).Bootstrap(t.Context(), false)
	if !errors.Is(err, wire.ErrRefused) || !strings.Contains(err.Error(), "recorded under a new key") || !strings.Contains(err.Error(), old) ||
		!strings.Contains(err.Error(), "streams CONTROL, EVENTS, KV_meshc, NODES") || !strings.Contains(err.Error(), "put the old key back in keys.yaml") {
		t.Fatalf("a re-keyed mesh account: %v", err)
	}
	after, _ := r.List(t.Context())
	if len(after) != len(before) || after[old] == 0 || after[m.plan.Operator.Accounts[m.plan.Account]] != 0 {
		t.Fatalf("the refused apply changed the resolver: %v → %v", before, after)
	}
	if ac := heldBy(t, r, old); ac == nil || ac.Tags.Contains(deliver.RevokedTag) {
		t.Fatal("the old mesh account was revoked or deleted")
	}
}

// Under one operator, another catalogue's accounts of the same mesh name are never changed or
// removed: an account this catalogue has that the other's tag marks is a refusal, and one it does
// not have is left alone.
func TestAnotherCataloguesAccountsAreNeverTouched(t *testing.T) {
	t.Parallel()
	m := newOpMesh(t)
	s := runOperatorServer(t, m, "")
	sys := m.system(t, s.ClientURL())
	m.plan.Catalogue = "catalogue-a"
	if _, err := m.push(t, sys, s.ClientURL()); err != nil {
		t.Fatal(err)
	}
	bob := m.plan.Operator.Accounts["person.bob"]
	m.plan.Catalogue = "catalogue-b"
	m.dropBob()
	if _, err := m.push(t, sys, s.ClientURL()); !errors.Is(err, wire.ErrRefused) || !strings.Contains(err.Error(), "another catalogue's or another mesh's tag") {
		t.Fatalf("another catalogue's accounts: %v", err)
	}
	r, _ := deliver.NewResolver(t.Context(), sys, 3*time.Second)
	if ac := heldBy(t, r, bob); ac == nil || ac.Tags.Contains(deliver.RevokedTag) || !ac.Tags.Contains(compiler.CatalogueTag("catalogue-a")) {
		t.Fatalf("catalogue a's bob after catalogue b's apply: %+v", ac)
	}
}

// An account removed while a cluster node is down is revoked, not deleted: the node that missed it
// takes the revoking version from the others when it returns (the newest wins their exchange), so
// the removed user cannot connect to any node, before or after the node's return; the next apply,
// every server up, deletes it, and nothing brings it back.
func TestAnAccountRemovedWithANodeDownStaysRevoked(t *testing.T) {
	m := newOpMesh(t)
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	c := runClusterFrom(t, func(i int) *server.Options {
		o, err := server.ProcessConfigFile(m.conf(t, dirs[i], time.Second, ""))
		if err != nil {
			t.Fatal(err)
		}
		return o
	})
	sys := m.system(t, c.urls())
	if _, err := m.push(t, sys, c.urls()); err != nil {
		t.Fatal(err)
	}
	onNode := func(i int) string { return fmt.Sprintf("nats://127.0.0.1:%d", c.opts[i].Port) }
	bobConn, err := m.as(t, onNode(0), "person.bob")
	if err != nil {
		t.Fatal(err)
	}

	c.stop(2)
	c.waitReady()
	key := m.dropBob()
	did, err := m.push(t, sys, c.urls())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(did.Revoked, []string{"person.bob"}) || len(did.Deleted) != 0 {
		t.Fatalf("with n3 down: revoked %v, deleted %v; want bob revoked and not deleted", did.Revoked, did.Deleted)
	}
	testwait.For(t, "bob's connection to close", 10*time.Second, func() bool { return !bobConn.IsConnected() })
	for _, i := range []int{0, 1} {
		if _, err := m.as(t, onNode(i), "person.bob", nats.NoReconnect()); err == nil {
			t.Fatalf("bob connected to n%d after his account was revoked", i+1)
		}
	}

	c.start(2)
	var r *deliver.Resolver
	testwait.ForNil(t, "n3 to take the revoking version", 30*time.Second, func() error {
		var err error
		if r, err = deliver.NewResolver(t.Context(), sys, 3*time.Second); err != nil || len(r.Servers) < 3 {
			return fmt.Errorf("%d server(s) answer (%v)", len(r.Servers), err)
		}
		answers, err := r.Lookup(t.Context(), key)
		if err != nil || len(answers) < 3 {
			return fmt.Errorf("%d answer(s) (%v)", len(answers), err)
		}
		for _, token := range answers {
			if ac, err := jwt.DecodeAccountClaims(token); err != nil || !ac.Tags.Contains(deliver.RevokedTag) {
				return errors.New("a server holds bob's account unrevoked")
			}
		}
		return nil
	})
	if _, err := m.as(t, onNode(2), "person.bob", nats.NoReconnect()); err == nil {
		t.Fatal("bob connected to n3, which was down when his account was removed")
	}

	did, err = m.push(t, sys, c.urls())
	if err != nil || !slices.Equal(did.Deleted, []string{"person.bob"}) {
		t.Fatalf("every server up: deleted %v (%v), want bob", did.Deleted, err)
	}
	testwait.Never(t, "bob's account back on a server", 3*time.Second, func() bool {
		listed, _ := r.List(t.Context())
		return listed[key] > 0
	})
}

// An apply that waits on another's lock and gives up has pushed nothing: the accounts the
// resolver holds are the versions the other apply left.
func TestAnApplyWaitingOnTheLockPushesNothing(t *testing.T) {
	t.Parallel()
	m := newOpMesh(t)
	s := runOperatorServer(t, m, "")
	sys := m.system(t, s.ClientURL())
	if _, _, err := m.run(t, sys, s.ClientURL(), Options{}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	r, _ := deliver.NewResolver(t.Context(), sys, 3*time.Second)
	before := heldBy(t, r, m.plan.Operator.Accounts[m.plan.Account])

	js, _ := m.controller(t, s.ClientURL()).JetStream()
	lock, err := wire.AcquireLock(t.Context(), js, wire.LockOptions{Holder: "another apply", Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(t.Context())
	// The mesh's account and bob's would both change.
	m.plan.User("person.bob").Publish.Allow = append(m.plan.User("person.bob").Publish.Allow, "mesh.mod.registry.tool.prune")
	i := slices.IndexFunc(m.plan.Accounts, func(a compiler.Account) bool { return a.Name == m.plan.Account })
	m.plan.Accounts[i].Limits.Connections++
	_, _, err = m.run(t, sys, s.ClientURL(), Options{}, 500*time.Millisecond)
	var locked *wire.LockedError
	if !errors.As(err, &locked) {
		t.Fatalf("an apply waiting on the lock: %v", err)
	}
	if after := heldBy(t, r, m.plan.Operator.Accounts[m.plan.Account]); after.ID != before.ID {
		t.Fatal("the apply that never had the lock pushed the mesh's account")
	}
}

// A refused apply changes nothing: an account the catalogue dropped is not revoked, and its user
// stays connected; the stream change that needed a flag is not made.
func TestARefusedApplyLeavesADroppedAccountAndItsUser(t *testing.T) {
	t.Parallel()
	m := newOpMesh(t)
	s := runOperatorServer(t, m, "")
	sys := m.system(t, s.ClientURL())
	if _, _, err := m.run(t, sys, s.ClientURL(), Options{}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	bob, err := m.as(t, s.ClientURL(), "person.bob")
	if err != nil {
		t.Fatal(err)
	}
	key := m.dropBob()
	for i := range m.plan.Streams {
		if m.plan.Streams[i].Config.Name == "EVENTS" {
			m.plan.Streams[i].Config.Storage = jetstream.MemoryStorage
		}
	}
	_, out, err := m.run(t, sys, s.ClientURL(), Options{}, 5*time.Second)
	if !errors.Is(err, wire.ErrRefused) || !strings.Contains(err.Error(), "allow-replace") || !strings.Contains(out, "account person.bob") {
		t.Fatalf("a refused apply: %v\n%s", err, out)
	}
	testwait.Never(t, "bob's connection to close", time.Second, func() bool { return !bob.IsConnected() })
	r, _ := deliver.NewResolver(t.Context(), sys, 3*time.Second)
	if ac := heldBy(t, r, key); ac == nil || ac.Tags.Contains(deliver.RevokedTag) {
		t.Fatal("the refused apply revoked bob's account")
	}
}

// An older version of an account pushed back by someone holding the system user's credentials
// (the resolver stores it unconditionally) is seen: the plan says rolled back, and the apply
// pushes the catalogue's again.
func TestARolledBackAccountIsSaidAndPushedAgain(t *testing.T) {
	t.Parallel()
	m := newOpMesh(t)
	s := runOperatorServer(t, m, "")
	sys := m.system(t, s.ClientURL())
	if _, _, err := m.run(t, sys, s.ClientURL(), Options{}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	key := m.plan.Operator.Accounts["person.bob"]
	r, _ := deliver.NewResolver(t.Context(), sys, 3*time.Second)
	answers, _ := r.Lookup(t.Context(), key)
	v1 := answers[0]
	// bob may call one tool more: a newer version (apply issues each after the newest held).
	m.plan.User("person.bob").Publish.Allow = append(m.plan.User("person.bob").Publish.Allow, "mesh.mod.registry.tool.prune")
	if _, _, err := m.run(t, sys, s.ClientURL(), Options{}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Push(t.Context(), "person.bob", v1); err != nil {
		t.Fatal(err)
	}
	res, out, err := m.run(t, sys, s.ClientURL(), Options{}, 5*time.Second)
	if err != nil || !strings.Contains(out, "rolled back: the servers hold a version of account person.bob issued at") {
		t.Fatalf("after a replayed older JWT: %v\n%s", err, out)
	}
	if !slices.Contains(res.Users.Pushed, "person.bob") {
		t.Fatalf("the apply pushed %v, not bob's account again", res.Users.Pushed)
	}
	if ac := heldBy(t, r, key); ac.IssuedAt <= jwtIssuedAt(t, v1) {
		t.Fatal("the resolver still holds the replayed version")
	}
	if _, out, _ := m.run(t, sys, s.ClientURL(), Options{}, 5*time.Second); strings.Contains(out, "rolled back") || !strings.Contains(out, "users and accounts: unchanged") {
		t.Fatalf("once pushed again: %s", out)
	}
}

func jwtIssuedAt(t *testing.T, token string) int64 {
	ac, err := jwt.DecodeAccountClaims(token)
	if err != nil {
		t.Fatal(err)
	}
	return ac.IssuedAt
}

// The plan's JSON carries the users and accounts: bob gaining a tool is his account's change.
func TestAnAccountChangeIsInThePlansJSON(t *testing.T) {
	t.Parallel()
	m := newOpMesh(t)
	s := runOperatorServer(t, m, "")
	sys := m.system(t, s.ClientURL())
	if _, _, err := m.run(t, sys, s.ClientURL(), Options{}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	m.plan.User("person.bob").Publish.Allow = append(m.plan.User("person.bob").Publish.Allow, "mesh.mod.registry.tool.prune")
	p := m.pusher(t, sys, s.ClientURL())
	held, err := p.Read(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cs := change.Changes{Principals: change.DiffPrincipals(held, p.Wanted(), m.plan.Account), PrincipalsFrom: held.From}
	var out bytes.Buffer
	if err := change.Render(&out, cs, output.JSON); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"users_and_accounts"`, `"kind": "user"`, `"name": "person.bob"`, `"field": "publish allow"`, `"mesh.mod.registry.tool.prune"`} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("the plan's JSON lacks %s:\n%s", want, out.String())
		}
	}
}
