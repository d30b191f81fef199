package emit

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
)

// The example mesh drawn whole: each directory under modules/ a group (a mermaid subgraph, a dot
// cluster). cmd/meshc's TestTheWholeMeshIsDrawnAsAPicture lays the dot out.
func TestTheGraphIsDrawnInGroups(t *testing.T) {
	c, _, err := catalogue.Load(filepath.Join("..", "examples", "mesh"))
	if err != nil {
		t.Fatal(err)
	}
	g := compiler.WholeMeshGraph(catalogue.NewIndex(c))
	mermaid, dot := string(GraphMermaid(g)), string(GraphDot(g))
	for _, want := range []string{"  subgraph group_apps [\"apps\"]\n    module_catalog[\"catalog\"]\n", "  every_events((\"every event\"))\n"} {
		if !strings.Contains(mermaid, want) {
			t.Errorf("the mermaid lacks %q:\n%s", want, mermaid)
		}
	}
	if !strings.Contains(dot, "  subgraph \"cluster_apps\" {\n    label=\"apps\";\n") || !strings.Contains(dot, "newrank=true;") {
		t.Errorf("the dot has no cluster for apps, or lays clusters out without newrank (Graphviz's init_rank fails on them):\n%s", dot)
	}
}
