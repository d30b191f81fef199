package compiler

import (
	"slices"
	"strings"
	"testing"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
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
