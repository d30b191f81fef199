package apply

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshc-dev/meshc/apply/wire"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/compiler/compilertest"
	"github.com/meshc-dev/meshc/internal/output"
	"github.com/meshc-dev/meshc/internal/testwait"
)

// A meta leader lost in the middle of an apply: the requests that go unanswered during the
// election are retried (docs/nats.md, "Retries and what is transient"), and whatever the first run
// managed, running it again converges.
func TestClusterApplyConvergesWithANodeStoppedMidApply(t *testing.T) {
	c := runCluster(t)
	nc, js := connect(t, c.urls())
	plan := compilertest.MeshPlan(3, jetstream.FileStorage)

	var once sync.Once
	stopped := -1
	opts := Options{
		RetryFor: 20 * time.Second, AttemptTimeout: 2 * time.Second, Concurrency: 4,
		Progress: func(p Progress) {
			// After the first object, the harshest node to lose: the meta leader.
			once.Do(func() {
				for i, s := range c.servers {
					if s != nil && s.JetStreamIsLeader() {
						stopped = i
						c.stop(i)
						return
					}
				}
			})
		},
	}
	start := time.Now()
	cs, res, err := converge(t, nc, js, plan, change.DiffOptions{}, opts)
	t.Logf("first apply with node n%d stopped after the first object: %d of %d applied in %s, err %v",
		stopped+1, res.Applied, len(cs.Items), time.Since(start), err)
	if stopped < 0 {
		t.Fatal("no meta leader was found to stop")
	}

	start = time.Now()
	if _, _, err := converge(t, nc, js, plan, change.DiffOptions{}, Options{RetryFor: 20 * time.Second, AttemptTimeout: 2 * time.Second}); err != nil {
		t.Fatalf("rerunning apply on the two nodes left did not converge: %v", err)
	}
	t.Logf("second apply on 2 of 3 nodes: %s", time.Since(start))
	requireSettled(t, nc, plan, "apply was run again on a cluster with quorum")

	// The node comes back and finds nothing to change.
	c.start(stopped)
	c.waitReady()
	requireSettled(t, nc, plan, "the stopped node is back")
}

// requireSettled waits until every object reads (stream leaders elected) and then requires the
// diff to be empty: an object the server reports missing is also "nothing to change", which
// would let a half-applied bus pass.
func requireSettled(t *testing.T, nc *nats.Conn, plan *compiler.Plan, why string) {
	t.Helper()
	var live *change.State
	testwait.ForNil(t, "every object to read ("+why+")", 15*time.Second, func() error {
		var err error
		live, err = wire.Read(t.Context(), nc, wire.ReadOptions{RequestTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		unavailable := 0
		for _, s := range live.Streams {
			if s.Unavailable != "" || s.ConsumersUnread {
				unavailable++
			}
			for _, c := range s.Consumers {
				if c.Unavailable != "" {
					unavailable++
				}
			}
		}
		if unavailable > 0 {
			return fmt.Errorf("%d objects still read as unavailable", unavailable)
		}
		return nil
	})
	requireEmpty(t, change.Diff(live, plan, change.DiffOptions{Prune: true}), why)
}

// requireListed requires the diff to empty within a few seconds of an apply. In a cluster the
// object lists are answered by the meta leader from the assignments it has applied, but an R1
// consumer's create is answered by the server that hosts it once that server has applied the
// same entry (nats-server 2.15, processClusterCreateConsumer): on a loaded machine the host can
// be first, and a read at once lists the consumer as missing ("+ consumer LONELY/reader", once
// in four CI runs). A half-applied bus does not complete itself, so waiting hides nothing.
func requireListed(t *testing.T, nc *nats.Conn, plan *compiler.Plan, why string) {
	t.Helper()
	testwait.ForNil(t, "the diff to empty ("+why+")", 10*time.Second, func() error {
		if cs := diffNow(t, nc, plan, change.DiffOptions{}); !cs.Empty() || cs.Unreadable() != 0 {
			var b strings.Builder
			_ = change.Render(&b, cs, output.Text)
			return fmt.Errorf("the diff is not empty:\n%s", b.String())
		}
		return nil
	})
}

// What requireListed waits out, on a real cluster: an R1 consumer made on a stream hosted away
// from the meta leader, listed at once after its create is answered, may be missing from the
// list (docs/nats.md, "Reading a bus back": 1 and 2 in 300 here), and a moment later is there.
func TestClusterAListCatchesUpWithTheCreateItTrails(t *testing.T) {
	c := runCluster(t)
	nc, js := connect(t, c.urls())
	host := ""
	for i, s := range c.servers {
		if !s.JetStreamIsLeader() {
			host = fmt.Sprintf("node:n%d", i+1)
		}
	}
	ctx := t.Context()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "AWAY", Subjects: []string{"away.>"}, Placement: &jetstream.Placement{Tags: []string{host}}}); err != nil {
		t.Fatal(err)
	}
	listed := func(name string) error {
		live, err := wire.Read(ctx, nc, wire.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, co := range live.Stream("AWAY").Consumers {
			if co.Name == name {
				return nil
			}
		}
		return fmt.Errorf("consumer %s is not listed", name)
	}
	missed := 0
	for i := range 100 {
		name := fmt.Sprintf("c%d", i)
		if _, err := js.CreateOrUpdateConsumer(ctx, "AWAY", jetstream.ConsumerConfig{Durable: name}); err != nil {
			t.Fatal(err)
		}
		if listed(name) != nil {
			missed++
			testwait.ForNil(t, "a consumer whose create was answered to be listed", 5*time.Second, func() error { return listed(name) })
		}
	}
	t.Logf("stream on %s: %d of 100 lists made at once after a create did not hold the consumer; each did within 5 s", host, missed)
}

// A stream whose only peer is down is reported missing or offline by the server: it is never
// created again (the name is taken), never changed and never pruned, and that is said.
func TestClusterAStreamWhosePeerIsDownIsNeverRecreated(t *testing.T) {
	c := runCluster(t)
	nc, js := connect(t, c.urls())
	// One replica, placed on n3 by its tag.
	plan := &compiler.Plan{
		Streams: []compiler.Stream{
			{Config: jetstream.StreamConfig{Name: "LONELY", Subjects: []string{"lonely.>"}, Replicas: 1,
				Placement: &jetstream.Placement{Tags: []string{"node:n3"}}}},
			{Config: jetstream.StreamConfig{Name: "SAFE", Subjects: []string{"safe.>"}, Replicas: 3}},
		},
		Consumers: []compiler.Consumer{
			{Stream: "LONELY", Config: jetstream.ConsumerConfig{Durable: "reader", MaxDeliver: -1}},
		},
	}
	if _, _, err := converge(t, nc, js, plan, change.DiffOptions{}, Options{}); err != nil {
		t.Fatal(err)
	}
	requireListed(t, nc, plan, "placement and replicas were applied")

	c.stop(2)
	c.waitReady()
	start := time.Now()
	var live *change.State
	// The meta leader learns that n3 is gone a moment after it goes.
	reads := 0
	testwait.ForNil(t, "the stream on the stopped node to read as unavailable", 15*time.Second, func() error {
		var err error
		live, err = wire.Read(t.Context(), nc, wire.ReadOptions{RequestTimeout: 5 * time.Second, RetryFor: 20 * time.Second})
		reads++
		if err != nil {
			t.Fatal(err)
		}
		// The R3 stream may read as missing too while it elects a leader in n3's place.
		if s := live.Stream("LONELY"); s != nil && s.Unavailable != "" && live.Stream("SAFE").Unavailable == "" {
			return nil
		}
		return fmt.Errorf("LONELY reads %+v, SAFE %+v", live.Stream("LONELY"), live.Stream("SAFE"))
	})
	t.Logf("stream on a stopped node reported %q after %s (%d reads), %d requests in the last", live.Stream("LONELY").Unavailable, time.Since(start), reads, live.Requests)

	for _, prune := range []bool{false, true} {
		cs := change.Diff(live, plan, change.DiffOptions{Prune: prune})
		if !cs.Empty() {
			t.Fatalf("a stream that cannot be read is acted on: %s", cs.Summary())
		}
		if cs.Unreadable() != 2 || !strings.Contains(cs.Summary(), "2 of them unreadable") {
			t.Fatalf("the summary hides what could not be read: %s", cs.Summary())
		}
		var said int
		for _, ch := range cs.Items {
			for _, n := range ch.Notes {
				if strings.Contains(n, "not created again") || strings.Contains(n, "could not be read") {
					said++
				}
			}
		}
		if said != 2 {
			t.Fatalf("the stream and its consumer left alone were not both said: %+v", cs.Items)
		}
		// Not in the plan, and unreadable: still not pruned.
		cs = change.Diff(live, &compiler.Plan{Streams: plan.Streams[1:]}, change.DiffOptions{Prune: true})
		if cs.Count(change.Delete) != 0 || len(cs.Notes) != 1 || !strings.Contains(cs.Notes[0], "left alone") {
			t.Fatalf("an unreadable stream was pruned: %s %q", cs.Summary(), cs.Notes)
		}
	}
}

// Ownership on a cluster: R3 buckets, another application's R3 stream and another team's
// consumer on EVENTS survive every flag; what the mesh marked and dropped is pruned; and the
// lock's own bucket is made with three replicas and never listed.
func TestClusterPruneTouchesOnlyWhatTheMeshMarked(t *testing.T) {
	c := runCluster(t)
	nc, js := connect(t, c.urls())
	ctx := t.Context()
	plan := compilertest.MeshPlan(3, jetstream.FileStorage)
	lock, err := wire.AcquireLock(ctx, js, wire.LockOptions{Holder: "cluster test"})
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(ctx)
	if _, _, err := converge(t, nc, js, plan, change.DiffOptions{}, Options{}); err != nil {
		t.Fatal(err)
	}
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "leases", Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "seat", []byte("held")); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateConsumer(ctx, "EVENTS", jetstream.ConsumerConfig{Durable: "audit", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateConsumer(ctx, "EVENTS", jetstream.ConsumerConfig{Durable: "retired", AckPolicy: jetstream.AckExplicitPolicy, Metadata: plan.Marked(nil)}); err != nil {
		t.Fatal(err)
	}

	cs, _, err := converge(t, nc, js, plan, change.DiffOptions{Prune: true}, Options{Prune: true, PurgeNonEmpty: true, AllowReplace: true})
	if err != nil {
		t.Fatal(err)
	}
	if cs.Count(change.Delete) != 1 || !slices.Contains(cs.Unmanaged, "consumer EVENTS/audit") || !slices.Contains(cs.Unmanaged, "stream ORDERS") {
		t.Fatalf("on a cluster: %s, not managed %q", cs.Summary(), cs.Unmanaged)
	}
	requireSettled(t, nc, plan, "the marked consumer the plan dropped was pruned")
	if e, err := kv.Get(ctx, "seat"); err != nil || string(e.Value()) != "held" {
		t.Fatalf("the R3 bucket lost its key: %v", err)
	}
	for _, name := range [][2]string{{"ORDERS", ""}, {"EVENTS", "audit"}} {
		var err error
		if name[1] == "" {
			_, err = js.Stream(ctx, name[0])
		} else {
			_, err = js.Consumer(ctx, name[0], name[1])
		}
		if err != nil {
			t.Fatalf("%v did not survive: %v", name, err)
		}
	}
	state, err := js.Stream(ctx, compiler.ApplyBucketStream)
	if err != nil || state.CachedInfo().Config.Replicas != 3 {
		t.Fatalf("the lock's bucket on a cluster: %v", err)
	}
	// ... and never listed: not a change, not "not managed".
	for _, c := range cs.Items {
		if c.Stream == compiler.ApplyBucketStream {
			t.Fatalf("apply's own bucket is in the change set: %+v", c)
		}
	}
	for _, u := range cs.Unmanaged {
		if strings.Contains(u, compiler.ApplyBucketStream) {
			t.Fatalf("apply's own bucket is listed as not managed: %q", u)
		}
	}
}

// The lock's bucket gets three replicas because the server says it is in a cluster, not because
// the client was given three URLs: a no_advertise cluster's client knows only the URL it was
// given, and still gets R3.
func TestTheLockBucketOfANoAdvertiseClusterHasThreeReplicas(t *testing.T) {
	c := runCluster(t, func(o *server.Options) { o.Cluster.NoAdvertise = true })
	nc, js := connect(t, fmt.Sprintf("nats://127.0.0.1:%d", c.opts[0].Port))
	if n := len(nc.Servers()); n != 1 {
		t.Fatalf("the client of a no_advertise cluster knows %d servers (%q): the case is not set up", n, nc.Servers())
	}
	lock, err := wire.AcquireLock(t.Context(), js, wire.LockOptions{Holder: "no advertise"})
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(t.Context())
	if s, err := js.Stream(t.Context(), compiler.ApplyBucketStream); err != nil || s.CachedInfo().Config.Replicas != 3 {
		t.Fatalf("the lock's bucket on a no_advertise cluster: %+v %v", s, err)
	}
}
