package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meshc-dev/meshc/apply/deliver"
	"github.com/meshc-dev/meshc/internal/testwait"
)

// Where apply delivers no accounts, plan and apply show the users and accounts that differ from
// what the bus recorded of the last accounts file delivered, and what that rests on: nothing
// recorded, the delivery meshc recorded on the bus, or the server's config_digest — as
// mesh-controller, on a server running meshc's accounts file and reloading on its own signal.
func TestPlanAndApplySayWhenTheBusUsersMayDiffer(t *testing.T) {
	b := newDeliveryBus(t, true, nil)
	dir, pw, accounts, s, monitor := b.dir, b.pw, b.accounts, b.s, b.s.monitor
	t.Setenv("NATS_URL", s.url)
	t.Setenv("NATS_USER", "mesh-controller")
	t.Setenv("NATS_PASSWORD", pw["mesh-controller"])

	// Nothing recorded: meshc cannot tell, and says so, and why a connection attempt would not.
	code, out, errs := meshc(t, "apply", dir)
	if code != 0 || !strings.Contains(out, "Users and accounts: meshc cannot tell which users and permissions the bus runs: no accounts delivery by meshc is recorded on it") ||
		!strings.Contains(out, "users and accounts: not known") {
		t.Fatalf("apply with nothing recorded: %d %s%s", code, out, errs)
	}

	// Delivered by meshc with a server named: recorded on the bus; then nothing differs.
	pid := s.pid()
	if code, _, errs = meshc(t, "apply", dir, "--accounts", accounts, "--reload", pid, "--monitor", monitor); code != 0 {
		t.Fatalf("apply --accounts --reload: %d %s", code, errs)
	}
	if code, out, errs = meshc(t, "apply", dir, "--monitor", monitor); code != 0 || !strings.Contains(out, "users and accounts: unchanged") ||
		!strings.Contains(out, "compared with the accounts file last delivered (recorded on the bus by meshc apply --accounts at ") || !strings.Contains(out, "config_digest unchanged") {
		t.Fatalf("apply after the delivery: %d %s%s", code, out, errs)
	}

	// The catalogue adds a user the bus does not have: plan and apply show the user, and that it
	// is delivered where the server runs; plan exits 1, there being a difference.
	if err := os.Rename(filepath.Join(dir, "inventory-v2.yaml"), filepath.Join(dir, "inventory.yaml")); err != nil {
		t.Fatal(err)
	}
	mint(t, dir, "person.dave")
	for _, cmd := range []string{"plan", "apply"} {
		code, out, errs = meshc(t, cmd, dir)
		if !strings.Contains(out, "+ user person.dave") || !strings.Contains(out, "(not by this apply)") || !strings.Contains(out, "meshc apply --accounts PATH --reload PID") {
			t.Fatalf("%s with a user the bus lacks: %d %s%s", cmd, code, out, errs)
		}
		if want := map[string]int{"plan": exitFailed, "apply": exitOK}[cmd]; code != want {
			t.Fatalf("%s with a user the bus lacks: exit %d, want %d", cmd, code, want)
		}
	}
	if code, _, errs = meshc(t, "apply", dir, "--accounts", accounts, "--reload", pid, "--monitor", monitor); code != 0 {
		t.Fatalf("apply --accounts --reload with dave: %d %s", code, errs)
	}
	if code, out, _ = meshc(t, "plan", dir, "--monitor", monitor); code != 0 || !strings.Contains(out, "users and accounts: unchanged") {
		t.Fatalf("plan after dave was delivered: %d %s", code, out)
	}

	// Someone else changes the server's accounts and reloads it: the server's config_digest
	// moved, and with --monitor meshc sees it.
	before, err := deliver.ServerConfigDigest(t.Context(), monitor)
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
		now, _ := deliver.ServerConfigDigest(t.Context(), monitor)
		return now != before
	})
	if _, out, _ = meshc(t, "plan", dir); !strings.Contains(out, "users and accounts: unchanged") {
		t.Fatalf("without --monitor the record alone cannot see it, and says nothing more than it knows: %s", out)
	}
	_, out, _ = meshc(t, "plan", dir, "--monitor", monitor)
	if !strings.Contains(out, "the server's configuration changed since meshc delivered the accounts") || !strings.Contains(out, "users and accounts: not known") {
		t.Fatalf("plan --monitor after someone else's reload: %s", out)
	}
}
