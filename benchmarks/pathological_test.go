package benchmarks

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/internal/output"
	"github.com/meshc-dev/meshc/internal/synth"
	"github.com/meshc-dev/meshc/lint"
)

// BenchmarkPathological is lint, emit and plan --against on catalogues shaped to find what is not
// linear in its input: one list of many entries, many manifests each with a fault, a long name.
// Each shape that once was quadratic runs at two sizes, the second four times the first
// (pathologicalSizes), beside its floor, decoding the same files with yaml.v3 alone: a linear
// path keeps its ratio to the floor as the size grows, where a quadratic one's quadruples. What
// each shape found is in its doc comment (pathologies) and BENCHMARKS.md. The findings are
// checked, so neither side is timed doing less than the whole job.
func BenchmarkPathological(b *testing.B) {
	for _, p := range pathologies {
		// Each shape and size writes its catalogue inside its own b.Run, so a -bench pattern
		// naming one shape (or one size) writes that one alone.
		b.Run("shape="+p.name, func(b *testing.B) {
			for _, n := range pathologicalSizes() {
				b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) { benchmarkPathology(b, p, n) })
			}
		})
	}
}

// benchmarkPathology is one shape at one size: the floor, lint, and where the shape runs what it
// declares, emit and plan --against.
func benchmarkPathology(b *testing.B, p pathology, n int) {
	dir := b.TempDir()
	writePathology(b, dir, p, n)
	b.Run("impl=floor", func(b *testing.B) { benchFloor(b, dir) })
	b.Run("impl=lint", func(b *testing.B) {
		report := reportCPU(b)
		for b.Loop() {
			c, loaded, err := catalogue.Load(dir)
			if err != nil {
				b.Fatal(err)
			}
			fs := lint.Run(c, loaded)
			if err := lint.Write(io.Discard, output.Text, fs); err != nil {
				b.Fatal(err)
			}
			if got := len(unexpected(fs)); got != p.findings(n) {
				b.Fatalf("%d findings, want %d; first: %s", got, p.findings(n), fs[0])
			}
		}
		report()
	})
	if len(p.runs) == 0 {
		return // nothing runs, so nothing to emit or review: lint is the path
	}
	b.Run("impl=emit", func(b *testing.B) {
		report := reportCPU(b)
		for b.Loop() {
			emitPath(b, dir)
		}
		report()
	})
	// The pull request that made the whole of it: the base holds half.
	base := b.TempDir()
	writePathology(b, base, p, n/2)
	b.Run("impl=against", func(b *testing.B) {
		report := reportCPU(b)
		for b.Loop() {
			reviewAgainst(b, dir, base)
		}
		report()
	})
}

// pathologicalSizes is the entries (or manifests, or tokens) of each shape: a size and four
// times it, and with MESHC_BENCH_FULL=1 100,000 (at which one consumes list of unknown emitters
// once took 23 s to lint).
func pathologicalSizes() []int {
	sizes := []int{5_000, 20_000}
	if os.Getenv(fullSizesVar) == "1" {
		sizes = append(sizes, 100_000)
	}
	return sizes
}

// pathology is one shape of catalogue: what it writes beside the smallest synthetic catalogue,
// and how many findings it gives (the catalogue's missing credentials.yaml aside).
type pathology struct {
	name     string
	files    func(n int) map[string]string
	findings func(n int) int
	// runs are the shape's modules a machine of its own runs, beside the synthetic ones.
	runs []string
}

func none(int) int   { return 0 }
func each(n int) int { return n }
func entries(n int, line func(i int) string) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("  - " + line(i) + "\n")
	}
	return b.String()
}

var pathologies = []pathology{
	// One manifest of n consumes entries naming an emitter nobody declares: the loader looked for
	// each entry's repeat among all before it (100,000 entries: 23 s to lint).
	{"unknown-emitter", func(n int) map[string]string {
		return map[string]string{"modules/big.yaml": "module: big\nconsumes:\n" + entries(n, func(i int) string { return fmt.Sprintf("nobody.e%d", i) })}
	}, each, nil},
	// n manifests, each consuming its emitter's name mistyped: each "did you mean" scanned every
	// module's name (5,000: 13 s).
	{"mistyped-emitters", func(n int) map[string]string {
		files := map[string]string{}
		for i := range n {
			files[fmt.Sprintf("modules/t/m%d.yaml", i)] = fmt.Sprintf("module: mod%d\nemits: [done]\nconsumes: [mdo%d.done]\n", i, i)
		}
		return files
	}, each, nil},
	// A module of n events, and one consuming n it does not emit: each finding quoted all n and
	// searched them for a hint (20,000: two minutes and 6 GB).
	{"wrong-events", func(n int) map[string]string {
		return map[string]string{
			"modules/src.yaml": "module: src\nemits:\n" + entries(n, func(i int) string { return fmt.Sprintf("e%d", i) }),
			"modules/big.yaml": "module: big\nconsumes:\n" + entries(n, func(i int) string { return fmt.Sprintf("src.x%d", i) }),
		}
	}, each, nil},
	// The same with tools: a module of n tools, and one calling n it does not serve.
	{"wrong-tools", func(n int) map[string]string {
		return map[string]string{
			"modules/src.yaml": "module: src\ntools:\n" + entries(n, func(i int) string { return fmt.Sprintf("t%d", i) }),
			"modules/big.yaml": "module: big\ncalls:\n" + entries(n, func(i int) string { return fmt.Sprintf("src.x%d", i) }),
		}
	}, each, nil},
	// An event of 10n tokens, consumed: the agreement check hashed each of its prefixes whole
	// (400,000 tokens: 9 s). An event name is now at most catalogue.TokenGrammar.MaxLen
	// characters, so lint refuses both the emitted and the consumed name (two findings): the
	// shape times that refusal, which must stay linear in the name.
	{"long-event", func(n int) map[string]string {
		event := strings.Repeat("a.", 10*n) + "z"
		return map[string]string{
			"modules/src.yaml": "module: src\nemits: [" + event + "]\n",
			"modules/big.yaml": "module: big\nconsumes: [src." + event + "]\n",
		}
	}, func(int) int { return 2 }, nil},
	// A running module claiming n seats that accept work, declared in manifests of 1,000 each
	// (a manifest is at most 4 MiB), and one using and consuming them all: Minimise compared
	// every grant with the holder's 2n ack patterns (5,000: 10 s to compile), the review every
	// subject with every other (50 s).
	{"many-seats", func(n int) map[string]string {
		files := map[string]string{}
		for k := 0; k < n; k += 1000 {
			files[fmt.Sprintf("modules/seats/s%d.yaml", k)] = fmt.Sprintf("module: seats%d\nseats:\n", k) +
				entries(min(1000, n-k), func(i int) string {
					return fmt.Sprintf("{name: seat%d, scope: mesh, accepts: [job], emits: [done]}", k+i)
				})
		}
		files["modules/holder.yaml"] = "module: holder\nclaims:\n" + entries(n, func(i int) string { return fmt.Sprintf("seat%d", i) })
		files["modules/user.yaml"] = "module: user\nuses:\n" + entries(n, func(i int) string { return fmt.Sprintf("seat%d", i) }) +
			"consumes:\n" + entries(n, func(i int) string { return fmt.Sprintf("seat%d.done", i) })
		return files
	}, none, []string{"holder", "user"}},
	// A running module serving n tools, another calling them all and a person who may call them
	// all: the review compared every subject with every other, and every answered tool.
	{"many-tools", func(n int) map[string]string {
		return map[string]string{
			"modules/src.yaml": "module: src\ntools:\n" + entries(n, func(i int) string { return fmt.Sprintf("t%d", i) }),
			"modules/big.yaml": "module: big\ncalls:\n" + entries(n, func(i int) string { return fmt.Sprintf("src.t%d", i) }),
			"inventory.yaml": "  - name: p\n    may-call:\n" +
				strings.ReplaceAll(entries(n, func(i int) string { return fmt.Sprintf("src.t%d", i) }), "  - ", "      - "),
		}
	}, none, []string{"src", "big"}},
}

// writePathology writes the smallest synthetic catalogue into dir, and the shape's files over
// it; a shape that runs what it declares runs it beside the synthetic modules, with room for
// the subscriptions a module of n tools holds.
func writePathology(b *testing.B, dir string, p pathology, n int) {
	b.Helper()
	if err := synth.Write(dir, synth.MinModules, seed); err != nil {
		b.Fatal(err)
	}
	files := p.files(n)
	if len(p.runs) > 0 {
		// The shape's inventory.yaml, if any, is people to add.
		inv, err := os.ReadFile(filepath.Join(dir, "inventory.yaml"))
		if err != nil {
			b.Fatal(err)
		}
		machine := "nodes:\n  - {name: extra, runs: [" + strings.Join(p.runs, ", ") + "]}\n"
		files["inventory.yaml"] = strings.Replace(string(inv), "nodes:\n", machine, 1) + files["inventory.yaml"]
	}
	mesh, err := os.ReadFile(filepath.Join(dir, "mesh.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	files["mesh.yaml"] = string(mesh) + fmt.Sprintf("limits:\n  max-subscriptions: %d\n", 2*n+10)
	for name, text := range files {
		full := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// reviewAgainst does what `meshc plan DIR --against BASE` does, and fails unless the review
// holds changes.
func reviewAgainst(b *testing.B, dir, base string) {
	if r := reviewOf(b, dir, base); len(r.Users) == 0 {
		b.Fatal("the review holds no user's change")
	}
}
