package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/meshc-dev/meshc/apply/wire"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/natsproc"
)

// The first JetStream check, made as meshc connects, rides out a meta-leader election: the
// survivors answer 10008 (or nothing) until they elect a new leader, and that is asked again
// rather than taken as a cluster that is down.
func TestTheFirstJetStreamCheckRidesOutAMetaLeaderElection(t *testing.T) {
	c := runCluster(t)
	leader := -1
	for i, s := range c.servers {
		if s.JetStreamIsLeader() {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no meta leader")
	}
	other := (leader + 1) % 3
	bus, err := wire.Connect(wire.Endpoint{URL: fmt.Sprintf("nats://127.0.0.1:%d", c.opts[other].Port)})
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	c.stop(leader)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	if err := bus.CheckJetStream(ctx, 2*time.Second); err != nil {
		t.Fatalf("the JetStream check during a meta-leader election: %v", err)
	}
}

// A cluster of two JetStream servers answers a three-replica bucket with 10005 (no suitable
// peers), not 10023: the lock's bucket then takes the two it can place, and apply runs there.
func TestTheLockOfATwoNodeCluster(t *testing.T) {
	// The count a fresh cluster cannot place yet is asked again for placementWait first.
	was := wire.PlacementWait
	wire.PlacementWait = time.Second
	t.Cleanup(func() { wire.PlacementWait = was })
	c := runClusterOf(t, 2, nil)
	_, js := connect(t, c.urls())
	lock, err := wire.AcquireLock(t.Context(), js, wire.LockOptions{Holder: "two nodes"})
	if err != nil {
		t.Fatalf("the lock on a two-node cluster: %v", err)
	}
	defer lock.Release(t.Context())
	s, err := js.Stream(t.Context(), compiler.ApplyBucketStream)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := s.CachedInfo().Config; cfg.Replicas != 2 || !strings.Contains(cfg.Description, "made with 2 replica(s)") {
		t.Fatalf("the lock's bucket on two nodes has %d replicas, described %q", cfg.Replicas, cfg.Description)
	}
}

// A lock record claiming to last a year is not one an apply wrote (an apply's lasts a minute past
// its last renewal): whoever could write the bucket — in one account, a caller and a tool server
// steering an answer there — would otherwise hold every apply off for the year. A record an apply
// wrote still holds, however its holder's clock differs by a few minutes.
func TestALockRecordClaimingAYearIsNotHeld(t *testing.T) {
	t.Parallel()
	_, js := connect(t, runServer(t).ClientURL())
	kv, err := wire.StateBucket(t.Context(), js)
	if err != nil {
		t.Fatal(err)
	}
	write := func(h wire.LockHolder) {
		t.Helper()
		data, _ := json.Marshal(h)
		if _, err := kv.Put(t.Context(), wire.LockKey, data); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	write(wire.LockHolder{Holder: "an apply on a clock five minutes ahead", Started: now, Expires: now.Add(6 * time.Minute)})
	var locked *wire.LockedError
	if _, err := wire.AcquireLock(t.Context(), js, wire.LockOptions{Holder: "me"}); !errors.As(err, &locked) {
		t.Fatalf("a lock an apply could have written was not held against the next: %v", err)
	}

	write(wire.LockHolder{Holder: "mallory", Started: now, Expires: now.Add(365 * 24 * time.Hour)})
	var took, why string
	lock, err := wire.AcquireLock(t.Context(), js, wire.LockOptions{Holder: "me", TookOver: func(h wire.LockHolder, w string) { took, why = h.Holder, w }})
	if err != nil {
		t.Fatalf("a lock record claiming a year held the apply off: %v", err)
	}
	defer lock.Release(t.Context())
	if took != "mallory" || !strings.Contains(why, "no apply wrote it") {
		t.Fatalf("the takeover said %q: %q", took, why)
	}
}

// A lock request lost to the bucket's stream leader — stopped (SIGSTOP) as a frozen machine is,
// holding its connections and answering nothing — is asked again once the others elect a new
// leader, instead of waiting out apply's whole deadline on the first request.
func TestALockRequestLostToAStoppedLeaderIsAskedAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("three nats-server processes and a leader election: not with -short")
	}
	c := natsproc.StartCluster(t, 3, "", nil)
	nc, js := connect(t, c.URLs())
	lock, err := wire.AcquireLock(t.Context(), js, wire.LockOptions{Holder: "first"})
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(t.Context(), compiler.ApplyBucketStream)
	if err != nil || s.CachedInfo().Cluster == nil || s.CachedInfo().Config.Replicas != 3 {
		t.Fatalf("the bucket's stream: %+v %+v %v", s.CachedInfo().Config, s.CachedInfo().Cluster, err)
	}
	leaderName := s.CachedInfo().Cluster.Leader
	var leader *natsproc.Server
	var others []string
	for _, srv := range c.Servers {
		if srv.Name == leaderName {
			leader = srv
		} else {
			others = append(others, srv.URL())
		}
	}
	if leader == nil {
		t.Fatalf("the bucket's leader %q is none of the nodes", leaderName)
	}
	nc.Close()
	_, js = connect(t, strings.Join(others, ","))
	leader.Pause()
	defer leader.Resume()

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	lock, err = wire.AcquireLock(ctx, js, wire.LockOptions{Holder: "second", AttemptTimeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("taking the lock with its stream's leader stopped, after %s: %v", time.Since(start), err)
	}
	lock.Release(context.Background())
	t.Logf("the lock was taken %s after its stream's leader stopped", time.Since(start).Round(time.Millisecond))
}

// A server without JetStream of its own, in a cluster whose other servers run it, has its
// JetStream API answered by them: its INFO saying it has none shortens only the wait on "no
// responders" (wire.Bus.CheckJetStream), and never refuses a bus that answers.
func TestAServerWithoutJetStreamInAJetStreamClusterIsAnswered(t *testing.T) {
	c := runCluster(t, func(o *server.Options) {
		if o.ServerName == "n3" {
			o.JetStream = false
		}
	})
	bus, err := wire.Connect(wire.Endpoint{URL: fmt.Sprintf("nats://127.0.0.1:%d", c.opts[2].Port)})
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	if js, _ := bus.Conn.ConnectedServerJetStream(); js {
		t.Fatal("n3 says in its INFO that it runs JetStream")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := bus.CheckJetStream(ctx, 2*time.Second); err != nil {
		t.Fatalf("the JetStream check through a server without JetStream of its own: %v", err)
	}
}
