package benchmarks

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/internal/output"
	"github.com/meshc-dev/meshc/lint"
)

// BenchmarkPipeline is `meshc lint` and `meshc emit` beside their floor, decoding the same files
// with yaml.v3 alone. impl=lint is load and lint and writing the findings, as cmd/meshc/lint.go
// does without --against: lint.Run, which asks the compiler for its findings alone
// (compiler.Findings) and runs the checks beside it. impl=emit is load, lint and rendering
// the three golden files (accounts.conf, plan.json, permissions.md) as they are written. Goal: each ≤ 1.5×
// the floor at 10,000 and at 100,000 modules (the latter with MESHC_BENCH_FULL=1, fullSizesVar).
func BenchmarkPipeline(b *testing.B) {
	for _, n := range catalogueSizes(1_000) {
		// Each size writes its catalogue inside its own b.Run: -bench 'Pipeline/n=100000' writes
		// that one alone.
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			dir := writeCatalogue(b, n)
			b.Run("impl=floor", func(b *testing.B) {
				b.ReportAllocs()
				benchFloor(b, dir)
			})
			b.Run("impl=lint", func(b *testing.B) {
				b.ReportAllocs()
				report := reportCPU(b)
				for b.Loop() {
					lintPath(b, dir)
				}
				report()
			})
			b.Run("impl=emit", func(b *testing.B) {
				b.ReportAllocs()
				report := reportCPU(b)
				for b.Loop() {
					emitPath(b, dir)
				}
				report()
			})
		})
	}
}

// lintPath does what `meshc lint DIR` does (cmd/meshc/lint.go): load, lint (lint.Run), and write
// the findings as text. It fails the benchmark on any finding: the clean path is the one measured.
func lintPath(b *testing.B, dir string) {
	c, loaded, err := catalogue.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	fs := lint.Run(c, loaded).Under(dir)
	if err := lint.Write(io.Discard, output.Text, fs); err != nil {
		b.Fatal(err)
	}
	if fs = unexpected(fs); len(fs) > 0 {
		b.Fatalf("%d findings, first: %s", len(fs), fs[0])
	}
}

// emitPath does what `meshc emit` does (cmd/meshc/emit.go) short of comparing with or writing
// the golden directory: load, lint — which compiles the plan bare, without its explanations — and
// render. It fails the benchmark on any finding: the clean path is the one measured.
func emitPath(b *testing.B, dir string) {
	c, loaded, err := catalogue.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	fs, plan := lint.CheckBare(c, loaded)
	if fs = unexpected(fs); len(fs) > 0 {
		b.Fatalf("%d findings, first: %s", len(fs), fs[0])
	}
	render(b, plan)
}

// render emits the three outputs, each written as it renders on a goroutine of its own, as
// golden.Write and golden.Check take them, to a writer that counts and keeps nothing: what meshc
// emit does with the bytes (compare them with the golden files, or write them) is not the floor's
// either. A synthetic catalogue has no credentials.yaml, so every user is given one recorded hash
// first: accounts.conf is then rendered in full, as for a minted mesh.
func render(b *testing.B, plan *compiler.Plan) {
	for i := range plan.Users {
		plan.Users[i].Hash = recordedHash
	}
	r, err := emit.Render(plan, emit.AccountsOptions{})
	if err != nil {
		b.Fatal(err)
	}
	written := make([]counter, len(r.Files))
	errs := make([]error, len(r.Files))
	var wg sync.WaitGroup
	for i, f := range r.Files {
		wg.Go(func() { errs[i] = f.WriteTo(&written[i]) })
	}
	wg.Wait()
	for i, f := range r.Files {
		if errs[i] != nil {
			b.Fatal(errs[i])
		}
		if written[i] == 0 {
			b.Fatalf("an empty %s", f.Name)
		}
	}
}

// counter is io.Discard counting the bytes.
type counter int64

func (c *counter) Write(p []byte) (int, error) {
	*c += counter(len(p))
	return len(p), nil
}

// benchFloor times the floor, decodeYAML of dir, with its CPU time.
func benchFloor(b *testing.B, dir string) {
	report := reportCPU(b)
	for b.Loop() {
		if err := decodeYAML(dir); err != nil {
			b.Fatal(err)
		}
	}
	report()
}

// decodeYAML is the floor: find every .yaml file, read it and decode it into a yaml.Node with the
// loader's own library, on as many goroutines as the machine runs at once (the loader parses in
// parallel too, so a sequential floor would flatter meshc).
func decodeYAML(dir string) error {
	var files []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(p, ".yaml") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	next := make(chan string)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for f := range next {
				data, err := os.ReadFile(f)
				if err == nil {
					var doc yaml.Node
					err = yaml.Unmarshal(data, &doc)
				}
				if err != nil {
					select {
					case errs <- fmt.Errorf("%s: %w", f, err):
					default:
					}
				}
			}
		})
	}
	for _, f := range files {
		next <- f
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// recordedHash stands for a minted password's hash (bcrypt, cost 6).
const recordedHash = "$2a$06$w5w5rdIw7MuVm2DSvxbVEeoEP8BPETV/NrF27VzSviNpUOvenCHeS"
