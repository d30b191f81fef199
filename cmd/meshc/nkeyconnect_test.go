package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/internal/natstest"
	"github.com/meshc-dev/meshc/up"
)

// With auth: nkey a connection names no user: the seed's public key is all the server sees. meshc
// finds the catalogue's user it is recorded for, and so its inbox prefix: `meshc apply --nkey
// FILE` works as mesh-controller with nothing else said, where it needed --inbox-prefix
// _INBOX.mesh-controller too. A module's seed is that module's user, and is told what it may not do.
func TestAnNKeyNamesItsUser(t *testing.T) {
	isolateNATSSettings(t)
	dir := cataloguetest.Extract(t, "testdata/up.txtar")
	meshYAML := filepath.Join(dir, catalogue.MeshFile)
	m, _ := os.ReadFile(meshYAML)
	os.WriteFile(meshYAML, append(m, "auth: nkey\n"...), 0o644)
	seeds := mint(t, dir, "--missing")
	if code, _, errs := meshc(t, "emit", dir); code != 0 {
		t.Fatalf("emit: %d %s", code, errs)
	}
	state := t.TempDir()
	accounts, _ := os.ReadFile(filepath.Join(dir, "golden", "accounts.conf"))
	os.WriteFile(filepath.Join(state, "accounts.conf"), accounts, 0o600)
	conf, err := up.WriteServerConf(state, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	url := natstest.FromConfig(t, conf, false).ClientURL()
	seedFile := filepath.Join(t.TempDir(), "ci.nk")
	os.WriteFile(seedFile, []byte(seeds["mesh-controller"]+"\n"), 0o600)

	code, out, errs := meshc(t, "apply", dir, "--server", url, "--nkey", seedFile)
	if code != 0 || !strings.Contains(errs, "as mesh-controller") {
		t.Fatalf("apply --nkey alone: %d\n%s%s", code, out, errs)
	}
	t.Setenv("NATS_NKEY", seedFile)
	if code, out, errs := meshc(t, "plan", dir, "--server", url); code != 0 || !strings.Contains(out, "0 to create, 0 to change") {
		t.Fatalf("plan with NATS_NKEY after apply: %d\n%s%s", code, out, errs)
	}
	// A module's seed is named as that module's user: it gets its own prefix, and is told the
	// JetStream API is the controller's.
	other := filepath.Join(t.TempDir(), "other.nk")
	os.WriteFile(other, []byte(seeds["mod.anchor.catalog"]+"\n"), 0o600)
	if code, _, errs := meshc(t, "plan", dir, "--server", url, "--nkey", other); code != 2 || !strings.Contains(errs, "mod.anchor.catalog") {
		t.Fatalf("plan as a module's nkey: %d %s", code, errs)
	}
}
