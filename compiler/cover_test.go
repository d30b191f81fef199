package compiler

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The index Minimise and the review ask for long lists finds exactly the patterns Covers says
// cover a subject: random lists over a few tokens, wildcards, repeats and empty tokens included,
// each subject asked about both in the list and out of it.
func TestCoverIndexIsCovers(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	subject := randomSubjects(rng)
	for range 3_000 {
		patterns := make([]string, rng.IntN(30))
		for i := range patterns {
			patterns[i] = subject()
		}
		x := newCoverIndex(patterns)
		asked := append(slices.Clone(patterns), subject(), subject(), subject())
		for _, s := range asked {
			var want, got []int
			for i, p := range patterns {
				if Covers(p, s) {
					want = append(want, i)
				}
			}
			x.each(s, func(i int) bool { got = append(got, i); return true })
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("patterns %q: covering %q: %v, Covers says %v", patterns, s, got, want)
			}
		}
	}
}

// Minimise keeps what comparing each subject with each wildcard kept, on lists long enough to
// be indexed.
func TestMinimiseOfManyWildcards(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	tokens := []string{"a", "b", "ab", "*", ">", ""}
	subject := func() string {
		parts := make([]string, 1+rng.IntN(5))
		for i := range parts {
			parts[i] = tokens[rng.IntN(len(tokens))]
		}
		return strings.Join(parts, ".")
	}
	for range 500 {
		subjects := make([]string, 20+rng.IntN(80))
		for i := range subjects {
			subjects[i] = subject()
		}
		want := slices.Sorted(slices.Values(subjects))
		want = slices.Compact(want)
		want = slices.DeleteFunc(slices.Clone(want), func(s string) bool {
			return slices.ContainsFunc(want, func(w string) bool { return w != s && Covers(w, s) })
		})
		if got := Minimise(subjects); !slices.Equal(got, want) {
			t.Fatalf("Minimise(%q) = %q, want %q", subjects, got, want)
		}
	}
}

// randomSubjects gives subjects of one to four tokens over a few, wildcards and empty tokens
// included: what the matchers' brute-force tests compare them on.
func randomSubjects(rng *rand.Rand) func() string {
	tokens := []string{"a", "b", "ab", "*", ">", ""}
	return func() string {
		parts := make([]string, 1+rng.IntN(4))
		for i := range parts {
			parts[i] = tokens[rng.IntN(len(tokens))]
		}
		return strings.Join(parts, ".")
	}
}
