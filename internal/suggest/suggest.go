// Package suggest finds the known word a mistyped one was meant to be, for "did you mean"
// hints in findings.
package suggest

import (
	"fmt"
	"strings"
)

// Closest returns the candidate nearest to word, or "" when none is close enough to be a
// plausible typo: within a third of the word's length in edits (at least one, at most three).
// Ties go to the earlier candidate, so callers get the same hint on every run.
func Closest(word string, candidates []string) string {
	limit := min(max(len(word)/3, 1), 3)
	best, bestDist := "", limit+1
	for _, c := range candidates {
		if c == word {
			continue
		}
		if d := distance(word, c, limit); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// distance is the edit distance between a and b, counting a swap of neighbours as one edit
// ("rolse" is one slip from "roles"), or limit+1 once it is certain to exceed
// limit (so a long list of candidates costs little).
func distance(a, b string, limit int) int {
	if d := len(a) - len(b); d > limit || -d > limit {
		return limit + 1
	}
	before := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], before[j-2]+1)
			}
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		before, prev, cur = prev, cur, before
	}
	return prev[len(b)]
}

// Choose finds s among names, in any case (SARIF, sarif), and returns its index; otherwise an
// error naming what was asked for, the nearest name when one is a plausible typo, and every
// name. Every command parses its enumerated flags (--format) through this one function, so
// each accepts and refuses values alike.
func Choose(what, s string, names []string) (int, error) {
	for i, name := range names {
		if strings.EqualFold(s, name) {
			return i, nil
		}
	}
	all := strings.Join(names, ", ")
	if near := Closest(strings.ToLower(s), names); near != "" {
		return -1, fmt.Errorf("unknown %s %q; did you mean %s? (one of %s)", what, s, near, all)
	}
	return -1, fmt.Errorf("unknown %s %q; use one of %s", what, s, all)
}
