package compiler

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/internal/synth"
)

func edgeStrings(g *Graph) []string {
	var out []string
	for _, e := range g.Edges {
		s := e.From.ID() + " " + string(e.Kind) + " " + e.To.ID()
		for _, l := range e.Labels {
			s += " " + l
		}
		out = append(out, s)
	}
	return out
}

// A call (a module's or a person's) to a tool nobody serves is no edge; a served one is.
func TestMeshGraphDrawsOnlyServedTools(t *testing.T) {
	c, _ := cataloguetest.Load(t, "testdata/graph-unserved.txtar")
	got := edgeStrings(MeshGraph(catalogue.NewIndex(c)))
	if !slices.Contains(got, "module:audit tool module:catalog lookup") {
		t.Errorf("the served call has no edge: %q", got)
	}
	for _, e := range got {
		if strings.Contains(e, " gone") || strings.Contains(e, "thing") || strings.HasPrefix(e, "person:bob") {
			t.Errorf("an edge for a tool nobody serves: %q", e)
		}
	}
}

func TestMeshGraph(t *testing.T) {
	c, _ := cataloguetest.Load(t, "testdata/small.txtar")
	g := MeshGraph(catalogue.NewIndex(c))
	got := edgeStrings(g)
	for _, want := range []string{
		// A role's event reaches the module that consumes it by name, the audit logger's **,
		// and the controller's follows.
		"seat:mesh-build-machine event module:catalog built",
		"seat:mesh-build-machine event module:audit built",
		"seat:mesh-build-machine event controller:mesh-controller built",
		// Tools, from a module and from people ("*" is every tool served).
		"module:audit tool module:catalog lookup",
		"person:alice tool module:catalog lookup",
		// Work: submitter to seat, seat to holder.
		"module:builder work seat:image-store push",
		"seat:image-store holds module:registry",
		"controller:mesh-controller work seat:mesh-build-machine build",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("no edge %q in\n%q", want, got)
		}
	}
	// Quiet: catalog does not consume its own event, and the role's event comes from the seat,
	// not from builder, the module holding it.
	for _, bad := range []string{"module:catalog event module:catalog upgraded", "module:builder event module:catalog"} {
		for _, e := range got {
			if strings.HasPrefix(e, bad) {
				t.Errorf("unexpected edge %q", e)
			}
		}
	}

	// Focus on registry: the seat it holds, who submits to it, and what the seat announces.
	f := edgeStrings(g.Focus("registry"))
	want := []string{
		"module:builder work seat:image-store push",
		"seat:image-store event module:audit pushed",
		"seat:image-store event module:catalog pushed",
		"seat:image-store holds module:registry",
	}
	if !slices.Equal(f, want) {
		t.Errorf("focus registry:\n got %q\nwant %q", f, want)
	}
}

// The picture of the whole mesh draws each wildcard once: the audit logger's "**" is one edge
// from "every event", alice's "*" one edge to "every tool", where the full graph has one per
// emitter and per tool. Explicit grants stay as they are.
func TestTheWholeMeshDrawsEachWildcardOnce(t *testing.T) {
	c, _ := cataloguetest.Load(t, "testdata/graph-wildcards.txtar")
	ix := catalogue.NewIndex(c)
	into := func(g *Graph, to GraphNode, kind GraphEdgeKind) (n int) {
		for _, e := range g.Edges {
			if e.To == to && e.Kind == kind {
				n++
			}
		}
		return n
	}
	from := func(g *Graph, who GraphNode, kind GraphEdgeKind) (n int) {
		for _, e := range g.Edges {
			if e.From == who && e.Kind == kind {
				n++
			}
		}
		return n
	}
	audit, alice := GraphNode{NodeModule, "audit"}, GraphNode{NodePerson, "alice"}
	full, whole := MeshGraph(ix), WholeMeshGraph(ix)
	if n := into(full, audit, EdgeEvent); n < 3 {
		t.Fatalf("the full graph has %d event edges into audit: the catalogue proves nothing", n)
	}
	if n := from(full, alice, EdgeTool); n < 2 {
		t.Fatalf("the full graph has %d tool edges from alice: the catalogue proves nothing", n)
	}
	got := edgeStrings(whole)
	for _, want := range []string{"every:events event module:audit **", "person:alice tool every:tools *",
		"module:catalog event module:audit upgraded", "person:bob tool module:builder build-now", "module:builder event module:registry built"} {
		if !slices.Contains(got, want) {
			t.Errorf("no edge %q in the whole mesh:\n%q", want, got)
		}
	}
	if n := into(whole, audit, EdgeEvent); n != 2 {
		t.Errorf("the whole mesh has %d event edges into audit, want 2 (every event, and catalog's named one):\n%q", n, got)
	}
	if n := from(whole, alice, EdgeTool); n != 1 {
		t.Errorf("the whole mesh has %d tool edges from alice, want 1:\n%q", n, got)
	}
	// A module's neighbourhood has every edge, but a consumer of every event hears it once.
	if f := edgeStrings(full.Focus("audit")); !slices.Contains(f, "every:events event module:audit **") || into(full.Focus("audit"), audit, EdgeEvent) != 1 {
		t.Errorf("audit's neighbourhood: %q", f)
	}
	if f := edgeStrings(full.Focus("catalog")); !slices.Contains(f, "module:catalog event module:audit upgraded") {
		t.Errorf("catalog's neighbourhood lacks the audit logger hearing it: %q", f)
	}

	// Quiet: without wildcards the whole mesh is the full graph.
	c2, _ := cataloguetest.Load(t, "testdata/graph-unserved.txtar")
	if a, b := edgeStrings(MeshGraph(catalogue.NewIndex(c2))), edgeStrings(WholeMeshGraph(catalogue.NewIndex(c2))); !slices.Equal(a, b) {
		t.Errorf("a catalogue without wildcards is drawn differently whole:\n%q\n%q", a, b)
	}
}

// The directory a manifest sits in under modules/ is the group it is drawn in, its seats with
// it; roles, people and manifests directly in modules/ are in none.
func TestTheGraphGroupsModulesByDirectory(t *testing.T) {
	g := WholeMeshGraph(catalogue.NewIndex(loadCatalogue(t, filepath.Join("..", "examples", "mesh"))))
	for id, want := range map[string]string{"module:catalog": "apps", "module:registry": "dev", "seat:image-mirror": "dev", "module:nats": "platform"} {
		if got := g.Groups[id]; got != want {
			t.Errorf("%s is in group %q, want %q", id, got, want)
		}
	}
	for _, id := range []string{"seat:mesh-build-machine", "person:alice", "controller:mesh-controller"} {
		if got, ok := g.Groups[id]; ok {
			t.Errorf("%s is in group %q, want none", id, got)
		}
	}
}

// At 50 modules the whole mesh is a picture and a module's neighbourhood is what reads: every
// module's is a handful of edges, the audit logger's included, however many modules emit.
func TestANeighbourhoodReadsAtFiftyModules(t *testing.T) {
	dir := t.TempDir()
	if err := synth.Write(dir, 50, 1); err != nil {
		t.Fatal(err)
	}
	ix := catalogue.NewIndex(loadCatalogue(t, dir))
	full := MeshGraph(ix)
	if len(full.Edges) < 100 {
		t.Fatalf("the synthetic mesh has %d edges: it proves nothing", len(full.Edges))
	}
	if whole := WholeMeshGraph(ix); len(whole.Edges) >= len(full.Edges) {
		t.Errorf("the whole mesh has %d edges, the full graph %d: no wildcard was drawn once", len(whole.Edges), len(full.Edges))
	}
	most, who := 0, ""
	for name := range ix.Modules {
		if n := len(full.Focus(name).Edges); n > most {
			most, who = n, name
		}
	}
	if most > 25 {
		t.Errorf("%s's neighbourhood has %d edges at 50 modules: it no longer reads", who, most)
	}
}

func loadCatalogue(t *testing.T, dir string) *catalogue.Catalogue {
	t.Helper()
	c, _, err := catalogue.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
