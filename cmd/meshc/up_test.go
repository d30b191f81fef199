package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.yaml.in/yaml/v3"

	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/internal/testwait"
)

// syncBuffer is an io.Writer a test reads while the command writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runningUp is a meshc up running in the test's process on a catalogue, until the test ends.
type runningUp struct {
	url, state     string
	stdout, stderr syncBuffer
}

// startUp runs meshc up on dir with a fresh state directory, waits for its bus and its watcher,
// and stops it when the test ends, requiring it to exit 0.
func startUp(t *testing.T, dir string) *runningUp {
	t.Helper()
	isolateNATSSettings(t)
	r := &runningUp{state: filepath.Join(t.TempDir(), "state")}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		done <- runUpUntil(ctx, &invocation{stdout: &r.stdout, stderr: &r.stderr}, []string{dir, "--state", r.state})
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("up exited %d: %s", code, r.stderr.String())
		}
	})
	urlRE := regexp.MustCompile(`The bus is at (nats://[0-9.]+:[0-9]+)`)
	testwait.For(t, "the bus", 20*time.Second, func() bool { return urlRE.MatchString(r.stdout.String()) })
	testwait.For(t, "the watcher", 20*time.Second, func() bool { return strings.Contains(r.stderr.String(), "watching") })
	r.url = urlRE.FindStringSubmatch(r.stdout.String())[1]
	return r
}

// meshc up keeps the bus running and, when a manifest changes, recomposes the accounts, reloads
// the server in place and applies again: a person added to the inventory can connect and call a
// module whose connection was there before, a consumer gains the filter a manifest added, and the
// existing connection is never dropped.
func TestUpReloadsInPlaceWhenAManifestChanges(t *testing.T) {
	dir := cataloguetest.Extract(t, "testdata/up.txtar")
	r := startUp(t, dir)
	url, state, stdout, stderr := r.url, r.state, &r.stdout, &r.stderr

	var disconnects atomic.Int32
	catalog, err := nats.Connect(url, nats.UserInfo("serve.anchor.catalog", devPassword(t, state, "serve.anchor.catalog")),
		nats.DisconnectErrHandler(func(*nats.Conn, error) { disconnects.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	defer catalog.Close()
	if _, err := catalog.QueueSubscribe("mesh.mod.catalog.tool.lookup", "catalog", func(m *nats.Msg) { m.Respond([]byte("found")) }); err != nil {
		t.Fatal(err)
	}
	catalog.Flush()

	// Two manifests change: a person joins, and catalog consumes one more event.
	for from, to := range map[string]string{"inventory-v2.yaml": "inventory.yaml", "catalog-v2.yaml": "modules/catalog.yaml"} {
		data, err := os.ReadFile(filepath.Join(dir, from))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, to), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testwait.For(t, "the reload", 20*time.Second, func() bool { return strings.Contains(stderr.String(), "reloaded the accounts in place") })
	testwait.For(t, "the second apply", 20*time.Second, func() bool {
		return strings.Contains(stderr.String(), "applied: 0 to create, 1 to change, 0 to replace, 0 to delete")
	})

	dave, err := nats.Connect(url, nats.UserInfo("person.dave", devPassword(t, state, "person.dave")),
		nats.CustomInboxPrefix("_INBOX.person.dave"))
	if err != nil {
		t.Fatalf("the person added while the bus ran cannot connect: %v", err)
	}
	defer dave.Close()
	if reply, err := dave.Request("mesh.mod.catalog.tool.lookup", nil, 2*time.Second); err != nil || string(reply.Data) != "found" {
		t.Fatalf("dave's call to catalog: %v %v", reply, err)
	}
	if n := disconnects.Load(); n != 0 || !catalog.IsConnected() {
		t.Fatalf("the existing connection was dropped %d time(s) by the reload", n)
	}

	// Every user has a NATS CLI context, the added person too, and meshc itself connects through
	// the controller's: no password is ever printed on a command line.
	// up writes the contexts after it says "applied", so the file is waited for, not raced.
	testwait.For(t, "a context for the person added while the bus ran", 20*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(state, "contexts", "person.dave.json"))
		return err == nil
	})
	controller := filepath.Join(state, "contexts", "mesh-controller.json")
	if !strings.Contains(stdout.String(), "nats --context "+controller) {
		t.Fatalf("up does not print how to connect by context:\n%s", stdout.String())
	}
	for _, user := range []string{"mesh-controller", "mod.anchor.catalog", "person.dave"} {
		if strings.Contains(stdout.String()+stderr.String(), devPassword(t, state, user)) {
			t.Fatalf("up printed %s's password", user)
		}
	}
	code, out, errs := meshc(t, "plan", dir, "--context", controller)
	if code != 0 || !strings.Contains(out, "0 to create, 0 to change, 0 to replace, 0 to delete") {
		t.Fatalf("plan through up's context for mesh-controller: %d\n%s%s", code, out, errs)
	}
}

func devPassword(t *testing.T, state, user string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(state, "dev-credentials.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var creds map[string]struct{ Password string }
	if err := yaml.Unmarshal(data, &creds); err != nil {
		t.Fatal(err)
	}
	if creds[user].Password == "" {
		t.Fatalf("no development password for %s", user)
	}
	return creds[user].Password
}
