package benchmarks

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/internal/output"
	"github.com/meshc-dev/meshc/internal/synth"
	"github.com/meshc-dev/meshc/lint"
	"github.com/meshc-dev/meshc/review"
)

// BenchmarkAgainst is `meshc plan --against BASE` and `meshc lint --against BASE` on a pull
// request's catalogue (pullRequest), beside their floor: two plain compiles, loading and linting
// (which compiles) the base and then the head. The base is a directory, so git's archive is not
// timed. impl=plan compiles the head, loads the base, and writes the whole review as text;
// impl=lint lints the head and writes its findings with what the change breaks.
func BenchmarkAgainst(b *testing.B) {
	for _, n := range catalogueSizes() {
		base, head := pullRequest(b, n)
		b.Run(fmt.Sprintf("n=%d/impl=floor", n), func(b *testing.B) {
			b.ReportAllocs()
			report := reportCPU(b)
			for b.Loop() {
				for _, dir := range []string{base, head} {
					c, loaded, err := catalogue.Load(dir)
					if err != nil {
						b.Fatal(err)
					}
					if _, plan := lint.Check(c, loaded); plan == nil {
						b.Fatal("no plan")
					}
				}
			}
			report()
		})
		b.Run(fmt.Sprintf("n=%d/impl=plan", n), func(b *testing.B) {
			b.ReportAllocs()
			report := reportCPU(b)
			for b.Loop() {
				planAgainst(b, head, base)
			}
			report()
		})
		b.Run(fmt.Sprintf("n=%d/impl=lint", n), func(b *testing.B) {
			b.ReportAllocs()
			report := reportCPU(b)
			for b.Loop() {
				lintAgainst(b, head, base)
			}
			report()
		})
	}
}

// planAgainst does what `meshc plan DIR --against BASE` does (cmd/meshc/plan.go), and fails the
// benchmark unless the review holds every kind of change pullRequest makes.
func planAgainst(b *testing.B, dir, base string) {
	r := reviewOf(b, dir, base)
	if len(r.Changes.Items) == 0 || len(r.Users) == 0 || len(r.Breaks) == 0 {
		b.Fatalf("the review misses what the pull request changes: %d changes, %d users, %d breaks", len(r.Changes.Items), len(r.Users), len(r.Breaks))
	}
}

// reviewOf is the review `meshc plan DIR --against BASE` renders, rendered as text.
func reviewOf(b *testing.B, dir, base string) review.Review {
	c, loaded, err := catalogue.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	fs, plan := lint.Check(c, loaded)
	if fs.HasErrors() || plan == nil {
		b.Fatalf("the head has errors: %v", fs)
	}
	cmp, err := review.Load(dir, base, lint.Side{Index: catalogue.NewIndex(c), Plan: plan})
	if err != nil {
		b.Fatal(err)
	}
	r := cmp.Review(false)
	var out bytes.Buffer
	if err := r.Write(&out, output.Text); err != nil {
		b.Fatal(err)
	}
	return r
}

// lintAgainst does what `meshc lint DIR --against BASE` does (cmd/meshc/lint.go), and fails the
// benchmark unless the head's findings are the synthetic catalogue's one and the breaks
// pullRequest makes.
func lintAgainst(b *testing.B, dir, base string) {
	c, loaded, err := catalogue.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	found, plan := lint.Check(c, loaded)
	findings := found.Under(dir)
	cmp, err := review.Load(dir, base, lint.Side{Index: catalogue.NewIndex(c), Plan: plan})
	if err != nil {
		b.Fatal(err)
	}
	breaks, unmatched := cmp.Breaks()
	findings = append(append(findings, lint.BreakFindings(breaks)...), unmatched...)
	if err := lint.Write(io.Discard, output.Text, findings); err != nil {
		b.Fatal(err)
	}
	rules := map[string]bool{}
	for _, f := range unexpected(findings) {
		rules[f.Rule] = true
	}
	if len(rules) != 3 || !rules["replay"] || !rules["retention"] || !rules["widening"] {
		b.Fatalf("lint --against found %v, not the replay, retention and widening breaks the pull request makes", rules)
	}
}

// pullRequest writes a synthetic catalogue of n modules as the base, and beside it a head that
// changes what a pull request might: one module in 1,000 emits a new event (a widening, and new
// consumers' filters), EVENTS keeps a week less (a retention cut), and one machine is renamed
// (its consumers replay).
func pullRequest(b *testing.B, n int) (base, head string) {
	b.Helper()
	files, err := synth.Files(n, seed)
	if err != nil {
		b.Fatal(err)
	}
	base, head = b.TempDir(), b.TempDir()
	writeFiles(b, base, files)

	changed := func(name, old, new string) {
		if !bytes.Contains(files[name], []byte(old)) {
			b.Fatalf("pullRequest: %s has no %q", name, old)
		}
		files[name] = bytes.Replace(files[name], []byte(old), []byte(new), 1)
	}
	changed("mesh.yaml", "max-age: 720h", "max-age: 552h")
	changed("inventory.yaml", "name: box-0,", "name: box-zero,")
	var modules []string
	for p := range files {
		if strings.HasPrefix(p, "modules/") && !strings.HasPrefix(p, "modules/platform/") {
			modules = append(modules, p)
		}
	}
	slices.Sort(modules)
	for i := 0; i < len(modules); i += 1000 {
		changed(modules[i], "emits: [", "emits: [order.refunded, ")
	}
	writeFiles(b, head, files)
	return base, head
}

func writeFiles(b *testing.B, dir string, files map[string][]byte) {
	b.Helper()
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
