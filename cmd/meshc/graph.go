package main

import (
	"flag"
	"fmt"
	"io"
	"slices"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/internal/suggest"
)

const graphHelp = `Usage: meshc graph [DIR] [--format mermaid|dot] [--focus MODULE]

Draws the mesh of the catalogue in DIR (default: the current directory): modules, seats, people
and the controller as nodes; events (emitter → consumer, solid), tool calls (caller → server,
dotted) and work (submitter → seat, thick; seat — holder) as edges. Everything is derived the
way the bus's permissions are, so the picture shows what the bus allows. The output is the same
for the same catalogue, so it diffs.

    meshc graph --format mermaid > mesh.mmd     # GitHub draws a mermaid block in markdown
    meshc graph --format dot | dot -Tsvg > mesh.svg

Flags:
  --format FORMAT  mermaid (default) or dot (Graphviz)
  --focus MODULE   only MODULE's neighbourhood: every edge to or from it, and the whole path
                   of work through a seat it submits to or holds

Exit status:
  0  drawn
  2  meshc could not draw: a bad flag, an unknown module, DIR is not a catalogue
`

func runGraph(inv *invocation, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	fs := flag.NewFlagSet("graph", flag.ContinueOnError)
	fs.Usage = func() { io.WriteString(fs.Output(), graphHelp) }
	graphFormats := []string{"mermaid", "dot"}
	format := choice(fs, "format", "mermaid", "`format`: mermaid or dot", graphFormats...)
	focus := choice(fs, "focus", "", "draw only `MODULE`'s neighbourhood", "@modules")
	rest, exit, done := parseArgs(fs, args, inv)
	if done {
		return exit
	}
	// Read as every command reads its formats (in any case, with a did-you-mean).
	f, err := suggest.Choose("format", *format, graphFormats)
	if err != nil {
		fmt.Fprintf(stderr, "meshc graph: --format: %v\n", err)
		return exitCantRun
	}
	*format = graphFormats[f]
	dir, exit, ok := catalogueArg(fs, rest, stderr)
	if !ok {
		return exit
	}
	c, _, ok := loadCatalogue("graph", dir, stderr)
	if !ok {
		return exitCantRun
	}
	ix := catalogue.NewIndex(c)
	g := compiler.MeshGraph(ix)
	if *focus != "" {
		if !g.Has(*focus) {
			names := make([]string, 0, len(ix.Modules))
			for n := range ix.Modules {
				names = append(names, n)
			}
			slices.Sort(names)
			hint := ""
			if near := suggest.Closest(*focus, names); near != "" {
				hint = fmt.Sprintf("; did you mean %s?", near)
			}
			fmt.Fprintf(stderr, "meshc graph: --focus: the catalogue has no module %q%s\n", *focus, hint)
			return exitCantRun
		}
		g = g.Focus(*focus)
	}
	out := emit.GraphMermaid(g)
	if *format == "dot" {
		out = emit.GraphDot(g)
	}
	if _, err := stdout.Write(out); err != nil {
		return exitCantRun
	}
	return exitOK
}
