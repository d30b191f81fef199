package apply

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshc-dev/meshc/apply/wire"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/internal/output"
)

// meshBus is a server composed from the accounts.conf meshc emits for the example catalogue,
// with one user added to the mesh's account for another application (all subjects, as a team's
// own service would have), and meshc's side connected as mesh-controller with only its grants.
type meshBus struct {
	plan   *compiler.Plan
	server *server.Server
	url    string
	dir    string
	// controller is mesh-controller's connection: what apply runs as.
	controller *controllerConn
	// other is another application in the same account.
	other jetstream.JetStream
	// passwords of mesh-controller and other-app, for more connections.
	passwords map[string]string
}

type controllerConn struct {
	nc *nats.Conn
	js jetstream.JetStream

	mu         sync.Mutex
	violations []string
}

// requireNoViolation fails if the server refused mesh-controller anything: meshc's own grants
// must cover what apply does.
func (c *controllerConn) requireNoViolation(t *testing.T) {
	t.Helper()
	c.nc.Flush()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.violations) > 0 {
		t.Fatalf("the server refused mesh-controller: %q", c.violations)
	}
}

func examplePlan(t *testing.T) *compiler.Plan {
	t.Helper()
	cat, _, err := catalogue.Load("../examples/mesh")
	if err != nil {
		t.Fatal(err)
	}
	plan, _ := compiler.Compile(catalogue.NewIndex(cat))
	return plan
}

func startMeshBus(t *testing.T) *meshBus {
	t.Helper()
	dir := t.TempDir()
	return startMeshBusIn(t, dir, examplePlan(t))
}

// startMeshBusIn starts (or, with the same dir, restarts) the bus with its store under dir. The
// users named in mintAlso get passwords too, for a test that connects as them.
func startMeshBusIn(t *testing.T, dir string, plan *compiler.Plan, mintAlso ...string) *meshBus {
	t.Helper()
	b := &meshBus{plan: plan, dir: dir, passwords: map[string]string{}}
	pwFile := filepath.Join(dir, "passwords")
	accountsPath := filepath.Join(dir, "accounts.conf")
	if data, err := os.ReadFile(pwFile); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			u, p, _ := strings.Cut(line, " ")
			b.passwords[u] = p
		}
	} else {
		plan = clonePlanUsers(plan)
		mint := func(u *compiler.User) {
			pw, hash, err := catalogue.MintPassword()
			if err != nil {
				t.Fatal(err)
			}
			u.Hash = hash
			b.passwords[u.Name] = pw
		}
		mint(&plan.Users[0])
		for i := range plan.Users {
			if slices.Contains(mintAlso, plan.Users[i].Name) {
				mint(&plan.Users[i])
			}
		}
		// Another application in the mesh's account (the one with JetStream), in either isolation.
		other := compiler.User{Name: "other-app", Kind: compiler.KindPerson, Account: plan.Account,
			Publish: compiler.Permission{Allow: []string{">"}}, Subscribe: compiler.Permission{Allow: []string{">"}}}
		mint(&other)
		plan.Users = append(plan.Users, other)
		accounts, err := emit.Accounts(plan, emit.AccountsOptions{AllowMissing: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(accountsPath, accounts, 0o600); err != nil {
			t.Fatal(err)
		}
		var lines []string
		for u, p := range b.passwords {
			lines = append(lines, u+" "+p)
		}
		if err := os.WriteFile(pwFile, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b.server = runConfiguredIn(t, dir, "include \"accounts.conf\"\n")
	b.url = b.server.ClientURL()
	b.controller = b.connectController(t)
	nc, err := nats.Connect(b.url, nats.UserInfo("other-app", b.passwords["other-app"]))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if b.other, err = jetstream.New(nc, jetstream.WithDefaultTimeout(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	return b
}

func clonePlanUsers(p *compiler.Plan) *compiler.Plan {
	c := *p
	c.Users = slices.Clone(p.Users)
	return &c
}

// connectController connects as mesh-controller the way meshc does: apply.Dial, its own inbox.
func (b *meshBus) connectController(t *testing.T) *controllerConn {
	t.Helper()
	c := &controllerConn{}
	nc, err := wire.Dial(b.url,
		nats.UserInfo(compiler.ControllerUser, b.passwords[compiler.ControllerUser]),
		nats.CustomInboxPrefix("_INBOX."+compiler.ControllerUser),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				c.mu.Lock()
				c.violations = append(c.violations, err.Error())
				c.mu.Unlock()
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c.nc = nc
	if c.js, err = jetstream.New(nc, jetstream.WithDefaultTimeout(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	return c
}

// What meshc did not make survives every flag, as mesh-controller with its emitted grants: a KV
// bucket and an object store holding data, another application's work queue with its consumer,
// and a consumer another team added to EVENTS. What meshc did make and the plan dropped is
// pruned; what the plan names but meshc did not mark is adopted.
func TestPruneTouchesOnlyWhatTheMeshMarked(t *testing.T) {
	t.Parallel()
	b := startMeshBus(t)
	ctx := t.Context()
	plan := b.plan
	ctl := b.controller

	// Before meshc ever ran: CONTROL made by hand, with the plan's settings and no mark.
	control := plan.Streams[slices.IndexFunc(plan.Streams, func(s compiler.Stream) bool { return s.Config.Name == compiler.ControlStream })].Config
	control.Metadata = nil
	if _, err := b.other.CreateStream(ctx, control); err != nil {
		t.Fatal(err)
	}
	cs := diffNow(t, ctl.nc, plan, change.DiffOptions{Prune: true})
	c := findChange(t, cs, change.KindStream, compiler.ControlStream, "")
	if c.Action != change.Update || len(c.Fields) != 1 || c.Fields[0].Name != "metadata" || !c.Adopts {
		t.Fatalf("a stream the plan names and meshc did not mark is adopted by an update of its metadata alone, got %+v", c)
	}
	if _, err := Apply(ctx, ctl.js, cs, Options{}); !errors.Is(err, wire.ErrRefused) || !strings.Contains(err.Error(), "--adopt") {
		t.Fatalf("adopting an unmarked stream without --adopt: %v", err)
	}
	if _, err := Apply(ctx, ctl.js, cs, Options{Adopt: true}); err != nil {
		t.Fatal(err)
	}
	requireEmpty(t, diffNow(t, ctl.nc, plan, change.DiffOptions{Prune: true}), "the plan was applied")
	if info, err := ctl.js.Stream(ctx, compiler.ControlStream); err != nil || info.CachedInfo().Config.Metadata[compiler.OwnerKey] != plan.Account {
		t.Fatalf("the adopted stream does not carry the mark: %v", err)
	}

	// Another application and another team, in the mesh's account.
	kv, err := b.other.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "leases"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "seat.a", []byte("held")); err != nil {
		t.Fatal(err)
	}
	obj, err := b.other.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "blobs"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := obj.PutBytes(ctx, "image", []byte("bytes")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.other.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Retention: jetstream.WorkQueuePolicy}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.other.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "worker", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.other.CreateConsumer(ctx, compiler.EventsStream, jetstream.ConsumerConfig{Durable: "audit", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	// What an older catalogue had meshc make: marked, and no longer in the plan.
	mark := plan.Marked(nil)
	if _, err := ctl.js.CreateStream(ctx, jetstream.StreamConfig{Name: "SEAT_RETIRED", Subjects: []string{"mesh.seat.retired.accept.>"}, Retention: jetstream.WorkQueuePolicy, Metadata: mark}); err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.js.CreateConsumer(ctx, compiler.EventsStream, jetstream.ConsumerConfig{Durable: "retired_module", AckPolicy: jetstream.AckExplicitPolicy, Metadata: mark}); err != nil {
		t.Fatal(err)
	}

	cs = diffNow(t, ctl.nc, plan, change.DiffOptions{Prune: true})
	var deletes []string
	for _, c := range cs.Items {
		if c.Action != change.NoOp {
			deletes = append(deletes, c.Action.String()+" "+c.Name())
		}
	}
	if want := []string{"- SEAT_RETIRED", "- EVENTS/retired_module"}; !slices.Equal(deletes, want) {
		t.Fatalf("with prune, the changes are %q; want only what the mesh marked: %q", deletes, want)
	}
	wantUnmanaged := []string{"stream KV_leases (key-value bucket leases)", "stream OBJ_blobs (object store blobs)", "stream ORDERS", "consumer EVENTS/audit"}
	if !slices.Equal(cs.Unmanaged, wantUnmanaged) {
		t.Fatalf("not managed: %q, want %q", cs.Unmanaged, wantUnmanaged)
	}
	var text bytes.Buffer
	if err := change.Render(&text, cs, output.Text); err != nil || !strings.Contains(text.String(), "Not managed by meshc") {
		t.Fatalf("plan does not show what is not managed: %v\n%s", err, text.String())
	}

	// A plan that would replace EVENTS cannot: the replace would take the other team's consumer.
	replacing := clonePlanUsers(plan)
	replacing.Streams = slices.Clone(plan.Streams)
	for i := range replacing.Streams {
		if replacing.Streams[i].Config.Name == compiler.EventsStream {
			replacing.Streams[i].Config.Storage = jetstream.MemoryStorage
		}
	}
	all := Options{Prune: true, PurgeNonEmpty: true, AllowReplace: true}
	_, err = Apply(ctx, ctl.js, diffNow(t, ctl.nc, replacing, change.DiffOptions{Prune: true}), all)
	if !errors.Is(err, wire.ErrRefused) || !strings.Contains(err.Error(), "EVENTS/audit") {
		t.Fatalf("a replace that deletes another team's consumer was not refused: %v", err)
	}

	// Every flag at once.
	if _, err := Apply(ctx, ctl.js, cs, all); err != nil {
		t.Fatal(err)
	}
	requireEmpty(t, diffNow(t, ctl.nc, plan, change.DiffOptions{Prune: true}), "everything the mesh marked and dropped was pruned")
	if e, err := kv.Get(ctx, "seat.a"); err != nil || string(e.Value()) != "held" {
		t.Fatalf("the KV bucket lost its key: %v", err)
	}
	if data, err := obj.GetBytes(ctx, "image"); err != nil || string(data) != "bytes" {
		t.Fatalf("the object store lost its object: %v", err)
	}
	if _, err := b.other.Consumer(ctx, "ORDERS", "worker"); err != nil {
		t.Fatalf("another application's consumer is gone: %v", err)
	}
	if _, err := b.other.Consumer(ctx, compiler.EventsStream, "audit"); err != nil {
		t.Fatalf("another team's consumer on EVENTS is gone: %v", err)
	}
	for _, gone := range []func() error{
		func() error { _, err := ctl.js.Stream(ctx, "SEAT_RETIRED"); return err },
		func() error { _, err := ctl.js.Consumer(ctx, compiler.EventsStream, "retired_module"); return err },
	} {
		if err := gone(); err == nil {
			t.Fatal("an object the mesh marked and the plan dropped survived --prune")
		}
	}
	ctl.requireNoViolation(t)
}

func findChange(t *testing.T, cs change.Changes, kind change.Kind, stream, consumer string) change.Change {
	t.Helper()
	for _, c := range cs.Items {
		if c.Kind == kind && c.Stream == stream && c.Consumer == consumer {
			return c
		}
	}
	t.Fatalf("no change for %s %s/%s", kind, stream, consumer)
	return change.Change{}
}
