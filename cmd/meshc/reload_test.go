package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/meshc-dev/meshc/internal/testwait"
)

// meshc runs the command in this process and returns its exit code, stdout and stderr.
func meshc(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errs bytes.Buffer
	code := runWith(&invocation{stdout: &out, stderr: &errs}, args)
	return code, out.String(), errs.String()
}

// mint mints users in dir and returns their passwords.
func mint(t *testing.T, dir string, users ...string) map[string]string {
	t.Helper()
	code, out, errs := meshc(t, append([]string{"mint", "--dir", dir}, users...)...)
	if code != 0 {
		t.Fatalf("mint: %d %s", code, errs)
	}
	pw := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		user, password, _ := strings.Cut(line, " ")
		pw[user] = password
	}
	return pw
}

// A running nats-server picks up a new user when meshc apply --accounts rewrites its accounts file
// and signals it, the way an operator's CI would: the real SIGHUP path of the server, and the
// connection that already existed is neither dropped nor disturbed.
func TestApplyAccountsReloadsARunningServerWithoutDroppingConnections(t *testing.T) {
	b := newDeliveryBus(t, true, nil)
	dir, pw, accounts, s, monitor := b.dir, b.pw, b.accounts, b.s, b.s.monitor

	var disconnects atomic.Int32
	catalog, err := nats.Connect(s.url, nats.UserInfo("serve.anchor.catalog", pw["serve.anchor.catalog"]),
		nats.DisconnectErrHandler(func(*nats.Conn, error) { disconnects.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	defer catalog.Close()
	sub, err := catalog.QueueSubscribe("mesh.mod.catalog.tool.lookup", "catalog", func(m *nats.Msg) { m.Respond([]byte("found")) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	catalog.Flush()
	cid, _ := catalog.GetClientID()

	// dave does not exist yet.
	if _, err := nats.Connect(s.url, nats.UserInfo("person.dave", "nope")); err == nil {
		t.Fatal("an unknown user connected")
	}

	// A person is added and minted; apply writes the file and signals this process's server.
	withDave(t, dir)
	dave := mint(t, dir, "person.dave")["person.dave"]
	code, _, errs := meshc(t, "apply", dir, "--accounts", accounts, "--reload", s.pid(), "--monitor", monitor)
	if code != 0 || !strings.Contains(errs, "the server reloaded it") {
		t.Fatalf("apply --accounts --reload: %d %s", code, errs)
	}

	var nc *nats.Conn
	testwait.ForNil(t, "the new user to connect after the reload", 10*time.Second, func() error {
		nc, err = nats.Connect(s.url, nats.UserInfo("person.dave", dave), nats.CustomInboxPrefix("_INBOX.person.dave"))
		return err
	})
	defer nc.Close()
	reply, err := nc.Request("mesh.mod.catalog.tool.lookup", []byte("?"), 2*time.Second)
	if err != nil || string(reply.Data) != "found" {
		t.Fatalf("the new user's call to the existing module: %v %v", reply, err)
	}
	if n := disconnects.Load(); n != 0 {
		t.Fatalf("the existing connection was dropped %d time(s) by the reload", n)
	}
	if now, _ := catalog.GetClientID(); now != cid || !catalog.IsConnected() {
		t.Fatalf("the existing connection was replaced (client id %d, was %d)", now, cid)
	}

	// Nothing changed: the file is not rewritten and the server is not asked again.
	before, _ := os.Stat(accounts)
	code, _, errs = meshc(t, "apply", dir, "--accounts", accounts, "--reload", s.pid(), "--monitor", monitor)
	if code != 0 || !strings.Contains(errs, "is current and the server has loaded it (its configuration digest matches and every service import is wired); the server is not asked to reload") {
		t.Fatalf("second apply --accounts: %d %s", code, errs)
	}
	if after, _ := os.Stat(accounts); !after.ModTime().Equal(before.ModTime()) {
		t.Fatal("an unchanged accounts file was rewritten")
	}
}

// serverWithAccounts starts a nats-server process from a configuration in dir that includes
// dir/accounts.conf, with its monitoring endpoint, its log in dir/nats.log (log_file) and its own
// signal handling (SIGHUP reloads), as in production.
func serverWithAccounts(t *testing.T, dir string) *serverProcess {
	t.Helper()
	log := filepath.Join(dir, "nats.log")
	return startServerProcess(t, serverConf(t, dir, fmt.Sprintf("log_file: %q\n", log)), log)
}

// serverConf writes dir/server.conf: a server including dir/accounts.conf, with extra.
func serverConf(t *testing.T, dir, extra string) string {
	t.Helper()
	conf := filepath.Join(dir, "server.conf")
	if err := os.WriteFile(conf, []byte("host: 127.0.0.1\nport: -1\nhttp: \"127.0.0.1:-1\"\njetstream { store_dir: \""+
		filepath.Join(dir, "js")+"\" }\n"+extra+"include \"accounts.conf\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return conf
}
