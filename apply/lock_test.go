package apply

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
)

// applyLocked is what meshc apply does: lock, then read, diff and apply under the lock, then
// release. Reading after the lock is the point: a state read before it may be changing.
func applyLocked(t *testing.T, ctl *controllerConn, plan *compiler.Plan, holder string, wait time.Duration) error {
	lock, err := AcquireLock(t.Context(), ctl.js, LockOptions{Holder: holder, Wait: wait})
	if err != nil {
		return err
	}
	defer lock.Release(context.Background())
	live, err := Read(lock.Context(), ctl.nc, ReadOptions{})
	if err != nil {
		return err
	}
	_, err = Apply(lock.Context(), ctl.js, change.Diff(live, plan, change.DiffOptions{Prune: true}), Options{Prune: true})
	return err
}

// Two applies of two catalogues at the same moment, as mesh-controller: one waits for the
// other, so the bus ends as exactly one of them and holds nothing of a half-done other.
func TestTwoAppliesAtOnceEndAsOneOfThem(t *testing.T) {
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
	b := startMeshBus(t)
	ctx := t.Context()
	ctl := b.controller
	first, err := AcquireLock(ctx, ctl.js, LockOptions{Holder: "ci@build-7 pid 42", TTL: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = AcquireLock(ctx, ctl.js, LockOptions{Holder: "ops@laptop", Wait: 300 * time.Millisecond})
	var locked *LockedError
	if !errors.As(err, &locked) || locked.By.Holder != "ci@build-7 pid 42" || !strings.Contains(err.Error(), "--break-lock") {
		t.Fatalf("a second apply while the lock is held: %v", err)
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	second, err := AcquireLock(ctx, ctl.js, LockOptions{Holder: "ops@laptop", TTL: 3 * time.Second})
	if err != nil {
		t.Fatalf("a released lock was not free: %v", err)
	}

	broken, err := BreakLock(ctx, ctl.js)
	if err != nil || broken == nil || broken.Holder != "ops@laptop" {
		t.Fatalf("breaking the lock: %+v %v", broken, err)
	}
	select {
	case <-second.Context().Done():
		if !errors.Is(context.Cause(second.Context()), ErrLockLost) {
			t.Fatalf("the broken holder stopped for another reason: %v", context.Cause(second.Context()))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the holder of a broken lock never noticed")
	}
	if err := second.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if none, err := BreakLock(ctx, ctl.js); err != nil || none != nil {
		t.Fatalf("breaking a free lock: %+v %v", none, err)
	}
	ctl.requireNoViolation(t)
}

// A holder that dies (its connection gone, nothing released) stops renewing, and its lock
// expires: the next apply gets it without anybody breaking it.
func TestACrashedHoldersLockExpires(t *testing.T) {
	b := startMeshBus(t)
	ctx := t.Context()
	crashing := b.connectController(t)
	if _, err := AcquireLock(ctx, crashing.js, LockOptions{Holder: "killed", TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	crashing.nc.Close()

	lock, err := AcquireLock(ctx, b.controller.js, LockOptions{Holder: "next", Wait: 30 * time.Second})
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
