package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
)

// A module that consumes one more event, after the server restarted: nats-server answers the
// consumer's update from one filter to two with the configuration it had before (filter_subject
// set, no filter_subjects) while it stores the new one, and nats.go took the missing list for a
// server that cannot hold two filters. apply reads the consumer back and judges by what the
// server stores: the saved plan applies with exit 0, and the bus then holds the plan. On a real
// nats-server process, restarted between the two applies.
func TestAnUpdateAnsweredOddlyAfterARestartIsJudgedByWhatTheServerStores(t *testing.T) {
	isolateNATSSettings(t)
	dir := cataloguetest.Extract(t, "testdata/restart.txtar")
	pw := mint(t, dir, "--missing")
	conf := filepath.Join(t.TempDir(), "nats")
	if code, _, errs := meshc(t, "apply", dir, "--accounts", filepath.Join(conf, "accounts.conf")); code != 0 {
		t.Fatalf("apply --accounts with no server: %d %s", code, errs)
	}
	// A port of its own for the server's life, so the restarted server is where it was.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	serverConf := filepath.Join(conf, "server.conf")
	if err := os.WriteFile(serverConf, fmt.Appendf(nil, "host: 127.0.0.1\nport: %d\nhttp: \"127.0.0.1:-1\"\njetstream { store_dir: %q }\ninclude \"accounts.conf\"\n",
		port, filepath.Join(conf, "js")), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startServerProcess(t, serverConf, "")
	as := []string{"--server", p.url, "--user", "mesh-controller", "--password", pw["mesh-controller"]}
	if code, _, errs := meshc(t, append([]string{"apply", dir}, as...)...); code != 0 {
		t.Fatalf("the first apply: %d %s", code, errs)
	}

	// The server restarts, as after an upgrade or a reboot.
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.cmd.Wait()
	p = startServerProcess(t, serverConf, "")

	// scheduler consumes one more event.
	v2, err := os.ReadFile(filepath.Join(dir, "modules-v2", "scheduler.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "modules", "scheduler.yaml"), v2, 0o644); err != nil {
		t.Fatal(err)
	}
	saved := filepath.Join(t.TempDir(), "plan.json")
	code, out, errs := meshc(t, append([]string{"plan", dir, "--save", saved}, as...)...)
	if code != 1 || !strings.Contains(out, "+ mesh.mod.registry.event.image.pushed") {
		t.Fatalf("the plan of one more event: %d\n%s%s", code, out, errs)
	}
	deadline := time.Now().Add(quickly)
	if code, out, errs := meshc(t, append([]string{"apply", saved}, as...)...); code != 0 {
		t.Fatalf("applying the saved plan after the restart: %d\n%s%s", code, out, errs)
	}
	if code, out, errs := meshc(t, append([]string{"plan", dir}, as...)...); code != 0 || !strings.Contains(out, "0 to create, 0 to change, 0 to replace, 0 to delete") {
		t.Fatalf("the plan after applying: %d\n%s%s", code, out, errs)
	}
	if time.Now().After(deadline) {
		t.Fatalf("applying one filter more took past %s", quickly)
	}
}
