package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
)

// The example mesh drawn whole by dot: every node inside the picture, each directory under
// modules/ a box, and the SVG well-formed and the same bytes twice. Graphviz's init_rank fails on
// clusters laid out without newrank, so this is the test that the dot emit writes can be drawn.
// .ci/run installs Graphviz: CI never skips it.
func TestTheWholeMeshIsDrawnAsAPicture(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("dot"); err != nil {
		t.Skip("Graphviz (dot) is not installed")
	}
	c, _, err := catalogue.Load(filepath.Join("..", "..", "examples", "mesh"))
	if err != nil {
		t.Fatal(err)
	}
	g := compiler.WholeMeshGraph(catalogue.NewIndex(c))
	dot := emit.GraphDot(g)
	svg, err := drawSVG(context.Background(), dot)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := drawSVG(context.Background(), dot)
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
