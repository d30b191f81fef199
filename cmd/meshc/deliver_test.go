package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/apply/wire"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/internal/filelock"
	"github.com/meshc-dev/meshc/internal/testwait"
)

// deliveryBus is a catalogue with dave, minted, whose accounts file a nats-server process
// includes and serves.
type deliveryBus struct {
	dir, conf, accounts string
	pw                  map[string]string
	s                   *serverProcess
}

// newDeliveryBus lays out testdata/reload.txtar, lets edit change the catalogue before anything
// is minted (nil leaves it as the archive has it), mints every user, writes the accounts file and
// starts a nats-server process serving it. withLog gives the server a log_file meshc can read;
// without, it logs to a pipe. NATS settings from the environment are set aside.
func newDeliveryBus(t *testing.T, withLog bool, edit func(t *testing.T, dir string)) *deliveryBus {
	t.Helper()
	isolateNATSSettings(t)
	b := &deliveryBus{dir: cataloguetest.Extract(t, "testdata/reload.txtar"), conf: filepath.Join(t.TempDir(), "nats")}
	if edit != nil {
		edit(t, b.dir)
	}
	b.pw = mint(t, b.dir, "--missing")
	b.accounts = filepath.Join(b.conf, "accounts.conf")
	if code, _, errs := meshc(t, "apply", b.dir, "--accounts", b.accounts); code != 0 {
		t.Fatalf("apply --accounts with no server: %d %s", code, errs)
	}
	if withLog {
		b.s = serverWithAccounts(t, b.conf)
	} else {
		b.s = startServerProcess(t, serverConf(t, b.conf, ""), "")
	}
	return b
}

// withDave puts the archive's second inventory in place: dave, who may call catalog's lookup.
func withDave(t *testing.T, dir string) {
	t.Helper()
	if err := os.Rename(filepath.Join(dir, "inventory-v2.yaml"), filepath.Join(dir, "inventory.yaml")); err != nil {
		t.Fatal(err)
	}
}

// apply runs meshc apply --accounts --reload on the bus's server, with more flags.
func (b *deliveryBus) apply(t *testing.T, more ...string) (int, string) {
	t.Helper()
	code, _, errs := meshc(t, append([]string{"apply", b.dir, "--accounts", b.accounts, "--reload", b.s.pid(), "--monitor", b.s.monitor}, more...)...)
	return code, errs
}

// perModule switches the catalogue to an account per principal.
func (b *deliveryBus) perModule(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(b.dir, "mesh.yaml"), []byte("name: novox\nisolation: account-per-module\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// daveCalls has catalog serve its tool and dave call it: through the service import of dave's
// own account when each principal has one, so the call is answered only once the server wired
// the imports of the accounts a reload created. It returns the call's error.
func (b *deliveryBus) daveCalls(t *testing.T) error {
	t.Helper()
	catalog, err := nats.Connect(b.s.url, nats.UserInfo("serve.anchor.catalog", b.pw["serve.anchor.catalog"]))
	if err != nil {
		return err
	}
	defer catalog.Close()
	if _, err := catalog.QueueSubscribe("mesh.mod.catalog.tool.lookup", "catalog", func(m *nats.Msg) { m.Respond([]byte("found")) }); err != nil {
		return err
	}
	catalog.Flush()
	dave, err := nats.Connect(b.s.url, nats.UserInfo("person.dave", b.pw["person.dave"]), nats.CustomInboxPrefix("_INBOX.person.dave"))
	if err != nil {
		return err
	}
	defer dave.Close()
	_, err = dave.Request("mesh.mod.catalog.tool.lookup", []byte("?"), 2*time.Second)
	return err
}

// breakReloads makes the server refuse its next reload (a setting it cannot change in place),
// and returns what puts it right.
func (b *deliveryBus) breakReloads(t *testing.T) (restore func()) {
	t.Helper()
	conf := filepath.Join(b.conf, "server.conf")
	good, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, append([]byte("server_name: renamed\n"), good...), 0o644); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.WriteFile(conf, good, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// An owed reload, first case: the switch to an account per principal whose first reload the server
// refused. The rerun finds the file already written; the server, not the file, says what is owed:
// the server had not loaded it, then the new accounts' imports were dead. Two reloads, and dave's
// call through his new account's import is answered.
func TestAReloadOwedAfterARefusedFirstReloadIsMadeByTheRerun(t *testing.T) {
	b := newDeliveryBus(t, true, withDave)
	b.perModule(t)
	restore := b.breakReloads(t)
	if code, errs := b.apply(t); code != exitCantRun || !strings.Contains(errs, "refused the reload") {
		t.Fatalf("a refused reload: %d %s", code, errs)
	}
	restore()
	code, errs := b.apply(t)
	if code != 0 || !strings.Contains(errs, "is current and the server reloaded it twice") || !strings.Contains(errs, "were not wired yet") {
		t.Fatalf("the rerun: %d %s", code, errs)
	}
	if err := b.daveCalls(t); err != nil {
		t.Fatalf("dave's call through his new account's import after the rerun: %v", err)
	}
}

// An owed reload, second case: the first reload made, the second not (the apply killed between
// them, or the second refused). The rerun finds the file current and loaded, and the new accounts'
// imports dead: it reloads once more, and dave's call is answered.
func TestAReloadOwedAfterTheFirstOfTwoIsMadeByTheRerun(t *testing.T) {
	b := newDeliveryBus(t, true, withDave)
	b.perModule(t)
	if code, _, errs := meshc(t, "apply", b.dir, "--accounts", b.accounts); code != 0 {
		t.Fatalf("writing the file: %d %s", code, errs)
	}
	// One reload by hand: the accounts exist, their imports are dead.
	if err := syscall.Kill(b.s.cmd.Process.Pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitForLog(t, b.s, "Reloaded server configuration")
	if err := b.daveCalls(t); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("after one reload dave's call should find no responder (the import is dead): %v", err)
	}
	code, errs := b.apply(t)
	if code != 0 || !strings.Contains(errs, "the server reloaded it") || !strings.Contains(errs, "were not wired yet") {
		t.Fatalf("the rerun after one reload of two: %d %s", code, errs)
	}
	if err := b.daveCalls(t); err != nil {
		t.Fatalf("dave's call after the rerun: %v", err)
	}
	if code, errs := b.apply(t); code != 0 || !strings.Contains(errs, "the server is not asked to reload") {
		t.Fatalf("a third run: %d %s", code, errs)
	}
}

// --monitor must be the signalled server's endpoint: another nats-server answering there (on the
// default port, say) is found out before anything is written, not taken for the server that has
// loaded the file.
func TestAMonitorOfAnotherServerIsRefused(t *testing.T) {
	b := newDeliveryBus(t, true, withDave)
	// The file changes and the server is not told (a run without --reload); another server starts
	// afterwards, so its configuration looks newer than the file.
	if err := os.WriteFile(filepath.Join(b.dir, "inventory.yaml"), []byte("nodes:\n  - {name: anchor, runs: [catalog]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := meshc(t, "apply", b.dir, "--accounts", b.accounts); code != 0 {
		t.Fatalf("%d %s", code, errs)
	}
	otherDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(otherDir, "accounts.conf"), []byte("# another server's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := startServerProcess(t, serverConf(t, otherDir, ""), "")
	code, _, errs := meshc(t, "apply", b.dir, "--accounts", b.accounts, "--reload", b.s.pid(), "--monitor", other.monitor)
	if code != exitCantRun || !strings.Contains(errs, "it is another server") {
		t.Fatalf("--monitor of another server: %d %s", code, errs)
	}
	if n := countLog(t, b.s, "Reloaded server configuration"); n != 0 {
		t.Fatalf("the signalled server reloaded %d times though its monitor was another's", n)
	}
}

// --accounts must be the file the server includes: one it does not is never reported reloaded.
func TestAnAccountsFileTheServerDoesNotIncludeIsRefused(t *testing.T) {
	b := newDeliveryBus(t, true, withDave)
	elsewhere := filepath.Join(t.TempDir(), "accounts.conf")
	code, _, errs := meshc(t, "apply", b.dir, "--accounts", elsewhere, "--reload", b.s.pid(), "--monitor", b.s.monitor)
	if code != exitCantRun || !strings.Contains(errs, "does not include this file") || strings.Contains(errs, "reloaded") {
		t.Fatalf("--accounts a file the server does not include: %d %s", code, errs)
	}
	if n := countLog(t, b.s, "Reloaded server configuration"); n != 0 {
		t.Fatalf("the server was reloaded %d times for a file it does not include", n)
	}
}

// Two applies racing for one accounts file: apply B decided about the file and the server before
// waiting for the lock, and acted on it after, while apply A had meanwhile written another
// catalogue's users and reloaded: B said "current" and the server kept A's users. Decided under the
// lock, B writes its own users and the server serves them.
func TestTheAccountsAreDecidedUnderTheLock(t *testing.T) {
	b := newDeliveryBus(t, true, withDave)
	if code, errs := b.apply(t); code != 0 {
		t.Fatalf("%d %s", code, errs)
	}
	mine, err := os.ReadFile(b.accounts)
	if err != nil {
		t.Fatal(err)
	}
	// Another catalogue's file: this one without dave.
	other := cataloguetest.Extract(t, "testdata/reload.txtar")
	credentials, err := os.ReadFile(filepath.Join(b.dir, "credentials.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "credentials.yaml"), credentials, 0o600); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(t.TempDir(), "accounts.conf")
	if code, _, errs := meshc(t, "apply", other, "--accounts", theirs, "--allow-missing"); code != 0 {
		t.Fatalf("the other catalogue's file: %d %s", code, errs)
	}

	// A holds the bus's lock; B starts and waits for it.
	nc, err := nats.Connect(b.s.url, nats.UserInfo("mesh-controller", b.pw["mesh-controller"]), nats.CustomInboxPrefix("_INBOX.mesh-controller"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	lock, err := wire.AcquireLock(t.Context(), js, wire.LockOptions{Holder: "apply A", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	done := make(chan int)
	go func() {
		done <- runWith(&invocation{stdout: &syncBuffer{}, stderr: &stderr}, []string{"apply", b.dir, "--server", b.s.url,
			"--user", "mesh-controller", "--password", b.pw["mesh-controller"], "--accounts", b.accounts, "--reload", b.s.pid(), "--monitor", b.s.monitor})
	}()
	testwait.For(t, "B to wait for the lock", 20*time.Second, func() bool {
		return strings.Contains(stderr.String(), "waiting up to 1m0s for the lock held by apply A")
	})

	// A writes the other catalogue's users and reloads.
	data, err := os.ReadFile(theirs)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.accounts, data, 0o600); err != nil {
		t.Fatal(err)
	}
	reloads := countLog(t, b.s, "Reloaded server configuration")
	if err := syscall.Kill(b.s.cmd.Process.Pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "A's reload", 20*time.Second, func() bool { return countLog(t, b.s, "Reloaded server configuration") > reloads })
	if err := lock.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != 0 || !strings.Contains(stderr.String(), "wrote "+b.accounts+" and the server reloaded it") {
		t.Fatalf("B after the lock: %d %s", code, stderr.String())
	}
	if now, _ := os.ReadFile(b.accounts); string(now) != string(mine) {
		t.Fatal("B left the other catalogue's users in the file")
	}
	if err := b.daveCalls(t); err != nil {
		t.Fatalf("B's user dave after B's apply: %v", err)
	}
}

// Ctrl-C or SIGTERM to a real meshc apply process holding the bus's lock — here waiting for a
// reload the server refuses, with a log meshc cannot read and a long --reload-timeout — stops it
// at once, and the lock is given back instead of being held to its expiry.
func TestASignalledApplyGivesTheLockBack(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			b := newDeliveryBus(t, false, withDave)
			b.breakReloads(t)
			if err := os.WriteFile(filepath.Join(b.dir, "inventory.yaml"), []byte("nodes:\n  - {name: anchor, runs: [catalog]}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			before, err := os.ReadFile(b.accounts)
			if err != nil {
				t.Fatal(err)
			}
			var stderr syncBuffer
			cmd := exec.Command("meshc", "apply", b.dir, "--server", b.s.url, "--user", "mesh-controller", "--password", b.pw["mesh-controller"],
				"--accounts", b.accounts, "--reload", b.s.pid(), "--monitor", b.s.monitor, "--reload-timeout", "10m")
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			defer cmd.Process.Kill()
			// It holds the lock, and waits for the reload, once it has written the file.
			testwait.For(t, "the apply to write the file", 20*time.Second, func() bool {
				now, _ := os.ReadFile(b.accounts)
				return string(now) != string(before)
			})
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			var code int
			select {
			case err := <-exited:
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					code = ee.ExitCode()
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("meshc apply did not stop on %s: %s", sig, stderr.String())
			}
			if code != exitCantRun || !strings.Contains(stderr.String(), "stopped") || !strings.Contains(stderr.String(), "the lock is given back") {
				t.Fatalf("meshc apply on %s: exit %d: %s", sig, code, stderr.String())
			}
			code, _, errs := meshc(t, "apply", b.dir, "--server", b.s.url, "--user", "mesh-controller", "--password", b.pw["mesh-controller"], "--break-lock")
			if code != 0 || !strings.Contains(errs, "nothing to break") {
				t.Fatalf("the lock after %s: %d %s", sig, code, errs)
			}
		})
	}
}

// apply --accounts with no server takes a lock too, on the file's directory: a second writer
// (another apply of another catalogue) holding it is waited for, and the decision is made after,
// from the file as that writer left it.
func TestAccountsWithNoServerWaitForTheDirectoryLock(t *testing.T) {
	t.Parallel()
	dir := cataloguetest.Extract(t, "testdata/reload.txtar")
	mint(t, dir, "--missing")
	conf := t.TempDir()
	accounts := filepath.Join(conf, "accounts.conf")
	if code, _, errs := meshc(t, "apply", dir, "--accounts", accounts); code != 0 {
		t.Fatalf("%d %s", code, errs)
	}
	mine, err := os.ReadFile(accounts)
	if err != nil {
		t.Fatal(err)
	}
	held, err := filelock.Acquire(conf, false)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("meshc", "apply", dir, "--accounts", accounts)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// The kernel lists a process waiting for a flock in /proc/locks, marked "->".
	testwait.For(t, "meshc to wait for the directory's lock", 20*time.Second, func() bool {
		locks, _ := os.ReadFile("/proc/locks")
		for _, line := range strings.Split(string(locks), "\n") {
			if f := strings.Fields(line); len(f) > 5 && f[1] == "->" && f[5] == fmt.Sprint(cmd.Process.Pid) {
				return true
			}
		}
		return false
	})
	// Meanwhile the other writer leaves its own file.
	if err := os.WriteFile(accounts, []byte("# another catalogue's users\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	held.Unlock()
	if err := cmd.Wait(); err != nil || !strings.Contains(stderr.String(), "wrote "+accounts) {
		t.Fatalf("apply --accounts after the wait: %v %s", err, stderr.String())
	}
	if now, _ := os.ReadFile(accounts); string(now) != string(mine) {
		t.Fatal("the apply that waited left the other writer's file")
	}
}
