package synth

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/lint"
)

func TestFilesDeterministic(t *testing.T) {
	a, err := Files(200, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Files(200, 7)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.EqualFunc(a, b, bytes.Equal) {
		t.Fatal("Files(200, 7) gave different catalogues on two runs")
	}
	// Different seeds must give different catalogues, or the seed is not reaching the choices.
	c, err := Files(200, 8)
	if err != nil {
		t.Fatal(err)
	}
	if maps.EqualFunc(a, c, bytes.Equal) {
		t.Fatal("seeds 7 and 8 gave the same catalogue")
	}
}

func TestFilesTooSmall(t *testing.T) {
	if _, err := Files(MinModules-1, 1); err == nil {
		t.Fatalf("Files(%d) succeeded; the fixed modules alone cannot make a catalogue", MinModules-1)
	}
	files, err := Files(MinModules, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := countModules(files); got != MinModules {
		t.Fatalf("Files(%d) wrote %d manifests", MinModules, got)
	}
}

func countModules(files map[string][]byte) int {
	n := 0
	for p := range files {
		if strings.HasPrefix(p, "modules/") {
			n++
		}
	}
	return n
}

// load writes a synthetic catalogue and loads it, failing on any loader finding.
func load(t *testing.T, n int, seed int64) *catalogue.Catalogue {
	t.Helper()
	dir := t.TempDir()
	if err := Write(dir, n, seed); err != nil {
		t.Fatal(err)
	}
	c, findings, err := catalogue.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Errorf("loader: %s", f)
	}
	if len(c.Modules) != n {
		t.Fatalf("loaded %d modules, want %d", len(c.Modules), n)
	}
	return c
}

// TestLintsClean: the catalogue is clean under every lint rule, so a benchmark over it measures
// the clean path. Info findings would be as wrong as errors here: the generator promises none.
func TestLintsClean(t *testing.T) {
	for _, tc := range []struct {
		n    int
		seed int64
	}{{MinModules, 1}, {200, 2}} {
		c := load(t, tc.n, tc.seed)
		findings := lint.Run(c, nil)
		for _, f := range findings {
			// The generator writes no credentials.yaml (hashes are minted, not generated), so
			// the one warning saying `meshc mint --missing` is expected.
			if f.Rule == "credential-missing" && f.Pos.Line == 0 {
				continue
			}
			t.Errorf("n=%d seed=%d: %s", tc.n, tc.seed, f)
		}
		// Not vacuous: the same catalogue with one planted fault is not clean.
		m := ordinaryModule(c)
		m.Calls = append(m.Calls, catalogue.Text{Value: m.Name.Value + ".no-such-tool", Pos: catalogue.Pos{File: m.File, Line: 999, Col: 3}})
		if !lint.Run(c, nil).HasErrors() {
			t.Errorf("n=%d: a call of a tool nobody serves was not an error", tc.n)
		}
	}
}

// TestCoherent checks, from the loaded model and the compiler's own derivations, the promises
// that make the catalogue clean: every consumed subject has an emitter and every emitted one a
// listener other than the audit logger, every call is served, every requirement is met on the
// running mesh, every use is of a seat that accepts work and is held, and seats have exactly the
// holders their scope allows. It does not need lint, so it also pins the generator's shape when
// lint changes.
func TestCoherent(t *testing.T) {
	for _, tc := range []struct {
		n    int
		seed int64
	}{{MinModules, 1}, {9, 2}, {200, 3}, {1000, 4}} {
		t.Run(fmt.Sprintf("n=%d", tc.n), func(t *testing.T) {
			c := load(t, tc.n, tc.seed)
			for _, problem := range incoherence(c) {
				t.Error(problem)
			}
			if want := max(1, tc.n/4); len(c.Inventory.Nodes) != want {
				t.Errorf("%d machines, want %d", len(c.Inventory.Nodes), want)
			}
		})
	}
}

// TestIncoherenceFires keeps TestCoherent honest: each kind of fault it looks for, planted in a
// clean catalogue, is reported.
func TestIncoherenceFires(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(c *catalogue.Catalogue)
		want  string
	}{
		{"unheard", func(c *catalogue.Catalogue) {
			// On a role: any module's successor might consume it with MODULE.**.
			for _, r := range c.Mesh.Roles {
				if r.Name.Value == filterRole {
					r.Emits = append(r.Emits, catalogue.Text{Value: "dropped"})
				}
			}
		}, "nobody but the audit logger"},
		{"consumed nothing", func(c *catalogue.Catalogue) {
			m := ordinaryModule(c)
			m.Consumes = append(m.Consumes, catalogue.Text{Value: "bus.nothing"})
		}, "nothing publishes"},
		{"unserved", func(c *catalogue.Catalogue) {
			m := ordinaryModule(c)
			m.Calls = append(m.Calls, catalogue.Text{Value: "bus.nothing"})
		}, "nobody serves"},
		{"unmet", func(c *catalogue.Catalogue) {
			m := ordinaryModule(c)
			m.Requires = append(m.Requires, catalogue.Text{Value: "no-such-interface"})
		}, "no running module provides"},
		{"contended", func(c *catalogue.Catalogue) {
			n := c.Inventory.Nodes[len(c.Inventory.Nodes)-1]
			n.Runs = append(n.Runs, catalogue.Text{Value: busModule})
		}, "holders of mesh-scoped"},
		{"node contended", func(c *catalogue.Catalogue) {
			n := c.Inventory.Nodes[0]
			n.Runs = append(n.Runs, catalogue.Text{Value: firewallModule})
		}, "holders of node-scoped"},
		{"use of nothing", func(c *catalogue.Catalogue) {
			m := ordinaryModule(c)
			m.Uses = append(m.Uses, catalogue.Text{Value: filterRole})
		}, "accepts no work"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, 40, 5)
			tc.plant(c)
			problems := incoherence(c)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Errorf("planted %s; problems %q do not mention %q", tc.name, problems, tc.want)
			}
		})
	}
}

func ordinaryModule(c *catalogue.Catalogue) *catalogue.Module {
	for _, m := range c.Modules {
		if !strings.HasPrefix(m.File, "modules/platform/") {
			return m
		}
	}
	panic("no ordinary module")
}

func incoherence(c *catalogue.Catalogue) []string {
	var out []string
	ix := catalogue.NewIndex(c)
	emitted := compiler.Emitted(ix)
	subjects := slices.Sorted(maps.Keys(emitted))
	var filters []string // every consumer's filters but the audit logger's
	consumed := func(who, written string) {
		sub := compiler.Consume(ix, written).Subjects
		for _, s := range sub {
			if !slices.ContainsFunc(subjects, func(e string) bool { return compiler.Covers(s, e) }) {
				out = append(out, fmt.Sprintf("%s consumes %s, which nothing publishes", who, written))
			}
		}
		if written != compiler.AllEvents {
			filters = append(filters, sub...)
		}
	}
	served := map[string]bool{}
	provided := map[string]bool{}
	for _, m := range c.Modules {
		for _, tool := range m.Tools {
			served[m.Name.Value+"."+tool.Value] = true
		}
		if len(ix.Running[m.Name.Value]) > 0 {
			for _, p := range m.Provides {
				provided[p.Value] = true
			}
		}
	}
	for _, f := range c.Mesh.Controller.Follows {
		consumed("the controller", f.Value)
	}
	for _, m := range c.Modules {
		for _, e := range m.Consumes {
			consumed(m.Name.Value, e.Value)
		}
		for _, call := range m.Calls {
			if !served[call.Value] {
				out = append(out, fmt.Sprintf("%s calls %s, which nobody serves", m.Name.Value, call.Value))
			}
		}
		if len(ix.Running[m.Name.Value]) == 0 {
			out = append(out, fmt.Sprintf("%s runs nowhere", m.Name.Value))
		}
		for _, r := range m.Requires {
			if !provided[r.Value] {
				out = append(out, fmt.Sprintf("%s requires %s, which no running module provides", m.Name.Value, r.Value))
			}
		}
		for _, u := range m.Uses {
			switch s := ix.Seat(u.Value); {
			case s == nil || len(s.Accepts) == 0:
				out = append(out, fmt.Sprintf("%s uses %s, which accepts no work", m.Name.Value, u.Value))
			case len(ix.Holders[s.Name.Value]) == 0:
				out = append(out, fmt.Sprintf("%s uses %s, which nobody holds", m.Name.Value, u.Value))
			}
		}
	}
	for _, p := range c.Inventory.People {
		for _, g := range p.MayCall {
			if g.Value != compiler.EveryTool && !served[g.Value] {
				out = append(out, fmt.Sprintf("%s may call %s, which nobody serves", p.Name.Value, g.Value))
			}
		}
	}
	for _, subject := range subjects {
		if !slices.ContainsFunc(filters, func(f string) bool { return compiler.Covers(f, subject) }) {
			out = append(out, fmt.Sprintf("%s emits %s, heard by nobody but the audit logger", emitted[subject], subject))
		}
	}
	for _, s := range ix.AllSeats() {
		perMachine := map[string]int{}
		total := 0
		for _, h := range ix.Holders[s.Name.Value] {
			for _, n := range ix.Running[h.Name.Value] {
				perMachine[n.Name.Value]++
				total++
			}
		}
		switch s.Scope.Value {
		case "mesh":
			if total != 1 {
				out = append(out, fmt.Sprintf("%d holders of mesh-scoped seat %s running, want exactly 1", total, s.Name.Value))
			}
		case "node":
			for node, k := range perMachine {
				if k > 1 {
					out = append(out, fmt.Sprintf("%d holders of node-scoped seat %s on %s", k, s.Name.Value, node))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestLinear generates a large catalogue within a bound far above what linear generation needs
// on a slow shared machine, and far below what a quadratic step would take.
func TestLinear(t *testing.T) {
	start := time.Now()
	files, err := Files(10_000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("10,000 modules took %v", took)
	}
	if got := countModules(files); got != 10_000 {
		t.Errorf("wrote %d manifests, want 10,000", got)
	}
}

func BenchmarkFiles(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				if _, err := Files(n, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
