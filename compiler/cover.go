package compiler

import (
	"slices"
	"strings"
)

// coverIndex finds, among many patterns, every one that covers a subject by Covers' token rule.
// Comparing each of a list's subjects with each of its patterns is quadratic: a module holding
// thousands of seats that accept work has two ack patterns per seat, and 5,000 such seats took
// 10 s to compile; the review compared every subject a user gains or loses with every one of its
// grants. So the patterns are held token by token in a trie, and a subject walks it along the
// branches that can cover it — its own token, `*`, and a `>`, which covers whatever follows —
// meeting each node at most once, at the depth of its tokens. TestCoverIndexIsCovers holds it to
// Covers.
type coverIndex struct {
	patterns []string
	steps    map[coverStep]int32
	nodes    int32
	// ends holds, by node, the patterns whose last token it is.
	ends map[int32][]int32
	// through holds, by node of a `>` token, every pattern whose path passes through it.
	through map[int32][]int32
}

type coverStep struct {
	from  int32
	token string
}

// indexed is how long a list of patterns is compared one by one before an index is worth
// building (nearly every user's grants are a few).
const indexed = 16

func newCoverIndex(patterns []string) *coverIndex {
	x := &coverIndex{patterns: patterns, steps: make(map[coverStep]int32, 4*len(patterns)), nodes: 1,
		ends: make(map[int32][]int32, len(patterns)), through: map[int32][]int32{}}
	for i, p := range patterns {
		var n int32
		for tok := range strings.SplitSeq(p, ".") {
			next, ok := x.steps[coverStep{n, tok}]
			if !ok {
				next = x.nodes
				x.nodes++
				x.steps[coverStep{n, tok}] = next
			}
			if tok == ">" {
				x.through[next] = append(x.through[next], int32(i))
			}
			n = next
		}
		x.ends[n] = append(x.ends[n], int32(i))
	}
	return x
}

// each calls f with the place of every pattern that covers s, each once, until f returns false.
func (x *coverIndex) each(s string, f func(i int) bool) bool {
	return x.walk(0, s, f)
}

func (x *coverIndex) walk(n int32, rest string, f func(i int) bool) bool {
	tok, more, last := rest, "", true
	if i := strings.IndexByte(rest, '.'); i >= 0 {
		tok, more, last = rest[:i], rest[i+1:], false
	}
	// A `>` covers whatever follows it, at least this one token: every pattern through it.
	if next, ok := x.steps[coverStep{n, ">"}]; ok {
		for _, i := range x.through[next] {
			if !f(int(i)) {
				return false
			}
		}
	}
	if tok == ">" {
		return true // only a `>` covers a `>`
	}
	follow := func(next int32) bool {
		if !last {
			return x.walk(next, more, f)
		}
		for _, i := range x.ends[next] {
			if !f(int(i)) {
				return false
			}
		}
		return true
	}
	if next, ok := x.steps[coverStep{n, "*"}]; ok && !follow(next) {
		return false
	}
	if tok != "*" {
		if next, ok := x.steps[coverStep{n, tok}]; ok && !follow(next) {
			return false
		}
	}
	return true
}

// coversOther reports whether a pattern other than s itself covers s.
func (x *coverIndex) coversOther(s string) bool {
	return !x.each(s, func(i int) bool { return x.patterns[i] == s })
}

// covers reports whether a pattern covers s.
func (x *coverIndex) covers(s string) bool {
	return !x.each(s, func(int) bool { return false })
}

// coveredBy returns the question "does a pattern of wide cover this subject", for many subjects.
func coveredBy(wide []string) func(s string) bool {
	if len(wide) <= indexed {
		return func(s string) bool { return slices.ContainsFunc(wide, func(w string) bool { return Covers(w, s) }) }
	}
	return newCoverIndex(wide).covers
}
