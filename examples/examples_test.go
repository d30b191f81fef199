package examples

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/lint"
)

const dir = "mesh"

func load(t *testing.T) (*catalogue.Catalogue, catalogue.Findings) {
	t.Helper()
	c, findings, err := catalogue.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c, findings
}

// TestExampleLintsClean: a user's first `meshc lint examples/mesh` must say nothing is wrong.
// Info findings are allowed but reported, so a new one is noticed.
func TestExampleLintsClean(t *testing.T) {
	c, loaded := load(t)
	for _, f := range loaded {
		t.Errorf("loader: %s", f)
	}
	for _, f := range lint.Run(c, loaded) {
		if f.Severity == catalogue.Info {
			t.Logf("info: %s", f)
			continue
		}
		t.Errorf("%s", f)
	}
}

// TestExampleLintNotVacuous: the clean run above means something only if lint reads this
// catalogue at all, so one planted fault in it must be an error.
func TestExampleLintNotVacuous(t *testing.T) {
	c, loaded := load(t)
	m := c.Modules[0]
	m.Consumes = append(m.Consumes, catalogue.Text{Value: "forgejo.never-emitted", Pos: catalogue.Pos{File: m.File, Line: 999, Col: 5}})
	if !lint.Run(c, loaded).HasErrors() {
		t.Fatal("a consume of an event forgejo does not emit was not an error")
	}
}

// TestExampleShowsTheFormat keeps the example a teacher: each part of the format it exists to
// show is asserted, so trimming it into a toy fails here rather than in a reader's confusion.
func TestExampleShowsTheFormat(t *testing.T) {
	c, _ := load(t)
	for _, m := range missing(c) {
		t.Errorf("the example no longer shows %s", m)
	}
}

// TestMissingFires keeps TestExampleShowsTheFormat honest: parts taken out of the example are
// reported as missing.
func TestMissingFires(t *testing.T) {
	c, _ := load(t)
	for _, m := range c.Modules {
		m.Consumes = slices.DeleteFunc(m.Consumes, func(t catalogue.Text) bool { return strings.HasSuffix(t.Value, "**") })
	}
	c.Mesh.Aliases = nil
	c.Inventory = nil
	got := missing(c)
	for _, want := range []string{"consuming **", "EMITTER.** consumer", "an alias", "an inventory"} {
		if !slices.ContainsFunc(got, func(m string) bool { return strings.Contains(m, want) }) {
			t.Errorf("took out %q; missing reported %q", want, got)
		}
	}
}

// missing lists the parts of the format the catalogue does not show.
func missing(c *catalogue.Catalogue) []string {
	var out []string
	ix := catalogue.NewIndex(c)

	nested := 0
	for _, m := range c.Modules {
		if strings.Count(m.File, "/") > 1 {
			nested++
		}
	}
	if len(c.Modules) < 15 || nested == 0 {
		out = append(out, fmt.Sprintf("at least 15 modules, some in subdirectories of modules/ (it has %d, %d nested)", len(c.Modules), nested))
	}

	has := func(what string, ok bool) {
		if !ok {
			out = append(out, what)
		}
	}
	anyModule := func(f func(m *catalogue.Module) bool) bool { return slices.ContainsFunc(c.Modules, f) }
	anyText := func(ts []catalogue.Text, f func(string) bool) bool {
		return slices.ContainsFunc(ts, func(t catalogue.Text) bool { return f(t.Value) })
	}

	build := ix.Seats["mesh-build-machine"]
	has("the mesh-build-machine role accepting build and emitting built",
		build != nil && build.Role() && anyText(build.Accepts, eq("build")) && anyText(build.Emits, eq("built")))
	broker := ix.Seats["mesh-broker"]
	has("the mesh-broker role delivering mesh-bus", broker != nil && broker.Role() && broker.Delivers.Value == "mesh-bus")
	has("a node-scoped marker role", slices.ContainsFunc(c.Mesh.Roles, func(s *catalogue.Seat) bool {
		return s.Scope.Value == "node" && s.Marker()
	}))
	has("the controller's submits and follows", len(c.Mesh.Controller.Submits) > 0 && len(c.Mesh.Controller.Follows) > 0)
	has("an alias to a declared seat", slices.ContainsFunc(c.Mesh.Aliases, func(a catalogue.Alias) bool {
		return ix.Seats[a.New.Value] != nil
	}))
	has("shared-names", len(c.Mesh.SharedNames) > 0)
	s := c.Mesh.Streams
	has("stream settings", s.Events.MaxAge > 0 && s.Events.MaxBytes > 0 && s.Seats.AckWait > 0)

	has("a module-declared seat that accepts work and emits events", anyModule(func(m *catalogue.Module) bool {
		return slices.ContainsFunc(m.Seats, func(s *catalogue.Seat) bool { return len(s.Accepts) > 0 && len(s.Emits) > 0 })
	}))
	has("a consumer of a role's event", anyModule(func(m *catalogue.Module) bool {
		return anyText(m.Consumes, func(v string) bool { r := compiler.Consume(ix, v); return r.Seat && ix.Seat(r.Emitter).Role() })
	}))
	has("an audit logger consuming **", anyModule(func(m *catalogue.Module) bool { return anyText(m.Consumes, eq("**")) }))
	has("an emitter-wide EMITTER.** consumer", anyModule(func(m *catalogue.Module) bool {
		return anyText(m.Consumes, func(v string) bool { return v != "**" && strings.HasSuffix(v, ".**") })
	}))
	has("tools and calls", anyModule(func(m *catalogue.Module) bool { return len(m.Tools) > 0 }) &&
		anyModule(func(m *catalogue.Module) bool { return len(m.Calls) > 0 }))
	has("a module using a seat", anyModule(func(m *catalogue.Module) bool { return len(m.Uses) > 0 }))
	has("requires and provides", anyModule(func(m *catalogue.Module) bool { return len(m.Requires) > 0 }))
	has("the mesh-broker's holder asking for bus-users", anyModule(func(m *catalogue.Module) bool {
		return anyText(m.Claims, eq("mesh-broker")) && slices.ContainsFunc(m.Files, func(f catalogue.FileRequest) bool {
			return f.Kind.Value == "bus-users"
		})
	}))

	inv := c.Inventory
	has("an inventory", inv != nil)
	if inv == nil {
		return out
	}
	has("several machines, one enrolling", len(inv.Nodes) >= 3 && slices.ContainsFunc(inv.Nodes, func(n *catalogue.Node) bool { return n.Enrolling }))
	has("an administrator with may-call [\"*\"]", slices.ContainsFunc(inv.People, func(p *catalogue.Person) bool {
		return anyText(p.MayCall, eq(compiler.EveryTool))
	}))
	has("a person with specific tool grants", slices.ContainsFunc(inv.People, func(p *catalogue.Person) bool {
		return len(p.MayCall) > 0 && !anyText(p.MayCall, eq(compiler.EveryTool))
	}))
	return out
}

// TestExampleSeatsHeld: every seat the example uses, or the controller submits to, has a holder
// running somewhere, so the example shows work being taken and not only queued.
func TestExampleSeatsHeld(t *testing.T) {
	c, _ := load(t)
	ix := catalogue.NewIndex(c)
	used := slices.Clone(c.Mesh.Controller.Submits)
	for _, m := range c.Modules {
		used = append(used, m.Uses...)
	}
	if len(used) == 0 {
		t.Fatal("nothing in the example uses a seat")
	}
	for _, u := range used {
		running := slices.ContainsFunc(ix.Holders[u.Value], func(m *catalogue.Module) bool { return len(ix.Running[m.Name.Value]) > 0 })
		if !running {
			t.Errorf("%s: seat %s is used but no running module holds it", u.Pos, u.Value)
		}
	}
}

func eq(want string) func(string) bool { return func(v string) bool { return v == want } }
