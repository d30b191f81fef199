package apply

import (
	"context"
	"errors"
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
	"github.com/meshc-dev/meshc/internal/natstest"
)

// applyLocked is what meshc apply does: lock, then read, diff and apply under the lock, then
// release. Reading after the lock is the point: a state read before it may be changing.
func applyLocked(t *testing.T, ctl *controllerConn, plan *compiler.Plan, holder string, wait time.Duration) error {
	lock, err := wire.AcquireLock(t.Context(), ctl.js, wire.LockOptions{Holder: holder, Wait: wait})
	if err != nil {
		return err
	}
	defer lock.Release(context.Background())
	live, err := wire.Read(lock.Context(), ctl.nc, wire.ReadOptions{})
	if err != nil {
		return err
	}
	_, err = Apply(lock.Context(), ctl.js, change.Diff(live, plan, change.DiffOptions{Prune: true}), Options{Prune: true})
	return err
}

// Two applies of two catalogues at the same moment, as mesh-controller: one waits for the
// other, so the bus ends as exactly one of them and holds nothing of a half-done other.
func TestTwoAppliesAtOnceEndAsOneOfThem(t *testing.T) {
	t.Parallel()
	b := startMeshBus(t)
	planA := b.plan
	planB := clonePlanUsers(planA)
	planB.Streams = slices.Clone(planA.Streams)
	planB.Consumers = slices.Clone(planA.Consumers)
	for i := range planB.Streams {
		planB.Streams[i].Config.Description = "catalogue B"
	}
	for i := range planB.Consumers {
		planB.Consumers[i].Config.AckWait += time.Second
	}
	ctlA, ctlB := b.controller, b.connectController(t)

	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, run := range []struct {
		ctl  *controllerConn
		plan *compiler.Plan
	}{{ctlA, planA}, {ctlB, planB}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = applyLocked(t, run.ctl, run.plan, []string{"apply A", "apply B"}[i], time.Minute)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("two applies at once: %v", err)
	}
	emptyA := diffNow(t, ctlA.nc, planA, change.DiffOptions{Prune: true}).Empty()
	emptyB := diffNow(t, ctlA.nc, planB, change.DiffOptions{Prune: true}).Empty()
	if emptyA == emptyB {
		t.Fatalf("the bus matches catalogue A: %v, catalogue B: %v; want exactly one", emptyA, emptyB)
	}
	ctlA.requireNoViolation(t)
	ctlB.requireNoViolation(t)
}

// A held lock turns a second apply away once its wait is over, naming the holder; released, it
// is free again; broken, it says whose it was, and the holder learns at its next renewal.
func TestTheLockNamesItsHolderAndCanBeBroken(t *testing.T) {
	t.Parallel()
	b := startMeshBus(t)
	ctx := t.Context()
	ctl := b.controller
	first, err := wire.AcquireLock(ctx, ctl.js, wire.LockOptions{Holder: "ci@build-7 pid 42", TTL: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = wire.AcquireLock(ctx, ctl.js, wire.LockOptions{Holder: "ops@laptop", Wait: 300 * time.Millisecond})
	var locked *wire.LockedError
	if !errors.As(err, &locked) || locked.By.Holder != "ci@build-7 pid 42" || !strings.Contains(err.Error(), "--break-lock") {
		t.Fatalf("a second apply while the lock is held: %v", err)
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	second, err := wire.AcquireLock(ctx, ctl.js, wire.LockOptions{Holder: "ops@laptop", TTL: 3 * time.Second})
	if err != nil {
		t.Fatalf("a released lock was not free: %v", err)
	}

	broken, err := wire.BreakLock(ctx, ctl.js)
	if err != nil || broken == nil || broken.Holder != "ops@laptop" {
		t.Fatalf("breaking the lock: %+v %v", broken, err)
	}
	select {
	case <-second.Context().Done():
		if !errors.Is(context.Cause(second.Context()), wire.ErrLockLost) {
			t.Fatalf("the broken holder stopped for another reason: %v", context.Cause(second.Context()))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the holder of a broken lock never noticed")
	}
	if err := second.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if none, err := wire.BreakLock(ctx, ctl.js); err != nil || none != nil {
		t.Fatalf("breaking a free lock: %+v %v", none, err)
	}
	ctl.requireNoViolation(t)
}

// A holder that dies (its connection gone, nothing released) stops renewing, and its lock
// expires: the next apply gets it without anybody breaking it.
func TestACrashedHoldersLockExpires(t *testing.T) {
	t.Parallel()
	b := startMeshBus(t)
	ctx := t.Context()
	crashing := b.connectController(t)
	if _, err := wire.AcquireLock(ctx, crashing.js, wire.LockOptions{Holder: "killed", TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	crashing.nc.Close()

	lock, err := wire.AcquireLock(ctx, b.controller.js, wire.LockOptions{Holder: "next", Wait: 30 * time.Second})
	if err != nil {
		t.Fatalf("the crashed holder's lock did not expire: %v", err)
	}
	if lock.Holder().Holder != "next" {
		t.Fatalf("holder %q", lock.Holder().Holder)
	}
	lock.Release(ctx)
	requireStateBucketUnmanaged(t, b)
}

// The lock's bucket is apply's own: not in the plan, not listed as unmanaged, never pruned.
func requireStateBucketUnmanaged(t *testing.T, b *meshBus) {
	t.Helper()
	cs := diffNow(t, b.controller.nc, b.plan, change.DiffOptions{Prune: true})
	for _, c := range cs.Items {
		if c.Stream == compiler.ApplyBucketStream {
			t.Fatalf("apply's own bucket is in the change set: %+v", c)
		}
	}
	if slices.ContainsFunc(cs.Unmanaged, func(s string) bool { return strings.Contains(s, compiler.ApplyBucketStream) }) {
		t.Fatalf("apply's own bucket is listed as not managed: %q", cs.Unmanaged)
	}
	if _, err := b.controller.js.Stream(t.Context(), compiler.ApplyBucketStream); err != nil {
		t.Fatalf("the lock's bucket: %v", err)
	}
}

// A lock lost mid-apply stops the writes at the next one, not at the next renewal (up to a third
// of the TTL later, when two applies both believed they held the bus): broken with
// --break-lock, gone with its bucket, or taken over by an apply whose clock said it had expired.
func TestAWriteAfterTheLockIsLostIsNotMade(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		lose func(t *testing.T, b *meshBus)
	}{
		{"broken", func(t *testing.T, b *meshBus) {
			if held, err := wire.BreakLock(t.Context(), b.other); err != nil || held == nil {
				t.Fatalf("breaking the lock: %v %v", held, err)
			}
		}},
		{"bucket deleted", func(t *testing.T, b *meshBus) {
			if err := b.other.DeleteKeyValue(t.Context(), compiler.ApplyBucket); err != nil {
				t.Fatal(err)
			}
		}},
		{"taken over", func(t *testing.T, b *meshBus) {
			kv, err := b.other.KeyValue(t.Context(), compiler.ApplyBucket)
			if err != nil {
				t.Fatal(err)
			}
			entry, err := kv.Get(t.Context(), wire.LockKey)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := kv.Update(t.Context(), wire.LockKey, []byte(`{"holder":"B, whose clock runs ahead"}`), entry.Revision()); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := startMeshBus(t)
			ctl := b.controller
			lock, err := wire.AcquireLock(t.Context(), ctl.js, wire.LockOptions{Holder: "A", TTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			defer lock.Release(context.Background())
			live, err := wire.Read(lock.Context(), ctl.nc, wire.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			done := 0
			_, err = Apply(lock.Context(), ctl.js, change.Diff(live, b.plan, change.DiffOptions{}), Options{
				Concurrency: 1, Fence: lock.Check,
				Progress: func(Progress) {
					if done++; done == 1 {
						c.lose(t, b)
					}
				},
			})
			if !errors.Is(err, wire.ErrLockLost) {
				t.Fatalf("an apply whose lock was %s: %v", c.name, err)
			}
			after, err := wire.Read(t.Context(), ctl.nc, wire.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var made []string
			for _, s := range after.Streams {
				if s.Name != compiler.ApplyBucketStream {
					made = append(made, s.Name)
				}
			}
			if len(made) != 1 {
				t.Fatalf("after the lock was %s, the apply still made %q; want only the first stream", c.name, made)
			}
		})
	}
}

// A user who may use the JetStream API but not write the bucket's keys is refused before the
// bucket is made, and leaves no empty bucket behind.
func TestAUserWithoutTheBucketGrantLeavesNoBucket(t *testing.T) {
	t.Parallel()
	s := natstest.JetStream(t, func(o *server.Options) {
		o.Users = []*server.User{
			{Username: "ctl", Password: "pw", Permissions: &server.Permissions{
				Publish: &server.SubjectPermission{Allow: []string{"$JS.API.>"}}, Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>"}}}},
			{Username: "admin", Password: "pw"},
		}
	})
	bus, err := wire.Connect(wire.Endpoint{URL: s.ClientURL(), User: "ctl", Options: []nats.Option{nats.UserInfo("ctl", "pw")}})
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	js, err := bus.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	_, err = wire.AcquireLock(t.Context(), js, wire.LockOptions{Holder: "no grant"})
	var refused *wire.Refusal
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "$KV."+compiler.ApplyBucket) {
		t.Fatalf("taking the lock without the bucket's grant: %v", err)
	}
	_, admin := natstest.Connect(t, s.ClientURL(), nats.UserInfo("admin", "pw"))
	if _, err := admin.KeyValue(t.Context(), compiler.ApplyBucket); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("the refused user left the bucket behind: %v", err)
	}
}

// A holder's text is whoever wrote it: printed, it cannot move a terminal's cursor.
func TestALockHoldersTextIsPrintedSafely(t *testing.T) {
	t.Parallel()
	h := wire.LockHolder{Holder: "ci\x1b[2J\x1b[Hall clear\n", Started: time.Now(), Expires: time.Now().Add(time.Minute)}
	for _, s := range []string{h.String(), (&wire.LockedError{By: h}).Error()} {
		if strings.ContainsAny(s, "\x1b\n") || !strings.Contains(s, `ci\x1b[2J`) {
			t.Fatalf("the holder printed raw: %q", s)
		}
	}
}

// The probe that finds out whether a user may write the bucket stores nothing in a bucket that
// exists: made a moment before by another apply, the bucket refuses it, where a plain write would
// have put an empty record over the lock its holder had just taken.
func TestTheBucketProbeWritesNothingIntoABucketThatExists(t *testing.T) {
	t.Parallel()
	s := runServer(t)
	_, js := connect(t, s.ClientURL())
	held, err := wire.AcquireLock(t.Context(), js, wire.LockOptions{Holder: "the first apply"})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(context.Background())
	before, err := js.Stream(t.Context(), compiler.ApplyBucketStream)
	if err != nil {
		t.Fatal(err)
	}
	// As a second apply would when the bucket appeared between its lookup and its probe.
	probe := nats.NewMsg("$KV." + compiler.ApplyBucket + "." + wire.LockKey)
	probe.Header.Set(jetstream.ExpectedStreamHeader, wire.ProbeStream)
	answer, err := js.Conn().RequestMsg(probe, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !wire.IsStreamMismatch(answer) {
		t.Fatalf("the bucket's stream answered the probe %q, not a refusal", answer.Data)
	}
	after, err := js.Stream(t.Context(), compiler.ApplyBucketStream)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := after.CachedInfo().State.LastSeq, before.CachedInfo().State.LastSeq; got != want {
		t.Fatalf("the probe was stored: last sequence %d → %d", want, got)
	}
	if h := held.Holder(); h.Holder != "the first apply" {
		t.Fatalf("the lock changed hands: %+v", h)
	}
}
