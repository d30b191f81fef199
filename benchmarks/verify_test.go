package benchmarks

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/lint"
	"github.com/meshc-dev/meshc/verify"
)

// BenchmarkVerify is what `meshc verify` costs: the example's golden files and a synthetic
// catalogue's of 1,000 modules, each proven whole on a throwaway server (start, load, every
// class), with the default sample. It reports the tries one proof makes (tries/op), so a change
// in cost can be told from a change in what is tried. The 1,000-module proof takes minutes, so
// CI's one run of every benchmark proves the example alone; MESHC_BENCH_FULL=1 adds it:
//
//	MESHC_BENCH_FULL=1 go test ./benchmarks -run '^$' -bench Verify -benchtime 3x
func BenchmarkVerify(b *testing.B) {
	b.Run("example", func(b *testing.B) {
		c, loaded, err := catalogue.Load("../examples/mesh")
		if err != nil {
			b.Fatal(err)
		}
		_, plan := lint.Check(c, loaded)
		benchVerify(b, plan, "../examples/mesh/golden")
	})
	if os.Getenv(fullSizesVar) != "1" {
		return
	}
	b.Run("modules=1000", func(b *testing.B) {
		plan := compiledPlan(b, 1000)
		_, hash, err := catalogue.MintPassword()
		if err != nil {
			b.Fatal(err)
		}
		for i := range plan.Users {
			plan.Users[i].Hash = hash // the proof replaces every credential: one hash serves all
		}
		benchVerify(b, plan, goldenOf(b, plan))
	})
}

// goldenOf writes a plan's golden files as meshc emit does and returns their directory.
func goldenOf(b *testing.B, plan *compiler.Plan) string {
	b.Helper()
	r, err := emit.Render(plan, emit.AccountsOptions{})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	for _, f := range r.Files {
		data, err := f.Bytes()
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name), data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

func benchVerify(b *testing.B, plan *compiler.Plan, golden string) {
	b.Helper()
	tries := 0
	took := map[string]time.Duration{}
	report := reportCPU(b)
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		r, err := verify.Run(ctx, plan, verify.Options{Golden: golden})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		if r.Failed() {
			b.Fatalf("the proof failed: %+v", r.Failures[0])
		}
		tries = 0
		for _, c := range r.Classes {
			tries += c.Tries
			took[c.Class] += c.Took
		}
	}
	report()
	b.ReportMetric(float64(tries), "tries/op")
	for class, d := range took {
		b.ReportMetric(d.Seconds()/float64(b.N), class+"-s/op")
	}
}
