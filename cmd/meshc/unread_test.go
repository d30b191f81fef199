package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/natsproc"
	"github.com/meshc-dev/meshc/internal/natstest"
	"github.com/meshc-dev/meshc/internal/testwait"
)

// A cluster with the node holding EVENTS down: plan and apply can read neither the stream nor
// its consumers, leave them as they are, and exit 3 — not 0, which a CI job reads as success
// while the bus may differ from the plan. Once the node is back, 0 again. On three nats-server
// processes, as mesh-controller.
func TestObjectsLeftUnreadExitThree(t *testing.T) {
	if testing.Short() {
		t.Skip("three nats-server processes and a node stopped: not with -short")
	}
	isolateNATSSettings(t)
	dir := cataloguetest.Extract(t, "testdata/restart.txtar")
	pw := mint(t, dir, "--missing")
	accounts := filepath.Join(t.TempDir(), "accounts.conf")
	if code, _, errs := meshc(t, "apply", dir, "--accounts", accounts); code != 0 {
		t.Fatalf("apply --accounts with no server: %d %s", code, errs)
	}
	data, err := os.ReadFile(accounts)
	if err != nil {
		t.Fatal(err)
	}
	controller := []nats.Option{nats.UserInfo(compiler.ControllerUser, pw[compiler.ControllerUser]), nats.CustomInboxPrefix(compiler.InboxPrefix(compiler.ControllerUser))}
	c := natsproc.StartCluster(t, 3, `include "accounts.conf"`, map[string][]byte{"accounts.conf": data}, controller...)
	as := []string{"--server", c.URLs(), "--user", compiler.ControllerUser, "--password", pw[compiler.ControllerUser]}
	if code, _, errs := meshc(t, append([]string{"apply", dir}, as...)...); code != exitOK {
		t.Fatalf("the first apply: %d %s", code, errs)
	}

	_, js := natstest.Connect(t, c.URLs(), controller...)
	s, err := js.Stream(t.Context(), compiler.EventsStream)
	if err != nil || s.CachedInfo().Cluster == nil {
		t.Fatalf("EVENTS: %v", err)
	}
	var holder *natsproc.Server
	for _, srv := range c.Servers {
		if srv.Name == s.CachedInfo().Cluster.Leader {
			holder = srv
		}
	}
	if holder == nil {
		t.Fatalf("EVENTS is on %q, none of the nodes", s.CachedInfo().Cluster.Leader)
	}
	holder.Terminate()

	var errs string
	testwait.For(t, "apply to exit 3 with EVENTS' node down", 90*time.Second, func() bool {
		var code int
		code, _, errs = meshc(t, append([]string{"apply", dir}, as...)...)
		return code == exitUnread
	})
	if !strings.Contains(errs, "left unread: the server reported them missing or offline") {
		t.Fatalf("apply's exit 3 does not say why:\n%s", errs)
	}
	code, out, errs := meshc(t, append([]string{"plan", dir}, as...)...)
	if code != exitUnread || !strings.Contains(out, "unreadable, left alone") || !strings.Contains(errs, "left unread") {
		t.Fatalf("plan with EVENTS' node down: %d\n%s%s", code, out, errs)
	}

	holder.Start()
	holder.WaitJetStream(60*time.Second, controller...)
	testwait.For(t, "apply to exit 0 with the cluster whole again", 90*time.Second, func() bool {
		code, _, errs = meshc(t, append([]string{"apply", dir}, as...)...)
		return code == exitOK
	})
	if code, out, errs := meshc(t, append([]string{"plan", dir}, as...)...); code != exitOK {
		t.Fatalf("plan with the cluster whole: %d\n%s%s", code, out, errs)
	}
}
