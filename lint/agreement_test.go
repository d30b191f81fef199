package lint

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/meshc-dev/meshc/compiler"
)

// The sets the agreement checks ask answer as compiler.Covers does, subject by subject: random
// subjects and filters (exact, P.>, with *) over a few short tokens, so many share prefixes, some
// long enough to be held in the sets' tries rather than their maps (mappedTokens).
func TestSubjectAndFilterSetsAreCovers(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	subject := func() string {
		n := 1 + rng.IntN(4)
		if rng.IntN(3) == 0 {
			n = mappedTokens - 2 + rng.IntN(6)
		}
		toks := make([]string, n)
		for i := range toks {
			toks[i] = []string{"a", "b", "ab", ""}[rng.IntN(4)]
			if n > 4 {
				toks[i] = []string{"a", "b"}[rng.IntN(2)] // long ones share more
			}
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
		// Besides random ones, a filter and a subject that meet the sets where they hold
		// something: a prefix of a subject held, widened; a wide filter held, narrowed.
		near := func(list []string, random func() string, wide bool) string {
			if len(list) == 0 || rng.IntN(2) == 0 {
				return random()
			}
			toks := strings.Split(strings.TrimSuffix(list[rng.IntN(len(list))], ".>"), ".")
			if wide {
				return strings.Join(toks[:rng.IntN(len(toks))+1], ".") + ".>"
			}
			return strings.Join(append(toks, "a", "b")[:len(toks)+rng.IntN(3)], ".")
		}
		for range 20 {
			f := near(subjects, filter, true)
			want := slices.ContainsFunc(subjects, func(s string) bool { return compiler.Covers(f, s) })
			if got := published.matches(f); got != want {
				t.Fatalf("subjects %q: matches(%q) = %v, Covers says %v", subjects, f, got, want)
			}
			s := near(filters, subject, false)
			want = slices.ContainsFunc(filters, func(f string) bool { return compiler.Covers(f, s) })
			if got := heard.matches(s); got != want {
				t.Fatalf("filters %q: matches(%q) = %v, Covers says %v", filters, s, got, want)
			}
		}
	}
}
