package main

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"time"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/internal/suggest"
)

var graphCommand = command{
	name:    "graph",
	summary: "draw the mesh: modules and seats, events, tool calls and work (mermaid or dot)",
	usage: `Usage: meshc graph [DIR] [--format mermaid|dot|svg] [--module MODULE]
`,
	help: `Draws the mesh of the catalogue in DIR (default: the current directory): modules, seats, people
and the controller as nodes; events (emitter → consumer, solid), tool calls (caller → server,
dotted) and work (submitter → seat, thick; seat — holder) as edges. Everything is derived the
way the bus's permissions are, so the picture shows what the bus allows. The output is the same
for the same catalogue, so it diffs.

The whole mesh is drawn with each directory under modules/ as a group of its own, and each
wildcard once: a module consuming every event ("**") has one edge from "every event", and a
person who may call every tool ("*") one edge to "every tool", rather than one to or from every
module. --module draws one module's neighbourhood, every edge drawn. --format svg runs
Graphviz's dot (on PATH, or MESHC_DOT): apt install graphviz, brew install graphviz.

    meshc graph --format svg > mesh.svg          # a picture, drawn by Graphviz's dot
    meshc graph --module catalog --format svg > catalog.svg
    meshc graph --format mermaid > mesh.mmd      # GitHub draws a mermaid block in markdown
    meshc graph --format dot | dot -Tpng > mesh.png

`,
	exits: `Exit status:
  0  drawn
  2  meshc could not draw: a bad flag, an unknown module, DIR is not a catalogue
`,
	run: runGraph,
}

func runGraph(inv *invocation, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	fs := flag.NewFlagSet("graph", flag.ContinueOnError)
	graphFormats := []string{"mermaid", "dot", "svg"}
	format := choice(fs, "format", "mermaid", "mermaid, dot (Graphviz's text), or svg (a picture)", graphFormats...)
	focus := choice(fs, "module", "", "only `MODULE`'s neighbourhood: every edge to or from it, the whole path of work through a seat it submits to or holds, and the events of a seat it holds (--focus is its older name)", "@modules")
	alias(fs, "focus", "module")
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
	g := compiler.WholeMeshGraph(ix)
	if *focus != "" {
		g = compiler.MeshGraph(ix)
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
			fmt.Fprintf(stderr, "meshc graph: --module: the catalogue has no module %q%s\n", *focus, hint)
			return exitCantRun
		}
		g = g.Focus(*focus)
	}
	var out []byte
	switch *format {
	case "dot":
		out = emit.GraphDot(g)
	case "svg":
		if out, err = drawSVG(context.Background(), emit.GraphDot(g)); err != nil {
			fmt.Fprintf(stderr, "meshc graph: --format svg: %v\n", err)
			return exitCantRun
		}
	default:
		out = emit.GraphMermaid(g)
	}
	if _, err := stdout.Write(out); err != nil {
		return exitCantRun
	}
	return exitOK
}

// drawSVG lays a graph's dot out as an SVG picture with Graphviz's own dot, run as a program.
// Graphviz linked into meshc (go-graphviz, as WebAssembly) compiled itself at every start of
// every command, 110 ms of `meshc lint`'s 140 on a small catalogue (BENCHMARKS.md), for the one
// command that draws; dot is in every package manager.
func drawSVG(ctx context.Context, dot []byte) ([]byte, error) {
	name := cmp.Or(os.Getenv("MESHC_DOT"), "dot")
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("needs Graphviz's dot (%s is not on PATH: apt install graphviz, brew install graphviz, or MESHC_DOT=/path/to/dot); --format dot prints what it would draw", name)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-Tsvg")
	cmd.Stdin = bytes.NewReader(dot)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s -Tsvg: %v: %s", path, err, bytes.TrimSpace(errs.Bytes()))
	}
	return out.Bytes(), nil
}
