package suggest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestClosest(t *testing.T) {
	keys := []string{"claims", "consumes", "emits", "provides", "requires", "roles", "uses"}
	for word, want := range map[string]string{
		"rolse":    "roles", // a swap is one slip
		"consume":  "consumes",
		"claim":    "claims",
		"emit":     "emits",
		"provide":  "provides",
		"xyz":      "", // nothing close: no hint rather than a wild one
		"roles":    "", // the word itself is not a suggestion
		"deliver":  "",
		"requries": "requires",
	} {
		if got := Closest(word, keys); got != want {
			t.Errorf("Closest(%q) = %q, want %q", word, got, want)
		}
	}
}

// An Index answers as Closest does, ties and all, for candidates in order or not, repeated or
// not, and words near them or not: random words over a small alphabet, so many are within a
// few edits of each other.
func TestIndexIsClosest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		b := make([]byte, rng.IntN(9))
		for i := range b {
			b[i] = "abcd-"[rng.IntN(5)]
		}
		return string(b)
	}
	for round := range 300 {
		candidates := make([]string, rng.IntN(60))
		for i := range candidates {
			candidates[i] = word()
		}
		if round%2 == 0 {
			slices.Sort(candidates)
		}
		x := NewIndex(candidates)
		for range 50 {
			w := word()
			if rng.IntN(4) == 0 && len(candidates) > 0 {
				w = candidates[rng.IntN(len(candidates))] + "x"
			}
			if got, want := x.Closest(w), Closest(w, candidates); got != want {
				t.Fatalf("Index(%q).Closest(%q) = %q, Closest = %q", candidates, w, got, want)
			}
		}
	}
}

// A word asked about for every one of many candidates costs about what one scan does, not one
// scan per word: TestIndexIsClosest holds the answers, BenchmarkPathological (benchmarks/) the
// time; this holds that an index answers at all at that size.
func TestIndexOfManyNames(t *testing.T) {
	names := make([]string, 20_000)
	for i := range names {
		names[i] = fmt.Sprintf("mod%d", i)
	}
	x := NewIndex(names)
	for i := range names {
		typo := fmt.Sprintf("mdo%d", i)
		if got, want := x.Closest(typo), fmt.Sprintf("mod%d", i); got != want {
			t.Fatalf("Closest(%q) = %q, want %q", typo, got, want)
		}
	}
}
