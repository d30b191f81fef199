package compiler

import (
	"strings"

	"github.com/meshc-dev/meshc/catalogue"
)

// subjectTrie indexes stream subjects by token, so finding every pattern that overlaps a given
// one costs the depth of the trie and the branches its wildcards open — not a comparison with
// every other stream. A 10,000-module catalogue has thousands of seat work queues.
type subjectTrie struct {
	children map[string]*subjectTrie
	// streams whose subject ends here.
	streams []int
}

func (t *subjectTrie) insert(subject string, stream int) {
	node := t
	for _, tok := range strings.Split(subject, ".") {
		if node.children == nil {
			node.children = map[string]*subjectTrie{}
		}
		next := node.children[tok]
		if next == nil {
			next = &subjectTrie{}
			node.children[tok] = next
		}
		node = next
	}
	node.streams = append(node.streams, stream)
}

// overlapping calls found for every stream with a subject that overlaps the pattern toks.
func (t *subjectTrie) overlapping(toks []string, found func(stream int)) {
	if len(toks) == 0 {
		for _, s := range t.streams {
			found(s)
		}
		return
	}
	// A stored `>` matches whatever remains, as long as something does.
	if full := t.children[">"]; full != nil {
		full.all(found)
	}
	switch tok := toks[0]; tok {
	case ">":
		for k, child := range t.children {
			if k != ">" {
				child.all(found)
			}
		}
	case "*":
		for k, child := range t.children {
			if k != ">" {
				child.overlapping(toks[1:], found)
			}
		}
	default:
		if child := t.children[tok]; child != nil {
			child.overlapping(toks[1:], found)
		}
		if child := t.children["*"]; child != nil {
			child.overlapping(toks[1:], found)
		}
	}
}

// all calls found for every stream at or below t.
func (t *subjectTrie) all(found func(stream int)) {
	for _, s := range t.streams {
		found(s)
	}
	for _, child := range t.children {
		child.all(found)
	}
}

// streamOverlaps finds every pair of streams with a subject in common. NATS refuses the second
// stream of such a pair at apply (10065); said here, naming both and a subject in both, it is
// fixed before anything touches a bus.
func streamOverlaps(streams []Stream) catalogue.Findings {
	trie := &subjectTrie{}
	for i, s := range streams {
		for _, subj := range s.Config.Subjects {
			trie.insert(subj, i)
		}
	}
	type pair struct{ a, b int }
	reported := map[pair]bool{}
	var findings catalogue.Findings
	for i, s := range streams {
		for _, subj := range s.Config.Subjects {
			trie.overlapping(strings.Split(subj, "."), func(j int) {
				if j == i {
					return
				}
				p := pair{min(i, j), max(i, j)}
				if reported[p] {
					return
				}
				reported[p] = true
				other := streams[j]
				var otherSubj string
				for _, o := range other.Config.Subjects {
					if Overlaps(subj, o) {
						otherSubj = o
						break
					}
				}
				later, earlier := s, other
				laterSubj, earlierSubj := subj, otherSubj
				if later.Source.Compare(earlier.Source) < 0 {
					later, earlier = earlier, later
					laterSubj, earlierSubj = earlierSubj, laterSubj
				}
				findings = append(findings, withRelated(RuleStreamOverlap.At(later.Source, "streams %s (%s) and %s (%s) both capture %s, and the server refuses the second; rename the seat or event whose subject they share",
					later.Config.Name, laterSubj, earlier.Config.Name, earlierSubj, Witness(subj, otherSubj)), []catalogue.Related{{Pos: earlier.Source, Message: "the other stream comes from here"}}))
			})
		}
	}
	return findings
}
