package emit

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/meshc-dev/meshc/compiler"
)

// The mesh as a picture, in two notations: mermaid, which GitHub draws in a README or a pull
// request comment, and Graphviz dot. Node shapes say what a node is (a module a box, a seat a
// hexagon, a person a stadium, the controller a subroutine box); edge styles say what flows
// (events solid, tool calls dotted, work thick, a seat to its holder plain and unlabelled).

// GraphMermaid renders a graph as a mermaid flowchart, left to right.
func GraphMermaid(g *compiler.Graph) []byte {
	var b bytes.Buffer
	b.WriteString("flowchart LR\n")
	for _, n := range g.Nodes {
		open, close := "[", "]"
		switch n.Kind {
		case compiler.NodeSeat:
			open, close = "{{", "}}"
		case compiler.NodePerson:
			open, close = "([", "])"
		case compiler.NodeController:
			open, close = "[[", "]]"
		}
		fmt.Fprintf(&b, "  %s%s%q%s\n", mermaidID(n), open, nodeLabel(n), close)
	}
	for _, e := range g.Edges {
		label := strings.Join(e.Labels, ", ")
		switch e.Kind {
		case compiler.EdgeTool:
			fmt.Fprintf(&b, "  %s -.->|%q| %s\n", mermaidID(e.From), label, mermaidID(e.To))
		case compiler.EdgeWork:
			fmt.Fprintf(&b, "  %s ==>|%q| %s\n", mermaidID(e.From), label, mermaidID(e.To))
		case compiler.EdgeHolds:
			fmt.Fprintf(&b, "  %s --- %s\n", mermaidID(e.From), mermaidID(e.To))
		default:
			fmt.Fprintf(&b, "  %s -->|%q| %s\n", mermaidID(e.From), label, mermaidID(e.To))
		}
	}
	return b.Bytes()
}

// mermaidID is a node's id in mermaid: names hold only [a-z0-9-], and `-` is read as part of an
// arrow, so it becomes `_`, which no name holds — two nodes cannot collide.
func mermaidID(n compiler.GraphNode) string {
	return string(n.Kind) + "_" + strings.ReplaceAll(n.Name, "-", "_")
}

func nodeLabel(n compiler.GraphNode) string {
	switch n.Kind {
	case compiler.NodeSeat:
		return "seat " + n.Name
	case compiler.NodePerson:
		return "person " + n.Name
	}
	return n.Name
}

// GraphDot renders a graph as a Graphviz digraph.
func GraphDot(g *compiler.Graph) []byte {
	var b bytes.Buffer
	b.WriteString("digraph mesh {\n  rankdir=LR;\n  node [fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\", fontsize=10];\n")
	for _, n := range g.Nodes {
		shape := "box"
		switch n.Kind {
		case compiler.NodeSeat:
			shape = "hexagon"
		case compiler.NodePerson:
			shape = "oval"
		case compiler.NodeController:
			shape = "box3d"
		}
		fmt.Fprintf(&b, "  %s [label=%s, shape=%s];\n", strconv.Quote(n.ID()), strconv.Quote(nodeLabel(n)), shape)
	}
	for _, e := range g.Edges {
		attrs := []string{"label=" + strconv.Quote(strings.Join(e.Labels, ", "))}
		switch e.Kind {
		case compiler.EdgeTool:
			attrs = append(attrs, "style=dashed")
		case compiler.EdgeWork:
			attrs = append(attrs, "style=bold")
		case compiler.EdgeHolds:
			attrs = []string{"arrowhead=none"}
		}
		fmt.Fprintf(&b, "  %s -> %s [%s];\n", strconv.Quote(e.From.ID()), strconv.Quote(e.To.ID()), strings.Join(attrs, ", "))
	}
	b.WriteString("}\n")
	return b.Bytes()
}
