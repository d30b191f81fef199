package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meshc-dev/meshc/apply"
	"github.com/meshc-dev/meshc/internal/testwait"
)

// Where apply delivers no accounts, plan and apply say when the users and permissions on the bus
// may differ from the catalogue's, and what that rests on: nothing recorded, the delivery meshc
// recorded on the bus, or the server's config_digest — as mesh-controller, on a server running
// meshc's accounts file and reloading on its own signal.
func TestPlanAndApplySayWhenTheBusUsersMayDiffer(t *testing.T) {
	b := newDeliveryBus(t, true, nil)
	dir, pw, accounts, s, monitor := b.dir, b.pw, b.accounts, b.s, b.s.monitor
	t.Setenv("NATS_URL", s.url)
	t.Setenv("NATS_USER", "mesh-controller")
	t.Setenv("NATS_PASSWORD", pw["mesh-controller"])

	// Nothing recorded: meshc cannot tell, and says so, and why a connection attempt would not.
	code, _, errs := meshc(t, "apply", dir)
	if code != 0 || !strings.Contains(errs, "meshc apply: users and permissions: meshc cannot tell whether the users and permissions on the bus are the catalogue's: no accounts delivery by meshc is recorded on it") ||
		!strings.Contains(errs, "[this rests on nothing the bus records]") {
		t.Fatalf("apply with nothing recorded: %d %s", code, errs)
	}

	// Delivered by meshc with a server named: recorded on the bus; then nothing to say.
	pid := s.pid()
	if code, _, errs = meshc(t, "apply", dir, "--accounts", accounts, "--reload", pid, "--monitor", monitor); code != 0 {
		t.Fatalf("apply --accounts --reload: %d %s", code, errs)
	}
	if code, _, errs = meshc(t, "apply", dir, "--monitor", monitor); code != 0 || strings.Contains(errs, "users and permissions") {
		t.Fatalf("apply after the delivery: %d %s", code, errs)
	}

	// The catalogue adds a user the bus does not have: plan and apply say the bus differs.
	if err := os.Rename(filepath.Join(dir, "inventory-v2.yaml"), filepath.Join(dir, "inventory.yaml")); err != nil {
		t.Fatal(err)
	}
	mint(t, dir, "person.dave")
	for _, cmd := range []string{"plan", "apply"} {
		_, _, errs = meshc(t, cmd, dir)
		if !strings.Contains(errs, "meshc "+cmd+": users and permissions: the users and permissions on the bus differ from the catalogue's: the accounts file last delivered (recorded on the bus by meshc apply --accounts at ") ||
			!strings.Contains(errs, "[this rests on the delivery recorded on the bus]") {
			t.Fatalf("%s with a user the bus lacks: %s", cmd, errs)
		}
	}
	if code, _, errs = meshc(t, "apply", dir, "--accounts", accounts, "--reload", pid, "--monitor", monitor); code != 0 {
		t.Fatalf("apply --accounts --reload with dave: %d %s", code, errs)
	}
	if _, _, errs = meshc(t, "plan", dir, "--monitor", monitor); strings.Contains(errs, "users and permissions") {
		t.Fatalf("plan after dave was delivered: %s", errs)
	}

	// Someone else changes the server's accounts and reloads it: the server's config_digest
	// moved, and with --monitor meshc sees it.
	before, err := apply.ServerConfigDigest(t.Context(), monitor)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(accounts)
	if err := os.WriteFile(accounts, []byte(strings.Replace(string(data), "person.dave", "person.mallory", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(s.cmd.Process.Pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the server to reload", 10*time.Second, func() bool {
		now, _ := apply.ServerConfigDigest(t.Context(), monitor)
		return now != before
	})
	if _, _, errs = meshc(t, "plan", dir); strings.Contains(errs, "users and permissions") {
		t.Fatalf("without --monitor the record alone cannot see it, and says nothing more than it knows: %s", errs)
	}
	_, _, errs = meshc(t, "plan", dir, "--monitor", monitor)
	if !strings.Contains(errs, "the server's configuration changed since meshc delivered the accounts") || !strings.Contains(errs, "[this rests on the server's config_digest]") {
		t.Fatalf("plan --monitor after someone else's reload: %s", errs)
	}
}
