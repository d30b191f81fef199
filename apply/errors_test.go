package apply

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshc-dev/meshc/apply/wire"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler/compilertest"
	"github.com/meshc-dev/meshc/internal/natsproc"
	"github.com/meshc-dev/meshc/internal/natstest"
)

// runConfigured starts a real server from a configuration file, the way a mesh's server runs.
func runConfigured(t *testing.T, conf string) *server.Server {
	t.Helper()
	return runConfiguredIn(t, t.TempDir(), conf)
}

// runConfiguredIn is runConfigured with its file and store under dir: the same dir starts the
// same server again, store and all.
func runConfiguredIn(t *testing.T, dir, conf string) *server.Server {
	t.Helper()
	path := filepath.Join(dir, "server.conf")
	conf = fmt.Sprintf("host: 127.0.0.1\nport: -1\njetstream { store_dir: %q }\n%s", filepath.Join(dir, "js"), conf)
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return natstest.FromConfig(t, path, false)
}

const accounts = `
accounts {
  NOVOX { jetstream: enabled, users = [
    {user: "mesh-controller", password: "controller"}
    {user: "mod.anchor.builder", password: "builder", permissions: {
      publish: {allow: ["mesh.mod.builder.event.>"]}, subscribe: {allow: ["_INBOX.>"]}}}
  ] }
  PLAIN { users = [ {user: "plain", password: "plain"} ] }
}`

func TestErrorsSayWhatToDo(t *testing.T) {
	t.Parallel()
	s := runConfigured(t, accounts)
	quick := wire.ReadOptions{RequestTimeout: 300 * time.Millisecond, RetryFor: 700 * time.Millisecond}

	t.Run("the controller reads", func(t *testing.T) {
		nc, err := wire.Dial(s.ClientURL(), nats.UserInfo("mesh-controller", "controller"))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if _, err := wire.Read(t.Context(), nc, quick); err != nil {
			t.Fatalf("the user owning the JetStream API could not read: %v", err)
		}
	})

	t.Run("a user without the JetStream API is refused, not timed out", func(t *testing.T) {
		nc, err := wire.Dial(s.ClientURL(), nats.UserInfo("mod.anchor.builder", "builder"), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		_, err = wire.Read(t.Context(), nc, quick)
		if err == nil || !strings.Contains(err.Error(), `the bus refused mod.anchor.builder publishing to "$JS.API.STREAM.LIST"`) || !strings.Contains(err.Error(), "mesh-controller") {
			t.Fatalf("a permission refusal read as: %v", err)
		}
		// Refused is final: not retried for the whole budget (retry says so when it gives up).
		if strings.Contains(err.Error(), "still failing after retrying") {
			t.Fatalf("a refusal was retried: %v", err)
		}

		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		cs := change.Changes{Items: []change.Change{{Action: change.Create, Kind: change.KindStream, Stream: "EVENTS",
			StreamConfig: &jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"mesh.mod.*.event.>"}}}}}
		_, err = Apply(t.Context(), js, cs, Options{AttemptTimeout: 300 * time.Millisecond, RetryFor: 5 * time.Second})
		if err == nil || !strings.HasPrefix(err.Error(), "create stream EVENTS: ") || !strings.Contains(err.Error(), "mesh-controller") {
			t.Fatalf("a refused create read as: %v", err)
		}
	})

	t.Run("an account without JetStream", func(t *testing.T) {
		nc, err := wire.Dial(s.ClientURL(), nats.UserInfo("plain", "plain"))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		_, err = wire.Read(t.Context(), nc, quick)
		if err == nil || !strings.Contains(err.Error(), "JetStream is not enabled for this account") {
			t.Fatalf("an account without JetStream read as: %v", err)
		}
	})

	t.Run("bad credentials", func(t *testing.T) {
		_, err := wire.Dial(s.ClientURL(), nats.UserInfo("mesh-controller", "wrong"))
		if err == nil || !strings.Contains(err.Error(), "the server refused user mesh-controller") {
			t.Fatalf("bad credentials read as: %v", err)
		}
	})

	t.Run("nothing listening", func(t *testing.T) {
		port := natsproc.FreePorts(t, 1)[0]
		_, err := wire.Dial(fmt.Sprintf("nats://127.0.0.1:%d", port))
		if err == nil || !strings.Contains(err.Error(), "no NATS server answers there") {
			t.Fatalf("an unreachable server read as: %v", err)
		}
	})
}

func TestAServerWithoutJetStreamIsSaidSo(t *testing.T) {
	t.Parallel()
	s := natstest.Start(t, &server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	nc, js := connect(t, s.ClientURL())

	_, err := wire.Read(t.Context(), nc, wire.ReadOptions{RequestTimeout: 300 * time.Millisecond, RetryFor: 600 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "is JetStream enabled") {
		t.Fatalf("no JetStream read as: %v", err)
	}
	cs := change.Changes{Items: []change.Change{{Action: change.Create, Kind: change.KindStream, Stream: "EVENTS",
		StreamConfig: &jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"mesh.mod.*.event.>"}}}}}
	_, err = Apply(t.Context(), js, cs, Options{RetryFor: 600 * time.Millisecond, AttemptTimeout: 300 * time.Millisecond})
	if err == nil || !strings.HasPrefix(err.Error(), "create stream EVENTS: ") || !strings.Contains(err.Error(), "is JetStream enabled") {
		t.Fatalf("an apply with no JetStream read as: %v", err)
	}
}

func TestAFatalServerRefusalIsNotRetriedAndNamesTheObject(t *testing.T) {
	t.Parallel()
	s := runServer(t)
	_, js := connect(t, s.ClientURL())
	ctx := t.Context()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"mesh.mod.*.event.>"}}); err != nil {
		t.Fatal(err)
	}
	plan := compilertest.MeshPlan(1, jetstream.MemoryStorage)
	cs := change.Changes{Items: []change.Change{{Action: change.Create, Kind: change.KindStream, Stream: "EVENTS", StreamConfig: &plan.Streams[1].Config}}}
	_, err := Apply(ctx, js, cs, Options{RetryFor: 600 * time.Millisecond})
	if err == nil || !strings.HasPrefix(err.Error(), "create stream EVENTS: ") || !strings.Contains(err.Error(), "--prune") {
		t.Fatalf("an overlap read as: %v", err)
	}
	// retry says when it gave up after retrying; a fatal refusal returns at its first answer.
	if strings.Contains(err.Error(), "still failing after retrying") {
		t.Fatalf("a fatal refusal was retried: %v", err)
	}
}
