package proof

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rogpeppe/go-internal/txtar"
	"golang.org/x/crypto/bcrypt"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/internal/synth"
	"github.com/meshc-dev/meshc/lint"
	"github.com/meshc-dev/meshc/up"
)

// toolShape is one way a catalogue can place and call a tool: the shapes an isolated layout has
// to load and serve once. A module s serves tool t; a module c emits an event and calls s.t.
type toolShape struct {
	serverOn int    // machines s runs on: 0 (runs nowhere), 1, or 3
	selfCall bool   // s calls its own tool: served by itself and by its siblings
	consumes bool   // s consumes c's event, so each instance has its own consumer beside the tool
	callerOn int    // machines c runs on, from the last backwards: 0, 1 or 2 (sharing machines with s)
	person   string // what a person may call: nothing, s.t, or every tool
	mutual   bool   // a module u on two machines serves v, calls s.t, and s calls u.v back
	ghost    bool   // c and the person call a tool of a module that runs nowhere
}

// toolShapes are every combination of the fields above.
func toolShapes() []toolShape {
	var out []toolShape
	for _, serverOn := range []int{0, 1, 3} {
		for _, selfCall := range []bool{false, true} {
			for _, consumes := range []bool{false, true} {
				for _, callerOn := range []int{0, 1, 2} {
					for _, person := range []string{"", "s.t", "*"} {
						for _, mutual := range []bool{false, true} {
							for _, ghost := range []bool{false, true} {
								out = append(out, toolShape{serverOn, selfCall, consumes, callerOn, person, mutual, ghost})
							}
						}
					}
				}
			}
		}
	}
	return out
}

func (s toolShape) String() string {
	return fmt.Sprintf("s-on-%d/self-%v/consumes-%v/c-on-%d/person-%q/mutual-%v/ghost-%v",
		s.serverOn, s.selfCall, s.consumes, s.callerOn, s.person, s.mutual, s.ghost)
}

// archive writes the shape as a catalogue of three machines.
func (s toolShape) archive() *txtar.Archive {
	var serverCalls, callerCalls, personCalls []string
	if s.selfCall {
		serverCalls = append(serverCalls, "s.t")
	}
	if s.mutual {
		serverCalls = append(serverCalls, "u.v")
	}
	callerCalls = append(callerCalls, "s.t")
	if s.ghost {
		callerCalls = append(callerCalls, "g.x")
	}
	switch s.person {
	case "*":
		personCalls = []string{`"*"`}
	case "s.t":
		personCalls = []string{"s.t"}
		if s.ghost {
			personCalls = append(personCalls, "g.x")
		}
	}
	var sm strings.Builder
	sm.WriteString("module: s\ntools: [t]\n")
	if len(serverCalls) > 0 {
		fmt.Fprintf(&sm, "calls: [%s]\n", strings.Join(serverCalls, ", "))
	}
	if s.consumes {
		sm.WriteString("consumes: [c.made]\n")
	}
	files := []txtar.File{
		{Name: "mesh.yaml", Data: []byte("name: shapes\n")},
		{Name: "modules/s.yaml", Data: []byte(sm.String())},
		{Name: "modules/c.yaml", Data: []byte(fmt.Sprintf("module: c\nemits: [made]\ncalls: [%s]\n", strings.Join(callerCalls, ", ")))},
		{Name: "modules/g.yaml", Data: []byte("module: g\ntools: [x]\n")},
	}
	if s.mutual {
		files = append(files, txtar.File{Name: "modules/u.yaml", Data: []byte("module: u\ntools: [v]\ncalls: [s.t]\n")})
	}
	runs := make([][]string, 3)
	for i := range s.serverOn {
		runs[i] = append(runs[i], "s")
	}
	for i := range s.callerOn {
		runs[2-i] = append(runs[2-i], "c")
	}
	if s.mutual {
		runs[0], runs[1] = append(runs[0], "u"), append(runs[1], "u")
	}
	var inv strings.Builder
	inv.WriteString("nodes:\n")
	for i, r := range runs {
		fmt.Fprintf(&inv, "  - {name: m%d, runs: [%s]}\n", i, strings.Join(r, ", "))
	}
	if len(personCalls) > 0 {
		fmt.Fprintf(&inv, "people:\n  - {name: pat, may-call: [%s]}\n", strings.Join(personCalls, ", "))
	}
	files = append(files, txtar.File{Name: "inventory.yaml", Data: []byte(inv.String())})
	return &txtar.Archive{Files: files}
}

// TestEveryToolShapeLoadsInBothIsolations builds a catalogue of every shape toolShapes makes — a
// tool on no, one or three machines, called by its own module, by another on machines it shares,
// by a module it calls back, by a person granted it or every tool, beside a tool nobody runs —
// and requires each that lints without an error to compile, in both isolations, to an accounts
// file nats-server loads: its own parser, strictly, and its account configuration (where
// `import forms a cycle` is refused). An instance calling its own module's tool on several
// machines was such a file: each instance imported the tool from every other.
//
// The shapes are independent (each its own files and temporary directories, and the server only
// parses and configures, listening on nothing), so they run in parallel; under -short, the inner
// loop, one shape in 17 is tried (a spread over every field), and CI tries all 432.
func TestEveryToolShapeLoadsInBothIsolations(t *testing.T) {
	t.Parallel()
	hash, err := bcrypt.GenerateFromPassword([]byte("shape"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	for i, shape := range toolShapes() {
		if testing.Short() && i%17 != 0 {
			continue
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			dir := cataloguetest.Write(t, shape.archive())
			for _, isolation := range isolations {
				cat, found, err := catalogue.Load(dir)
				if err != nil {
					t.Fatal(err)
				}
				cat.Mesh.Isolation.Value = isolation
				findings, plan := lint.Check(cat, found)
				if slices.ContainsFunc(findings, func(f catalogue.Finding) bool { return f.Severity == catalogue.Error }) {
					t.Fatalf("%s: the shape does not lint clean, so it proves nothing: %v", shape, findings)
				}
				if err := serverLoads(t, plan, string(hash)); err != nil {
					t.Errorf("%s, %s: nats-server refuses the accounts file of a catalogue lint passed: %v", shape, isolation, err)
				}
			}
		})
	}
}

// serverLoads renders the plan's accounts file with every user given hash, includes it the way
// meshc up does, and has nats-server parse it strictly and configure its accounts.
func serverLoads(t *testing.T, plan *compiler.Plan, hash string) error {
	t.Helper()
	for i := range plan.Users {
		plan.Users[i].Hash = hash
	}
	data, err := emit.Accounts(plan, emit.AccountsOptions{})
	if err != nil {
		return err
	}
	state := t.TempDir()
	if err := os.WriteFile(filepath.Join(state, emit.AccountsFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	conf, err := up.WriteServerConf(state, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := (&server.Options{CheckConfig: true}).ProcessConfigFile(conf); err != nil {
		return err
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		return err
	}
	opts.NoLog, opts.NoSigs = true, true
	s, err := server.NewServer(opts)
	if err != nil {
		return err
	}
	s.Shutdown()
	return nil
}

// TestMultiInstanceCataloguesRunAndServeEachCallOnce runs catalogues with modules on several
// machines the way `meshc up --once` does — up.Start, then the sample flow — in both isolations,
// and calls every served tool as every user allowed to: each call must be served by exactly one
// instance, the calls spread over the instances, and still be served when one instance stops.
// With an account per instance each call went to every instance (a subject imported from several
// accounts is delivered to each), and a module calling its own tool did not load at all.
//
// The catalogues: testdata/instances.txtar (every shape of toolShapes at once, by hand), a tool
// on three machines that no instance calls itself (which loaded before, and served each call
// three times), and a synthetic mesh whose packet filter, which runs on every machine, serves a
// tool and calls it.
func TestMultiInstanceCataloguesRunAndServeEachCallOnce(t *testing.T) {
	t.Parallel()
	catalogues := map[string]func(t *testing.T) (*catalogue.Catalogue, catalogue.Findings){
		"instances": func(t *testing.T) (*catalogue.Catalogue, catalogue.Findings) {
			return cataloguetest.Load(t, "testdata/instances.txtar")
		},
		"three instances, no self-call": func(t *testing.T) (*catalogue.Catalogue, catalogue.Findings) {
			shape := toolShape{serverOn: 3, consumes: true, callerOn: 2, person: "*", mutual: true}
			c, found, err := catalogue.Load(cataloguetest.Write(t, shape.archive()))
			if err != nil {
				t.Fatal(err)
			}
			return c, found
		},
		"synthetic": func(t *testing.T) (*catalogue.Catalogue, catalogue.Findings) {
			files, err := synth.Files(24, 3)
			if err != nil {
				t.Fatal(err)
			}
			const filter = "modules/platform/firewall.yaml"
			if bytes.Contains(files[filter], []byte("tools:")) || bytes.Contains(files[filter], []byte("calls:")) {
				t.Fatalf("the synthetic packet filter already serves or calls something:\n%s", files[filter])
			}
			files[filter] = append(files[filter], "tools: [status]\ncalls: [firewall.status]\n"...)
			a := &txtar.Archive{}
			for _, name := range slices.Sorted(maps.Keys(files)) {
				a.Files = append(a.Files, txtar.File{Name: name, Data: files[name]})
			}
			c, found, err := catalogue.Load(cataloguetest.Write(t, a))
			if err != nil {
				t.Fatal(err)
			}
			return c, found
		},
	}
	for _, name := range slices.Sorted(maps.Keys(catalogues)) {
		for _, isolation := range inLoop(isolations) {
			t.Run(name+"/"+isolation, func(t *testing.T) {
				t.Parallel()
				cat, found := catalogues[name](t)
				b := startCatalogue(t, cat, found, "", isolation)
				var flow strings.Builder
				if err := b.running.SampleFlow(&flow); err != nil || !strings.Contains(flow.String(), "the ack was accepted") {
					t.Fatalf("the sample flow of meshc up --once: %v (%s)", err, flow.String())
				}
				servesEachCallOnce(t, b)
			})
		}
	}
}

// servesEachCallOnce has every instance of every tool's module serve it in its queue group, as
// its own user, and every user granted the tool call it; then stops one instance and calls again.
func servesEachCallOnce(t *testing.T, b *bus) {
	t.Helper()
	clients := map[string]*client{}
	as := func(user string) *client {
		if clients[user] == nil {
			clients[user] = b.connect(t, user)
		}
		return clients[user]
	}
	tools := 0
	for _, tool := range servedTools(b.plan) {
		servers, callers := toolServers(b.plan, tool), toolCallers(b.plan, tool)
		if len(callers) == 0 {
			continue
		}
		tools++
		t.Run(tool, func(t *testing.T) {
			instances := make([]*instance, len(servers))
			for i, server := range servers {
				instances[i] = serve(t, as(server), tool)
			}
			// Enough calls that all of them landing on one of several instances would be a
			// broken queue, not chance: 2·(1/2)^24 for two instances.
			made := callFrom(t, callers, as, tool, 24)
			served := servedOnce(t, tool, instances, made)
			used := 0
			for _, n := range served {
				if n > 0 {
					used++
				}
			}
			if len(servers) > 1 && used < 2 {
				t.Errorf("%s: all %d calls went to one of %d instances (%v): the load is not spread", tool, made, len(servers), served)
			}
			if len(servers) < 2 {
				return
			}
			// One instance stops: every call is still served, once, by the others.
			stopped := instances[0]
			if err := stopped.sub.Unsubscribe(); err != nil {
				t.Fatal(err)
			}
			if err := stopped.c.nc.Flush(); err != nil {
				t.Fatal(err)
			}
			made = callFrom(t, callers, as, tool, 6)
			servedOnce(t, tool, instances[1:], made)
		})
	}
	if tools == 0 {
		t.Fatal("no tool was called: the catalogue proves nothing about serving")
	}
}

// instance is one module instance serving a tool, with what it served before the calls counted.
type instance struct {
	c      *client
	sub    *nats.Subscription
	before int64
}

// serve subscribes tool in its module's queue group as c's user, answering every call.
func serve(t *testing.T, c *client, tool string) *instance {
	t.Helper()
	sub, err := c.nc.QueueSubscribe(tool, toolQueue(tool), func(m *nats.Msg) { m.Respond([]byte(c.user)) })
	if err != nil {
		t.Fatal(err)
	}
	c.sawNoViolation(t)
	t.Cleanup(func() { sub.Unsubscribe() })
	return &instance{c: c, sub: sub}
}

// received is how many calls the instance's subscription has received, handled or still queued.
// After a Flush of its connection it counts every copy the server had sent it: the server queues
// every copy of a call to each instance it delivers to while it processes the call, before any
// instance can answer, so before the caller has its answer.
func (i *instance) received(t *testing.T) int64 {
	t.Helper()
	if err := i.c.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	delivered, err := i.sub.Delivered()
	if err != nil {
		t.Fatal(err)
	}
	queued, _, err := i.sub.Pending()
	if err != nil {
		t.Fatal(err)
	}
	return delivered + int64(queued)
}

// callFrom makes calls calls to tool, taking turns among the callers (each calls at least once),
// each answered, and returns how many it made.
func callFrom(t *testing.T, callers []string, as func(string) *client, tool string, calls int) int {
	t.Helper()
	made := 0
	for i := range max(calls, len(callers)) {
		c := as(callers[i%len(callers)])
		if _, err := c.nc.Request(tool, []byte(fmt.Sprintf("call %d", i)), 5*time.Second); err != nil {
			t.Fatalf("%s calling %s: %v (violations: %v)", c.user, tool, err, c.seen())
		}
		made++
	}
	return made
}

// servedOnce requires the instances to have received exactly made calls between them since the
// last count — every call served, none served twice — and returns what each received.
func servedOnce(t *testing.T, tool string, instances []*instance, made int) []int64 {
	t.Helper()
	served := make([]int64, len(instances))
	var total int64
	for k, i := range instances {
		n := i.received(t)
		served[k], i.before = n-i.before, n
		total += served[k]
	}
	if total != int64(made) {
		t.Fatalf("%s: %d calls were received %d times by its %d instances (%v): each call must be served exactly once", tool, made, total, len(instances), served)
	}
	return served
}

// servedTools are the tools some module running somewhere serves, in order.
func servedTools(p *compiler.Plan) []string {
	var out []string
	for _, u := range p.Users {
		for _, s := range u.Subscribe.Allow {
			if subject, queue := compiler.SplitQueue(s); queue != "" {
				out = append(out, subject)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// toolServers are the module instances serving a tool.
func toolServers(p *compiler.Plan, tool string) []string {
	var out []string
	for _, u := range p.Users {
		if len(u.Why(compiler.Subscribe, compiler.QueueGrant(tool, toolQueue(tool)))) > 0 {
			out = append(out, u.Name)
		}
	}
	return out
}

// toolCallers are the users other than the controller granted a call to a tool.
func toolCallers(p *compiler.Plan, tool string) []string {
	var out []string
	for _, u := range p.Users {
		if u.Kind != compiler.KindController && len(u.Why(compiler.Publish, tool)) > 0 {
			out = append(out, u.Name)
		}
	}
	return out
}
