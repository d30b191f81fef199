package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/apply/wire"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/internal/natstest"
)

// Two `meshc apply` runs of two catalogues at the same moment: the second waits for the first's
// lock and reads the bus after it, so both succeed, the bus ends as one of them, and a plan of
// that one shows nothing to change.
func TestTwoApplyCommandsAtOnceEndAsOneCatalogue(t *testing.T) {
	t.Parallel()
	s := natstest.JetStream(t)
	a := cataloguetest.Extract(t, "testdata/reload.txtar")
	b := cataloguetest.Extract(t, "testdata/reload.txtar")
	mesh := filepath.Join(b, "mesh.yaml")
	if err := os.WriteFile(mesh, []byte("name: novox\nstreams:\n  events: {max-age: 48h}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := meshc(t, "lint", b); code != 0 {
		t.Fatalf("the second catalogue: %s", errs)
	}
	var wg sync.WaitGroup
	codes, errs := make([]int, 2), make([]string, 2)
	for i, dir := range []string{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Whichever goes second lowers or raises EVENTS' max-age: a lowered one drops
			// messages, which this test allows, since it is about the lock.
			codes[i], _, errs[i] = meshc(t, "apply", dir, "--server", s.ClientURL(), "--prune", "--allow-discard")
		}()
	}
	wg.Wait()
	if codes[0] != 0 || codes[1] != 0 {
		t.Fatalf("two applies at once: %d %s / %d %s", codes[0], errs[0], codes[1], errs[1])
	}
	planA, _, _ := meshc(t, "plan", a, "--server", s.ClientURL(), "--prune")
	planB, _, _ := meshc(t, "plan", b, "--server", s.ClientURL(), "--prune")
	if (planA == 0) == (planB == 0) {
		t.Fatalf("plan exits %d for A and %d for B: want exactly one catalogue to match the bus", planA, planB)
	}
}

// A held lock turns `meshc apply` away after --lock-timeout with exit 2 naming the holder;
// --break-lock says whose it was; then apply runs.
func TestApplyWaitsForTheLockAndBreakLockNamesTheHolder(t *testing.T) {
	t.Parallel()
	s := natstest.JetStream(t)
	dir := cataloguetest.Extract(t, "testdata/reload.txtar")
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	lock, err := wire.AcquireLock(t.Context(), js, wire.LockOptions{Holder: "ci job 1234", TTL: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(context.Background())

	code, _, errs := meshc(t, "apply", dir, "--server", s.ClientURL(), "--lock-timeout", "300ms")
	if code != exitCantRun || !strings.Contains(errs, "ci job 1234") || !strings.Contains(errs, "waiting up to 300ms for the lock held by ci job 1234, since ") {
		t.Fatalf("apply while another holds the lock: %d %s", code, errs)
	}
	if code, _, _ := meshc(t, "apply", dir, "--server", s.ClientURL(), "--dry-run"); code != 0 {
		t.Fatal("a dry run was held up by the lock, though it only reads")
	}
	code, _, errs = meshc(t, "apply", dir, "--server", s.ClientURL(), "--break-lock")
	if code != 0 || !strings.Contains(errs, "broke the lock of ci job 1234") {
		t.Fatalf("--break-lock: %d %s", code, errs)
	}
	code, _, errs = meshc(t, "apply", dir, "--server", s.ClientURL(), "--lock-timeout", "300ms")
	if code != 0 {
		t.Fatalf("apply after the lock was broken: %d %s", code, errs)
	}
	if code, _, errs = meshc(t, "apply", dir, "--server", s.ClientURL(), "--break-lock"); code != 0 || !strings.Contains(errs, "nothing to break") {
		t.Fatalf("apply left its lock behind: %d %s", code, errs)
	}
}

// The lock's bucket has the replica count the server can hold, asked of the server: a single
// server named three times in the URL list is still a single server.
func TestApplyToOneServerNamedThreeTimes(t *testing.T) {
	t.Parallel()
	s := natstest.JetStream(t)
	dir := cataloguetest.Extract(t, "testdata/reload.txtar")
	urls := strings.Join([]string{s.ClientURL(), s.ClientURL(), s.ClientURL()}, ",")
	if code, _, errs := meshc(t, "apply", dir, "--server", urls); code != 0 {
		t.Fatalf("apply to one server named three times: %d %s", code, errs)
	}
	_, js := natstest.Connect(t, s.ClientURL())
	if st, err := js.Stream(t.Context(), "KV_meshc"); err != nil || st.CachedInfo().Config.Replicas != 1 {
		t.Fatalf("the lock's bucket: %v", err)
	}
}
