package compiler

import "strings"

// coverIndex answers Minimise's question for a long list of wildcard patterns: does a pattern
// of the list other than s cover s, by Covers' token rule. Comparing every subject with every
// wildcard is quadratic in a user's wildcard grants — a module holding thousands of seats that
// accept work has two ack patterns per seat, and 5,000 such seats took 10 s to compile — so the
// patterns are held token by token in a trie, and a subject walks it along the branches that
// can cover it: its own token, `*`, and a `>` that ends the walk. Each node is met at most once
// per subject, at the depth of its tokens. TestCoverIndexIsCovers holds it to Covers.
type coverIndex struct {
	steps map[coverStep]int32
	// through counts the patterns whose path passes through (or ends at) each node.
	through []int32
	// ends is set at the last node of a pattern.
	ends []bool
}

type coverStep struct {
	from  int32
	token string
}

func newCoverIndex(patterns []string) *coverIndex {
	x := &coverIndex{steps: make(map[coverStep]int32, 4*len(patterns)), through: []int32{0}, ends: []bool{false}}
	for _, p := range patterns {
		var n int32
		for tok := range strings.SplitSeq(p, ".") {
			next, ok := x.steps[coverStep{n, tok}]
			if !ok {
				next = int32(len(x.ends))
				x.steps[coverStep{n, tok}] = next
				x.through = append(x.through, 0)
				x.ends = append(x.ends, false)
			}
			x.through[next]++
			n = next
		}
		x.ends[n] = true
	}
	return x
}

// coversOther reports whether a pattern of the index other than s itself covers s. The
// patterns must be distinct (Minimise compacts them first).
func (x *coverIndex) coversOther(s string) bool {
	return x.covers(0, s, true, x.holds(s))
}

// holds reports whether s is one of the patterns.
func (x *coverIndex) holds(s string) bool {
	var n int32
	for tok := range strings.SplitSeq(s, ".") {
		next, ok := x.steps[coverStep{n, tok}]
		if !ok {
			return false
		}
		n = next
	}
	return x.ends[n]
}

// covers walks from node n with the rest of s; exact is set while the path spells s's own
// tokens, so that the pattern s itself, when indexed (self), is not taken to cover s.
func (x *coverIndex) covers(n int32, rest string, exact, self bool) bool {
	tok, more := rest, ""
	last := true
	if i := strings.IndexByte(rest, '.'); i >= 0 {
		tok, more, last = rest[:i], rest[i+1:], false
	}
	// A `>` covers whatever follows it, at least this one token.
	if next, ok := x.steps[coverStep{n, ">"}]; ok {
		if !(exact && tok == ">" && self) || x.through[next] > 1 {
			return true
		}
	}
	if tok == ">" {
		return false // only a `>` covers a `>`
	}
	follow := func(next int32, exact bool) bool {
		if last {
			return x.ends[next] && !exact
		}
		return x.covers(next, more, exact, self)
	}
	if next, ok := x.steps[coverStep{n, "*"}]; ok && follow(next, exact && tok == "*") {
		return true
	}
	if tok != "*" {
		if next, ok := x.steps[coverStep{n, tok}]; ok && follow(next, exact) {
			return true
		}
	}
	return false
}
