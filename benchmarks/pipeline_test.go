package benchmarks

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"meshc/catalogue"
	"meshc/compiler"
	"meshc/emit"
	"meshc/lint"
)

// BenchmarkPipeline is `meshc lint` followed by rendering every output — load, lint (which
// compiles), compile, emit accounts.conf, plan.json and the review — beside its floor, decoding
// the same files with yaml.v3 alone. Goal: meshc ≤ 2× the floor at 10,000 modules, and 10× the
// modules ≤ 12× the time.
func BenchmarkPipeline(b *testing.B) {
	for _, n := range []int{100, 1_000, 10_000} {
		dir := writeCatalogue(b, n)
		b.Run(fmt.Sprintf("n=%d/impl=floor", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := decodeYAML(dir); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("n=%d/impl=meshc", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				pipeline(b, dir)
			}
		})
	}
}

// pipeline does what `meshc lint` then `meshc build` do, and fails the benchmark on any
// finding: the clean path is the one measured.
func pipeline(b *testing.B, dir string) {
	c, loaded, err := catalogue.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	if fs := lint.Run(c, loaded); len(fs) > 0 {
		b.Fatalf("%d findings, first: %s", len(fs), fs[0])
	}
	plan, _ := compiler.Compile(catalogue.NewIndex(c))
	render(b, plan)
}

// render emits the three outputs. A synthetic catalogue has no credentials.yaml, so its users
// have no hash: AllowMissing leaves them out of accounts.conf, as `meshc build` does before the
// first mint.
func render(b *testing.B, plan *compiler.Plan) {
	if _, err := emit.Accounts(plan, emit.AccountsOptions{AllowMissing: true}); err != nil {
		b.Fatal(err)
	}
	if _, err := emit.PlanJSON(plan); err != nil {
		b.Fatal(err)
	}
	if len(emit.Review(plan)) == 0 {
		b.Fatal("empty review")
	}
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
