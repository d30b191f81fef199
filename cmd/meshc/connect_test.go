package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"meshc/internal/testcat"
)

// A NATS CLI context file is read the way the CLI reads it: the server and credentials come from
// ~/.config/nats/context/NAME.json ($XDG_CONFIG_HOME first), and a flag overrides the context.
func TestPlanConnectsThroughANATSContext(t *testing.T) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true, Username: "ops", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	defer func() { s.Shutdown(); s.WaitForShutdown() }()
	if !s.ReadyForConnections(5 * time.Second) {
		t.Fatal("server not ready")
	}

	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	t.Setenv("NATS_URL", "")
	dir := filepath.Join(config, "nats", "context")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := `{"description": "the lab", "url": "` + s.ClientURL() + `", "user": "ops", "password": "s3cret"}`
	if err := os.WriteFile(filepath.Join(dir, "lab.json"), []byte(ctx), 0o600); err != nil {
		t.Fatal(err)
	}
	cat := testcat.Extract(t, "testdata/up.txtar")

	// An empty bus: everything to create, read through the context's server and credentials.
	code, out, errs := meshc(t, "plan", cat, "--context", "lab")
	if code != 1 || !strings.Contains(out, "to create") {
		t.Fatalf("plan --context lab: %d\n%s%s", code, out, errs)
	}
	// A flag overrides the context: the wrong password is refused, and said so.
	code, _, errs = meshc(t, "plan", cat, "--context", "lab", "--password", "wrong")
	if code != 2 || !strings.Contains(errs, "refused these credentials") {
		t.Fatalf("plan --context lab --password wrong: %d %s", code, errs)
	}
	// A context that does not exist says where it looked.
	code, _, errs = meshc(t, "plan", cat, "--context", "nope")
	if code != 2 || !strings.Contains(errs, `context "nope" not found in `+dir) {
		t.Fatalf("plan --context nope: %d %s", code, errs)
	}
}
