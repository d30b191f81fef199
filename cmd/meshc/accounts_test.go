package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/internal/natstest"
)

// Every refusal comes before the accounts file is written: a plan that needs --allow-replace, a
// --reload target that is not a nats-server, a process group, a pid file that is not there.
func TestEveryAccountsRefusalComesBeforeTheWrite(t *testing.T) {
	t.Parallel()
	s := natstest.JetStream(t)
	dir := cataloguetest.Extract(t, "testdata/reload.txtar")
	mint(t, dir, "--missing")
	accounts := filepath.Join(t.TempDir(), "accounts.conf")
	if code, _, errs := meshc(t, "apply", dir, "--server", s.ClientURL()); code != 0 {
		t.Fatal(errs)
	}
	notWritten := func(why string) {
		t.Helper()
		if _, err := os.Stat(accounts); !os.IsNotExist(err) {
			t.Fatalf("%s, yet the accounts file was written (%v)", why, err)
		}
	}

	if err := os.WriteFile(filepath.Join(dir, "mesh.yaml"), []byte("name: novox\nisolation: shared-account\nstreams:\n  events: {storage: memory}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := meshc(t, "apply", dir, "--server", s.ClientURL(), "--accounts", accounts)
	if code != exitFailed || !strings.Contains(errs, "allow-replace") || !strings.Contains(errs, "was not written either") {
		t.Fatalf("a refused apply: %d %s", code, errs)
	}
	notWritten("the apply was refused")

	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleep.Process.Kill()
	pidFile := filepath.Join(t.TempDir(), "nats.pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(sleep.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ target, want string }{
		{pidFile, `is "sleep", not nats-server`},
		{"-" + strconv.Itoa(syscall.Getpgrp()), "must be above 0"},
		{"0", "must be above 0"},
		{filepath.Join(t.TempDir(), "mistyped.pid"), "neither a process id nor a readable pid file"},
	} {
		code, _, errs := meshc(t, "apply", dir, "--accounts", accounts, "--allow-replace", "--reload", c.target)
		if code != exitCantRun || !strings.Contains(errs, c.want) {
			t.Fatalf("--reload %s: %d %s", c.target, code, errs)
		}
		notWritten("--reload " + c.target + " was refused")
	}
	if err := sleep.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the stale pid file's process was signalled: %v", err)
	}
}

// An existing accounts file keeps its owner, group and mode, and a symlink is written through to
// the file it points at, which the server reads.
func TestTheAccountsFileKeepsItsOwnerModeAndLink(t *testing.T) {
	t.Parallel()
	dir := cataloguetest.Extract(t, "testdata/reload.txtar")
	mint(t, dir, "--missing")
	etc := t.TempDir()
	target := filepath.Join(etc, "real", "accounts.conf")
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, []byte("# the old user list\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	uid, gid := os.Getuid(), os.Getgid()
	if os.Geteuid() == 0 {
		// As root, a server's own user: the file must stay theirs.
		uid, gid = 4321, 8765
		if err := os.Chown(target, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(etc, "accounts.conf")
	if err := os.Symlink(filepath.Join("real", "accounts.conf"), link); err != nil {
		t.Fatal(err)
	}

	if code, _, errs := meshc(t, "apply", dir, "--accounts", link); code != 0 {
		t.Fatalf("%d %s", code, errs)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlink was replaced by a file: %v", err)
	}
	data, err := os.ReadFile(target)
	if err != nil || !strings.Contains(string(data), "mesh-controller") {
		t.Fatalf("the link's target was not written: %v %q", err, data)
	}
	fi, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode().Perm() != 0o640 || int(st.Uid) != uid || int(st.Gid) != gid {
		t.Fatalf("the file is now %04o %d:%d; it was 0640 %d:%d", fi.Mode().Perm(), st.Uid, st.Gid, uid, gid)
	}
	if entries, _ := os.ReadDir(filepath.Dir(target)); len(entries) != 1 {
		t.Fatalf("a temporary file was left beside the target: %v", entries)
	}
}

// Whether to reload is what the server has loaded, not what is on disk: a file written by a run
// whose reload never happened is reloaded by the rerun. A reload the server rejects is exit 2
// with why, and once the cause is gone the next run signals again.
func TestReloadFollowsWhatTheServerLoaded(t *testing.T) {
	b := newDeliveryBus(t, true, nil)
	dir, accounts, s := b.dir, b.accounts, b.s
	monitor, self := s.monitor, s.pid()

	// dave is added; the file is written but the server is not told (a run whose reload failed).
	withDave(t, dir)
	dave := mint(t, dir, "person.dave")["person.dave"]
	if code, _, errs := meshc(t, "apply", dir, "--accounts", accounts); code != 0 || !strings.Contains(errs, "wrote") {
		t.Fatalf("%d %s", code, errs)
	}
	if nc, err := nats.Connect(s.url, nats.UserInfo("person.dave", dave)); err == nil {
		nc.Close()
		t.Fatal("dave connected before any reload")
	}

	// The server refuses the next reload: its own configuration changed in a way it cannot take
	// in place.
	restore := b.breakReloads(t)
	// The server says it refused in its log, and that is what apply reports, without waiting
	// out --reload-timeout: the server's own words are the proof it did not.
	code, _, errs := meshc(t, "apply", dir, "--accounts", accounts, "--reload", self, "--monitor", monitor, "--reload-timeout", "10m")
	if code != exitCantRun || !strings.Contains(errs, "refused the reload: config reload not supported for ServerName") || strings.Contains(errs, "reloaded") {
		t.Fatalf("a rejected reload: %d %s", code, errs)
	}

	restore()
	code, _, errs = meshc(t, "apply", dir, "--accounts", accounts, "--reload", self, "--monitor", monitor)
	if code != 0 || !strings.Contains(errs, "is current and the server reloaded it: it had not loaded the file as it is") {
		t.Fatalf("the rerun after a failed reload: %d %s", code, errs)
	}
	nc, err := nats.Connect(s.url, nats.UserInfo("person.dave", dave), nats.Timeout(5*time.Second))
	if err != nil {
		t.Fatalf("dave cannot connect after the confirmed reload: %v", err)
	}
	nc.Close()
	code, _, errs = meshc(t, "apply", dir, "--accounts", accounts, "--reload", self, "--monitor", monitor)
	if code != 0 || !strings.Contains(errs, "the server is not asked to reload") {
		t.Fatalf("a third run: %d %s", code, errs)
	}
}
