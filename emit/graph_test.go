package emit

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
)

// The example mesh drawn whole: each directory under modules/ a group (a mermaid subgraph, a dot
// cluster, a box in the picture), every node inside the picture, and the SVG well-formed and the
// same bytes twice.
func TestTheGraphIsDrawnInGroupsAndAsAPicture(t *testing.T) {
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
	svg, err := GraphSVG(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := GraphSVG(context.Background(), g)
	if !bytes.Equal(svg, again) {
		t.Error("the same graph drew two different pictures")
	}
	titles := map[string]bool{}
	d := xml.NewDecoder(bytes.NewReader(svg))
	for inTitle := false; ; {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			inTitle = tok.Name.Local == "title"
		case xml.CharData:
			if inTitle {
				titles[string(tok)] = true
			}
		case xml.EndElement:
			inTitle = false
		}
	}
	for _, n := range g.Nodes {
		if !titles[n.ID()] {
			t.Errorf("the picture has no node %s", n.ID())
		}
	}
	for _, group := range []string{"apps", "dev", "ops", "platform"} {
		if !titles["cluster_"+group] {
			t.Errorf("the picture has no box for group %s", group)
		}
	}
}
