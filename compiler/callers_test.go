package compiler

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/meshc-dev/meshc/catalogue"
)

// Each served tool lists the accounts that may call it: with an account per principal each
// calling instance's and person's account (the serving module's own instances when it calls
// itself, a person's every-tool grant too), never the module's account it is served from; a tool
// nobody runs not at all; in one account, that account.
func TestServedToolsNameTheirCallers(t *testing.T) {
	p := compileIsolated(t, "../proof/testdata/instances.txtar", catalogue.IsolationPerModule)
	want := []ServedTool{
		{Subject: "mesh.mod.peer.tool.peek", Module: "peer", Queue: "peer", Account: "mod.peer",
			Callers: []string{"mod.anchor.relay", "mod.laptop.relay", "mod.spare.relay", "person.alice"}},
		{Subject: "mesh.mod.relay.tool.ask", Module: "relay", Queue: "relay", Account: "mod.relay",
			Callers: []string{"mod.anchor.peer", "mod.anchor.relay", "mod.anchor.source", "mod.laptop.peer", "mod.laptop.relay", "mod.spare.relay", "person.alice", "person.bob"}},
	}
	if diff := cmp.Diff(want, p.Tools); diff != "" {
		t.Errorf("served tools (-want +got):\n%s", diff)
	}
	if p.ServedTool("mesh.mod.ghost.tool.haunt") != nil {
		t.Error("a tool no running module serves is listed")
	}
	shared := compileIsolated(t, "../proof/testdata/instances.txtar", catalogue.IsolationShared)
	for _, tool := range shared.Tools {
		if tool.Account != "inst" || !slices.Equal(tool.Callers, []string{"inst"}) {
			t.Errorf("in one account %s is served in %s for %v", tool.Subject, tool.Account, tool.Callers)
		}
	}
}

// Caller believes the server's Nats-Request-Info on one hop only. A call made inside the tool's
// account is its account's whatever header it carries, which in one account is every caller, and
// with an account per principal nobody: a module's account holds its serving users alone.
func TestCallerBelievesOneHopOnly(t *testing.T) {
	ask := ServedTool{Subject: "mesh.mod.relay.tool.ask", Module: "relay", Queue: "relay", Account: "mod.relay",
		Callers: []string{"mod.anchor.peer", "mod.laptop.relay", "person.bob"}}
	shared := ServedTool{Subject: "mesh.mod.relay.tool.ask", Module: "relay", Queue: "relay", Account: "inst", Callers: []string{"inst"}}
	for _, tc := range []struct {
		name         string
		tool         ServedTool
		reply, info  string
		caller, fail string
	}{
		{"a direct call from another account", ask, "_R_.ab12cd.x1", `{"acc":"person.bob","rtt":1000}`, "person.bob", ""},
		{"a sibling instance's call, from its own account", ask, "_R_.ab12cd.x2", `{"acc":"mod.laptop.relay"}`, "mod.laptop.relay", ""},
		{"a call inside the module's account", ask, "_INBOX.mod.laptop.relay.x", "", "", "made inside mod.relay, where no user calls"},
		{"a call inside the module's account with a header of its own", ask, "_INBOX.mod.laptop.relay.x", `{"acc":"person.bob"}`, "", "made inside mod.relay, where no user calls"},
		{"a caller the tool's callers do not hold", ask, "_R_.ab12cd.x1", `{"acc":"person.alice"}`, "", "account person.alice may not call"},
		{"a caller named two hops back", ask, "_R_.ab12cd.x1", `{"acc":"person.bob","svc":"mod.anchor.source"}`, "", "crossed more than one import, last through mod.anchor.source"},
		{"a caller named after a sibling's own import", ask, "_R_.ab12cd.x1", `{"acc":"person.bob","svc":"mod.laptop.relay"}`, "", "crossed more than one import, last through mod.laptop.relay"},
		{"a call with no reply", ask, "", `{"acc":"person.bob"}`, "", "no reply proves no caller"},
		{"an import without the header", ask, "_R_.ab12cd.x1", "", "", "without a Nats-Request-Info"},
		{"a header that is not JSON", ask, "_R_.ab12cd.x1", "bob", "", "not the server's"},
		{"a call in one account", shared, "_INBOX.person.bob.x", "", "inst", ""},
		{"a call in one account with a header of its own", shared, "_INBOX.person.bob.x", `{"acc":"person.alice"}`, "inst", ""},
	} {
		got, err := tc.tool.Caller(tc.reply, tc.info)
		switch {
		case tc.fail == "" && (err != nil || got != tc.caller):
			t.Errorf("%s: caller %q, %v; want %s", tc.name, got, err, tc.caller)
		case tc.fail != "" && (err == nil || !strings.Contains(err.Error(), tc.fail)):
			t.Errorf("%s: caller %q, %v; want an error saying %q", tc.name, got, err, tc.fail)
		}
	}
}
