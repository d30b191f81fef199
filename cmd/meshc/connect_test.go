package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"meshc/internal/natstest"
	"meshc/internal/testcat"
)

// A NATS CLI context file is read the way the CLI reads it: the server and credentials come from
// ~/.config/nats/context/NAME.json ($XDG_CONFIG_HOME first), and a flag overrides the context.
func TestPlanConnectsThroughANATSContext(t *testing.T) {
	s := natstest.JetStream(t, func(o *server.Options) { o.Username, o.Password = "ops", "s3cret" })

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
