package emit

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/meshc-dev/meshc/compiler"
)

// The mesh as a picture, in two notations: mermaid, which GitHub draws in a README or a pull
// request comment, and Graphviz dot. Node shapes say what a node is (a module a box, a seat a
// hexagon, a person a stadium, the controller a subroutine box); edge styles say what flows
// (events solid, tool calls dotted, work thick, a seat to its holder plain and unlabelled).

// grouped is the graph's nodes by group, groups by name and the nodes of no group first ("").
func grouped(g *compiler.Graph) (groups []string, nodes map[string][]compiler.GraphNode) {
	nodes = map[string][]compiler.GraphNode{}
	for _, n := range g.Nodes {
		group := g.Groups[n.ID()]
		if _, ok := nodes[group]; !ok {
			groups = append(groups, group)
		}
		nodes[group] = append(nodes[group], n)
	}
	slices.Sort(groups)
	return groups, nodes
}

// GraphMermaid renders a graph as a mermaid flowchart, left to right, each group of modules a
// subgraph.
func GraphMermaid(g *compiler.Graph) []byte {
	var b bytes.Buffer
	b.WriteString("flowchart LR\n")
	groups, nodes := grouped(g)
	for _, group := range groups {
		indent := "  "
		if group != "" {
			fmt.Fprintf(&b, "  subgraph group_%s [%q]\n", strings.ReplaceAll(group, "-", "_"), group)
			indent = "    "
		}
		for _, n := range nodes[group] {
			open, close := "[", "]"
			switch n.Kind {
			case compiler.NodeSeat:
				open, close = "{{", "}}"
			case compiler.NodePerson:
				open, close = "([", "])"
			case compiler.NodeController:
				open, close = "[[", "]]"
			case compiler.NodeEvery:
				open, close = "((", "))"
			}
			fmt.Fprintf(&b, "%s%s%s%q%s\n", indent, mermaidID(n), open, nodeLabel(n), close)
		}
		if group != "" {
			b.WriteString("  end\n")
		}
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
	case compiler.NodeEvery:
		return "every " + strings.TrimSuffix(n.Name, "s")
	}
	return n.Name
}

// GraphDot renders a graph as a Graphviz digraph, each group of modules a cluster.
func GraphDot(g *compiler.Graph) []byte {
	var b bytes.Buffer
	b.WriteString("digraph mesh {\n  rankdir=LR;\n  newrank=true;\n  graph [fontname=\"Helvetica\"];\n  node [fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\", fontsize=10];\n")
	groups, nodes := grouped(g)
	for _, group := range groups {
		indent := "  "
		if group != "" {
			fmt.Fprintf(&b, "  subgraph %s {\n    label=%s;\n    style=rounded;\n    color=gray60;\n", strconv.Quote("cluster_"+group), strconv.Quote(group))
			indent = "    "
		}
		for _, n := range nodes[group] {
			shape := "box"
			switch n.Kind {
			case compiler.NodeSeat:
				shape = "hexagon"
			case compiler.NodePerson:
				shape = "oval"
			case compiler.NodeController:
				shape = "box3d"
			case compiler.NodeEvery:
				shape = "doublecircle"
			}
			fmt.Fprintf(&b, "%s%s [label=%s, shape=%s];\n", indent, strconv.Quote(n.ID()), strconv.Quote(nodeLabel(n)), shape)
		}
		if group != "" {
			b.WriteString("  }\n")
		}
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
