package proof

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/compiler"
)

// What Nats-Request-Info proves, on a real server with an account per principal. A direct call is
// stamped by the server with the caller's account, whatever the caller wrote there. A call that
// crosses a second import keeps the account the message already named: client, which may call
// front's tool and vault's, calls front with its reply aimed at vault's tool (an import of its
// own account), and front, colluding, answers with a header naming bob — who may not call vault.
// vault receives a call "from person.bob". The server then sets `svc`, the account the call came
// through last, and the check meshc derives (the plan's served tools, compiler.ServedTool.Caller)
// refuses it; it returns the caller of every direct call.
func TestRequestInfoIsBelievedForOneHopOnly(t *testing.T) {
	t.Parallel()
	b := startBus(t, "testdata/callers.txtar", "", catalogue.IsolationPerModule)
	open := b.plan.ServedTool("mesh.mod.vault.tool.open")
	if open == nil {
		t.Fatal("the plan lists no served vault.open")
	}
	calls := vaultCalls(t, b)

	t.Run("a direct call names its caller", func(t *testing.T) {
		b.connect(t, "person.alice").nc.Request("mesh.mod.vault.tool.open", []byte("direct"), 3*time.Second)
		call := next(t, calls)
		info := requestInfo(t, call)
		if info.Account != "person.alice" || info.Service != "" {
			t.Fatalf("a direct call from alice arrived as %+v", info)
		}
		if who, err := open.Caller(call.Reply, call.Header.Get(compiler.RequestInfoHeader)); err != nil || who != "person.alice" {
			t.Fatalf("the check on alice's direct call: %q, %v", who, err)
		}
	})
	t.Run("a caller's own header is replaced on a direct call", func(t *testing.T) {
		client := b.connect(t, "mod.anchor.client")
		m := nats.NewMsg("mesh.mod.vault.tool.open")
		m.Header.Set(compiler.RequestInfoHeader, `{"acc":"person.alice"}`)
		m.Data = []byte("pretending")
		client.nc.RequestMsg(m, 3*time.Second)
		call := next(t, calls)
		if info := requestInfo(t, call); info.Account != "mod.anchor.client" {
			t.Fatalf("client's call with a header of its own arrived as %+v", info)
		}
		if who, err := open.Caller(call.Reply, call.Header.Get(compiler.RequestInfoHeader)); err != nil || who != "mod.anchor.client" {
			t.Fatalf("the check on client's call: %q, %v", who, err)
		}
	})
	for _, forged := range []string{"person.bob", "person.alice"} {
		t.Run("two hops keep a forged caller, "+forged+", and the check refuses it", func(t *testing.T) {
			front := b.connect(t, "serve.anchor.front")
			sub, err := front.nc.QueueSubscribe("mesh.mod.front.tool.ask", "front", func(m *nats.Msg) {
				answer := nats.NewMsg(m.Reply)
				answer.Header.Set(compiler.RequestInfoHeader, `{"acc":"`+forged+`"}`)
				answer.Reply = "_INBOX.mod.anchor.front.reads" // so the call it becomes has a reply, as a real call does
				answer.Data = []byte("forged")
				front.nc.PublishMsg(answer)
			})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
			front.sawNoViolation(t)
			client := b.connect(t, "mod.anchor.client")
			client.requestsWithReply(t, "mesh.mod.front.tool.ask", "mesh.mod.vault.tool.open", "relay this")
			call := next(t, calls)
			info := requestInfo(t, call)
			if string(call.Data) != "forged" || info.Account != forged || info.Service != "mod.anchor.client" {
				t.Fatalf("the relayed call arrived as %q, %+v: want the forged %s, through mod.anchor.client", call.Data, info, forged)
			}
			who, err := open.Caller(call.Reply, call.Header.Get(compiler.RequestInfoHeader))
			if err == nil || !strings.Contains(err.Error(), "crossed more than one import, last through mod.anchor.client") {
				t.Fatalf("the check let a call relayed through client pass as %q (%v)", who, err)
			}
		})
	}
}

// In operator mode a person who may call every tool calls through a tool hub: two imports, the
// first into a hub no user can publish in. The server stamps the caller at that first hop and
// names the hub as svc at the second; the plan's served tool lists the hub, and the check believes
// the caller. A call relayed through a module's account is still refused.
func TestRequestInfoThroughAToolHubNamesItsCaller(t *testing.T) {
	t.Parallel()
	b := startBus(t, "testdata/callers.txtar", "", catalogue.IsolationPerModule+operatorMode)
	open := b.running.LocalPlan().ServedTool("mesh.mod.vault.tool.open")
	if open == nil || len(open.Hubs) != 1 {
		t.Fatalf("the plan's vault.open in operator mode: %+v, want one hub", open)
	}
	calls := vaultCalls(t, b)
	b.connect(t, "person.carol").nc.Request("mesh.mod.vault.tool.open", []byte("through the hub"), 3*time.Second)
	call := next(t, calls)
	// The server names accounts by their keys in operator mode.
	if info := requestInfo(t, call); open.Keys[info.Account] != "person.carol" || open.Keys[info.Service] != open.Hubs[0] {
		t.Fatalf("carol's call arrived as %+v, want her account's key through %s's", info, open.Hubs[0])
	}
	if who, err := open.Caller(call.Reply, call.Header.Get(compiler.RequestInfoHeader)); err != nil || who != "person.carol" {
		t.Fatalf("the check on carol's call through the hub: %q, %v", who, err)
	}
	// alice, who may call vault.open alone, imports it directly: one hop.
	b.connect(t, "person.alice").nc.Request("mesh.mod.vault.tool.open", []byte("direct"), 3*time.Second)
	call = next(t, calls)
	if who, err := open.Caller(call.Reply, call.Header.Get(compiler.RequestInfoHeader)); err != nil || who != "person.alice" {
		t.Fatalf("the check on alice's direct call: %q, %v", who, err)
	}
	// A header naming carol through the hub on a call made inside vault's own account (a reply
	// of its own, not the server's _R_) is not believed: no import stamped it, and nobody there
	// calls.
	forged := `{"acc":"` + b.running.AccountKey("person.carol") + `","svc":"` + b.running.AccountKey(open.Hubs[0]) + `"}`
	if who, err := open.Caller("_INBOX.serve.anchor.vault.x", forged); who == "person.carol" || err == nil {
		t.Fatalf("a call made inside vault's account with a header naming carol through the hub: %q, %v", who, err)
	}
}

// In one account no import stamps a call: the header is whatever the caller wrote, and the check
// can say only that the call came from the mesh's account.
func TestRequestInfoIsAbsentInOneAccount(t *testing.T) {
	t.Parallel()
	b := startBus(t, "testdata/callers.txtar", "", catalogue.IsolationShared)
	calls := vaultCalls(t, b)
	b.connect(t, "person.alice").nc.Request("mesh.mod.vault.tool.open", []byte("direct"), 3*time.Second)
	call := next(t, calls)
	if h := call.Header.Get(compiler.RequestInfoHeader); h != "" {
		t.Fatalf("a call in one account carries %s %q", compiler.RequestInfoHeader, h)
	}
	if who, err := b.plan.ServedTool("mesh.mod.vault.tool.open").Caller(call.Reply, ""); err != nil || who != "callers" {
		t.Fatalf("the check in one account: %q, %v", who, err)
	}
}

// vaultCalls serves vault.open as its module's serving user, passing on every call it receives and
// answering it.
func vaultCalls(t *testing.T, b *bus) <-chan *nats.Msg {
	t.Helper()
	vault := b.connect(t, "serve.anchor.vault")
	calls := make(chan *nats.Msg, 10)
	if _, err := vault.nc.QueueSubscribe("mesh.mod.vault.tool.open", "vault", func(m *nats.Msg) {
		calls <- m
		if m.Reply != "" {
			m.Respond([]byte("opened"))
		}
	}); err != nil {
		t.Fatal(err)
	}
	vault.sawNoViolation(t)
	return calls
}

type clientInfo struct {
	Account string `json:"acc"`
	Service string `json:"svc"`
}

func requestInfo(t *testing.T, m *nats.Msg) clientInfo {
	t.Helper()
	var info clientInfo
	if err := json.Unmarshal([]byte(m.Header.Get(compiler.RequestInfoHeader)), &info); err != nil {
		t.Fatalf("%s %q: %v", compiler.RequestInfoHeader, m.Header.Get(compiler.RequestInfoHeader), err)
	}
	return info
}

// next is the next call vault received, within a few seconds.
func next(t *testing.T, calls <-chan *nats.Msg) *nats.Msg {
	t.Helper()
	select {
	case m := <-calls:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("vault received no call")
		return nil
	}
}

// A call through a tool hub is believed to come from the account its header names, with `svc`
// the hub (TestRequestInfoThroughAToolHubNamesItsCaller), on the ground that nothing enters a hub
// but a call the server stamped at its first hop. Tried against that ground with several hubs, as
// a mesh of thousands of serving modules has (a hub per serving account here): a person who may
// call every tool calls a colluder's tool, through the colluder's hub, with the reply aimed at
// another tool, served through another hub; the colluder answers with a reply of its own and a
// header naming a person the other tool believes. The answer is not believed: observed, the
// server delivers nothing of it to the other tool (with one hub, it drops an answer that came
// back through the very export it would cross again).
func TestACallerCannotBeForgedThroughSeveralToolHubs(t *testing.T) {
	t.Parallel()
	cat, loaded := cataloguetest.Load(t, "testdata/callers.txtar")
	cat.Mesh.Auth.Value = catalogue.AuthOperator
	b := startCatalogue(t, cat, loaded, "", catalogue.IsolationPerModule, func(p *compiler.Plan) { p.ShareHubs(1) })
	local := b.running.LocalPlan()
	open, ask := local.ServedTool("mesh.mod.vault.tool.open"), local.ServedTool("mesh.mod.front.tool.ask")
	if len(open.Hubs) != 1 || len(ask.Hubs) != 1 || open.Hubs[0] == ask.Hubs[0] {
		t.Fatalf("vault.open through %v and front.ask through %v: want a hub each", open.Hubs, ask.Hubs)
	}
	calls := vaultCalls(t, b)
	// carol's own call, through vault's hub, names her.
	b.connect(t, "person.carol").nc.Request("mesh.mod.vault.tool.open", []byte("mine"), 3*time.Second)
	if call := next(t, calls); call.Header.Get(compiler.RequestInfoHeader) == "" {
		t.Fatal("carol's call through the hub carries no Nats-Request-Info")
	} else if who, err := open.Caller(call.Reply, call.Header.Get(compiler.RequestInfoHeader)); err != nil || who != "person.carol" {
		t.Fatalf("the check on carol's call through the hub: %q, %v", who, err)
	}
	// The forgery: carol calls front.ask with her reply aimed at vault.open; front's server,
	// colluding, answers naming alice, whom vault.open believes.
	alice := b.running.AccountKey("person.alice")
	front := b.connect(t, "serve.anchor.front")
	if _, err := front.nc.QueueSubscribe("mesh.mod.front.tool.ask", "front", func(m *nats.Msg) {
		answer := nats.NewMsg(m.Reply)
		answer.Header.Set(compiler.RequestInfoHeader, `{"acc":"`+alice+`"}`)
		answer.Reply = "_INBOX.mod.anchor.front.reads"
		answer.Data = []byte("forged")
		front.nc.PublishMsg(answer)
	}); err != nil {
		t.Fatal(err)
	}
	front.sawNoViolation(t)
	// carol reaches front.ask through its own hub.
	if m, err := b.connect(t, "person.carol").nc.Request("mesh.mod.front.tool.ask", []byte("plain"), 3*time.Second); err != nil || string(m.Data) != "forged" {
		t.Fatalf("carol's call to front.ask through its hub: %v", err)
	}
	b.connect(t, "person.carol").requestsWithReply(t, "mesh.mod.front.tool.ask", "mesh.mod.vault.tool.open", "relay this")
	select {
	case call := <-calls:
		who, err := open.Caller(call.Reply, call.Header.Get(compiler.RequestInfoHeader))
		if err == nil {
			t.Fatalf("vault.open believed the forged call came from %s (%s)", who, call.Header.Get(compiler.RequestInfoHeader))
		}
	case <-time.After(2 * time.Second):
		// Dropped by the server before it reached vault: blocked.
	}
}
