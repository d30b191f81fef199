package lint

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/meshc-dev/meshc/compiler"
)

// The sets the agreement checks ask answer as compiler.Covers does, subject by subject: random
// subjects and filters (exact, P.>, with *) over a few short tokens, so many share prefixes.
func TestSubjectAndFilterSetsAreCovers(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	subject := func() string {
		toks := make([]string, 1+rng.IntN(4))
		for i := range toks {
			toks[i] = []string{"a", "b", "ab", ""}[rng.IntN(4)]
		}
		return strings.Join(toks, ".")
	}
	filter := func() string {
		f := subject()
		switch rng.IntN(4) {
		case 0:
			return f + ".>"
		case 1:
			toks := strings.Split(f, ".")
			toks[rng.IntN(len(toks))] = "*"
			return strings.Join(toks, ".")
		}
		return f
	}
	for range 300 {
		subjects := make([]string, rng.IntN(12))
		for i := range subjects {
			subjects[i] = subject()
		}
		filters := make([]string, rng.IntN(12))
		for i := range filters {
			filters[i] = filter()
		}
		published := newSubjectSet(subjects)
		heard := newFilterSet(len(filters))
		for _, f := range filters {
			heard.add(f)
		}
		for range 20 {
			f := filter()
			want := slices.ContainsFunc(subjects, func(s string) bool { return compiler.Covers(f, s) })
			if got := published.matches(f); got != want {
				t.Fatalf("subjects %q: matches(%q) = %v, Covers says %v", subjects, f, got, want)
			}
			s := subject()
			want = slices.ContainsFunc(filters, func(f string) bool { return compiler.Covers(f, s) })
			if got := heard.matches(s); got != want {
				t.Fatalf("filters %q: matches(%q) = %v, Covers says %v", filters, s, got, want)
			}
		}
	}
}
