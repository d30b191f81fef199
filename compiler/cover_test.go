package compiler

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The index Minimise asks for a long list of wildcards answers as comparing the subject with
// each of them by Covers does: random lists over a few tokens, wildcards and empty ones
// included, each subject asked about both in the list and out of it.
func TestCoverIndexIsCovers(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	tokens := []string{"a", "b", "ab", "*", ">", ""}
	subject := func() string {
		parts := make([]string, 1+rng.IntN(4))
		for i := range parts {
			parts[i] = tokens[rng.IntN(len(tokens))]
		}
		return strings.Join(parts, ".")
	}
	for range 3_000 {
		var wild []string
		for range rng.IntN(30) {
			if s := subject(); strings.ContainsAny(s, "*>") {
				wild = append(wild, s)
			}
		}
		slices.Sort(wild)
		wild = slices.Compact(wild)
		x := newCoverIndex(wild)
		asked := append(slices.Clone(wild), subject(), subject(), subject())
		for _, s := range asked {
			want := slices.ContainsFunc(wild, func(w string) bool { return w != s && Covers(w, s) })
			if got := x.coversOther(s); got != want {
				t.Fatalf("patterns %q: coversOther(%q) = %v, Covers says %v", wild, s, got, want)
			}
		}
	}
}
