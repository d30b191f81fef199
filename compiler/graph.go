package compiler

import (
	"cmp"
	"path/filepath"
	"slices"
	"strings"

	"github.com/meshc-dev/meshc/catalogue"
)

// Graph is the mesh as a picture: who talks to whom, derived the way the bus's permissions are
// (an event edge is a consumer's derived filter matching an emitter's derived subject), so the
// picture cannot show a conversation the bus would refuse, or miss one it allows.
type Graph struct {
	// Nodes sorted by kind, then name.
	Nodes []GraphNode
	// Edges sorted by from, to, kind.
	Edges []GraphEdge
	// Groups maps a node's ID to the group it is drawn in: the directory its manifest sits in
	// under modules/ (modules/apps/catalog.yaml is in "apps"), a module's seats with it. A node
	// in no group (a role, a person, the controller, a manifest directly in modules/) is absent.
	Groups map[string]string
	// hearsAll holds the consumers of every event ("**"): a module's neighbourhood draws theirs
	// as one edge from EveryEventNode rather than one from each emitter.
	hearsAll map[GraphNode]bool
}

// GraphNodeKind is what a node of the picture is.
type GraphNodeKind string

const (
	NodeModule     GraphNodeKind = "module"
	NodeSeat       GraphNodeKind = "seat"
	NodeController GraphNodeKind = "controller"
	NodePerson     GraphNodeKind = "person"
	// NodeEvery stands for every event ("events") or every tool ("tools") in a picture of the
	// whole mesh: an audit logger consuming "**" is one edge from it, not one from every
	// emitter, and a person who may call "*" one edge to it, not one to every tool.
	NodeEvery GraphNodeKind = "every"
)

// The two NodeEvery nodes.
var (
	EveryEventNode = GraphNode{NodeEvery, "events"}
	EveryToolNode  = GraphNode{NodeEvery, "tools"}
)

// GraphNode is a module, a seat (a role or a module's), the controller or a person.
type GraphNode struct {
	Kind GraphNodeKind
	Name string
}

// ID is the node's name unique across kinds: "module:catalog", "seat:image-store".
func (n GraphNode) ID() string { return string(n.Kind) + ":" + n.Name }

// GraphEdgeKind is what flows along an edge.
type GraphEdgeKind string

const (
	// EdgeEvent runs from an emitter (a module, or a seat whose holder announces) to a consumer.
	EdgeEvent GraphEdgeKind = "event"
	// EdgeTool runs from a caller to the module serving the tool.
	EdgeTool GraphEdgeKind = "tool"
	// EdgeWork runs from whoever submits work to the seat that accepts it.
	EdgeWork GraphEdgeKind = "work"
	// EdgeHolds runs from a seat to the module holding it: where its work goes.
	EdgeHolds GraphEdgeKind = "holds"
)

// GraphEdge is one kind of traffic between two nodes; Labels are the events, tools or kinds of
// work, sorted.
type GraphEdge struct {
	From, To GraphNode
	Kind     GraphEdgeKind
	Labels   []string
}

// MeshGraph derives the picture of a catalogue, running or not: it is about what the manifests
// declare, as the agreement checks are. Every edge is drawn; a consumer of every event and a
// person who may call every tool have one edge to each emitter and tool (Focus reads these).
func MeshGraph(ix *catalogue.Index) *Graph { return meshGraph(ix, false) }

// WholeMeshGraph is MeshGraph as a picture of the whole mesh: the wildcard grants are one edge
// each, to or from a NodeEvery node. At 50 modules an audit logger and an administrator otherwise
// draw a hundred edges between them and hide every other.
func WholeMeshGraph(ix *catalogue.Index) *Graph { return meshGraph(ix, true) }

func meshGraph(ix *catalogue.Index, wildcardsOnce bool) *Graph {
	g := newGraphBuilder()
	modules := sortedModules(ix)
	for _, m := range modules {
		n := GraphNode{NodeModule, m.Name.Value}
		g.node(n)
		if group := manifestGroup(m.File); group != "" {
			g.groups[n.ID()] = group
			for _, s := range m.Seats {
				if ix.Seats[s.Name.Value] == s {
					g.groups[GraphNode{NodeSeat, s.Name.Value}.ID()] = group
				}
			}
		}
	}
	for _, s := range ix.AllSeats() {
		g.node(GraphNode{NodeSeat, s.Name.Value})
	}

	// Events: every emitted subject, matched against every consumer's derived filters.
	type emitted struct {
		subject string
		from    GraphNode
		event   string
	}
	var events []emitted
	for _, m := range modules {
		for _, e := range m.Emits {
			events = append(events, emitted{ModuleEvent(m.Name.Value, e.Value), GraphNode{NodeModule, m.Name.Value}, e.Value})
		}
	}
	for _, s := range ix.AllSeats() {
		for _, e := range s.Emits {
			events = append(events, emitted{SeatEvent(s.Name.Value, e.Value), GraphNode{NodeSeat, s.Name.Value}, e.Value})
		}
	}
	hear := func(to GraphNode, consumed []catalogue.Text) {
		for _, c := range consumed {
			if c.Value == AllEvents {
				g.hearsAll[to] = true
				if wildcardsOnce {
					g.edge(EveryEventNode, to, EdgeEvent, AllEvents)
					continue
				}
			}
			for _, f := range Consume(ix, c.Value).Subjects {
				for _, e := range events {
					if Covers(f, e.subject) {
						g.edge(e.from, to, EdgeEvent, e.event)
					}
				}
			}
		}
	}
	controller := GraphNode{NodeController, ControllerUser}
	for _, m := range modules {
		hear(GraphNode{NodeModule, m.Name.Value}, m.Consumes)
	}
	hear(controller, ix.Catalogue.Mesh.Controller.Follows)

	// Tools: callers to servers; a person's "*" is every tool served.
	serves := func(module, tool string) bool {
		m := ix.Modules[module]
		return m != nil && slices.ContainsFunc(m.Tools, func(t catalogue.Text) bool { return t.Value == tool })
	}
	for _, m := range modules {
		for _, c := range m.Calls {
			if mod, tool := Call(c.Value); serves(mod, tool) {
				g.edge(GraphNode{NodeModule, m.Name.Value}, GraphNode{NodeModule, mod}, EdgeTool, tool)
			}
		}
	}
	if inv := ix.Catalogue.Inventory; inv != nil {
		for _, p := range inv.People {
			who := GraphNode{NodePerson, p.Name.Value}
			for _, c := range p.MayCall {
				if c.Value == EveryTool && wildcardsOnce {
					g.edge(who, EveryToolNode, EdgeTool, EveryTool)
					continue
				}
				if c.Value == EveryTool {
					for _, m := range modules {
						for _, t := range m.Tools {
							g.edge(who, GraphNode{NodeModule, m.Name.Value}, EdgeTool, t.Value)
						}
					}
					continue
				}
				if mod, tool := Call(c.Value); serves(mod, tool) {
					g.edge(who, GraphNode{NodeModule, mod}, EdgeTool, tool)
				}
			}
		}
	}

	// Work: submitters to seats, seats to holders.
	submit := func(from GraphNode, used []catalogue.Text) {
		for _, u := range used {
			if s := ix.Seat(u.Value); s != nil {
				for _, k := range s.Accepts {
					g.edge(from, GraphNode{NodeSeat, s.Name.Value}, EdgeWork, k.Value)
				}
			}
		}
	}
	for _, m := range modules {
		submit(GraphNode{NodeModule, m.Name.Value}, m.Uses)
		for _, c := range m.Claims {
			if s := ix.Seat(c.Value); s != nil {
				g.edge(GraphNode{NodeSeat, s.Name.Value}, GraphNode{NodeModule, m.Name.Value}, EdgeHolds, "")
			}
		}
	}
	submit(controller, ix.Catalogue.Mesh.Controller.Submits)
	return g.graph()
}

// Focus is the neighbourhood of one module: every edge to or from it, the whole path of work
// through a seat it submits to or holds (submitter → seat → holder), and the events of a seat
// it holds, which it announces. A module consuming every event hears them through one edge from
// EveryEventNode: one from each emitter would be the whole mesh again.
func (g *Graph) Focus(module string) *Graph {
	focus := GraphNode{NodeModule, module}
	seats, held := map[GraphNode]bool{}, map[GraphNode]bool{}
	for _, e := range g.Edges {
		if e.From == focus && e.To.Kind == NodeSeat {
			seats[e.To] = true
		}
		if e.To == focus && e.From.Kind == NodeSeat && e.Kind == EdgeHolds {
			seats[e.From], held[e.From] = true, true
		}
	}
	out := newGraphBuilder()
	out.groups = g.Groups
	out.node(focus)
	if g.hearsAll[focus] {
		out.edge(EveryEventNode, focus, EdgeEvent, AllEvents)
	}
	for _, e := range g.Edges {
		if g.hearsAll[focus] && e.To == focus && e.Kind == EdgeEvent {
			continue
		}
		if e.From == focus || e.To == focus || (seats[e.To] && e.Kind == EdgeWork) || (seats[e.From] && e.Kind == EdgeHolds) ||
			(held[e.From] && e.Kind == EdgeEvent) {
			for _, l := range e.Labels {
				out.edge(e.From, e.To, e.Kind, l)
			}
			if len(e.Labels) == 0 {
				out.edge(e.From, e.To, e.Kind, "")
			}
		}
	}
	return out.graph()
}

// Has reports whether the picture holds a module of that name.
func (g *Graph) Has(module string) bool {
	return slices.Contains(g.Nodes, GraphNode{NodeModule, module})
}

type graphBuilder struct {
	nodes    map[string]GraphNode
	edges    map[[3]string]*GraphEdge
	groups   map[string]string
	hearsAll map[GraphNode]bool
}

func newGraphBuilder() *graphBuilder {
	return &graphBuilder{nodes: map[string]GraphNode{}, edges: map[[3]string]*GraphEdge{}, groups: map[string]string{}, hearsAll: map[GraphNode]bool{}}
}

// manifestGroup is the directory a manifest sits in under modules/, "" directly in it.
func manifestGroup(file string) string {
	rel, ok := strings.CutPrefix(filepath.ToSlash(file), catalogue.ModulesDir+"/")
	if !ok {
		return ""
	}
	dir, _, ok := strings.Cut(rel, "/")
	if !ok {
		return ""
	}
	return dir
}

func (g *graphBuilder) node(n GraphNode) { g.nodes[n.ID()] = n }

func (g *graphBuilder) edge(from, to GraphNode, kind GraphEdgeKind, label string) {
	g.node(from)
	g.node(to)
	k := [3]string{from.ID(), to.ID(), string(kind)}
	e := g.edges[k]
	if e == nil {
		e = &GraphEdge{From: from, To: to, Kind: kind}
		g.edges[k] = e
	}
	if label != "" && !slices.Contains(e.Labels, label) {
		e.Labels = append(e.Labels, label)
	}
}

func (g *graphBuilder) graph() *Graph {
	out := &Graph{Groups: map[string]string{}, hearsAll: g.hearsAll}
	for id, n := range g.nodes {
		out.Nodes = append(out.Nodes, n)
		if group, ok := g.groups[id]; ok {
			out.Groups[id] = group
		}
	}
	slices.SortFunc(out.Nodes, func(a, b GraphNode) int { return cmp.Compare(a.ID(), b.ID()) })
	for _, e := range g.edges {
		slices.Sort(e.Labels)
		out.Edges = append(out.Edges, *e)
	}
	slices.SortFunc(out.Edges, func(a, b GraphEdge) int {
		return cmp.Or(cmp.Compare(a.From.ID(), b.From.ID()), cmp.Compare(a.To.ID(), b.To.ID()), strings.Compare(string(a.Kind), string(b.Kind)))
	})
	return out
}

// sortedModules are the catalogue's modules (the first manifest of each name), by name.
func sortedModules(ix *catalogue.Index) []*catalogue.Module {
	out := make([]*catalogue.Module, 0, len(ix.Modules))
	for _, m := range ix.Modules {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *catalogue.Module) int { return cmp.Compare(a.Name.Value, b.Name.Value) })
	return out
}
