package compiler

import (
	"slices"
	"strings"

	"github.com/meshc-dev/meshc/catalogue"
)

// Covers reports whether every subject the narrow pattern matches is also matched by the wide
// one (NATS wildcards: `*` one token, a final `>` one or more).
func Covers(wide, narrow string) bool {
	return coversTokens(strings.Split(wide, "."), strings.Split(narrow, "."))
}

func coversTokens(w, n []string) bool {
	for i, wt := range w {
		switch {
		case wt == ">":
			return i < len(n)
		case i >= len(n), n[i] == ">":
			return false
		case wt == "*", wt == n[i]:
			continue
		default:
			return false
		}
	}
	return len(w) == len(n)
}

// Overlaps reports whether some subject matches both patterns.
func Overlaps(a, b string) bool {
	at, bt := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; ; i++ {
		switch {
		case i < len(at) && at[i] == ">":
			return i < len(bt)
		case i < len(bt) && bt[i] == ">":
			return i < len(at)
		case i >= len(at) || i >= len(bt):
			return len(at) == len(bt)
		case at[i] != "*" && bt[i] != "*" && at[i] != bt[i]:
			return false
		}
	}
}

// Minimise sorts a list of subjects, drops duplicates, and drops every subject a wider one in
// the list covers: the server refuses a consumer whose filters overlap, and a permission that
// lists both `a.>` and `a.b` says one thing twice, the wider way winning.
func Minimise(subjects []string) []string {
	out := slices.Clone(subjects)
	slices.Sort(out)
	out = slices.Compact(out)
	// Only a pattern with a wildcard covers a subject other than itself, and duplicates are gone:
	// comparing each subject with the wildcards alone, split once, keeps a machine's user of
	// thousands of literal grants linear rather than quadratic (BENCHMARKS.md).
	type pattern struct {
		subject string
		tokens  []string
	}
	var wild []pattern
	for _, s := range out {
		if strings.ContainsAny(s, "*>") {
			wild = append(wild, pattern{s, strings.Split(s, ".")})
		}
	}
	if len(wild) == 0 {
		return out
	}
	kept := out[:0]
	for _, s := range out {
		if !slices.ContainsFunc(wild, func(w pattern) bool { return w.subject != s && coversSubject(w.tokens, s) }) {
			kept = append(kept, s)
		}
	}
	return kept
}

// coversSubject is coversTokens with the narrow side read token by token in place: Minimise
// runs it for every grant of every user, and splitting each grant was most of its allocation.
func coversSubject(w []string, narrow string) bool {
	rest, more := narrow, true
	for _, wt := range w {
		if !more {
			return false
		}
		var nt string
		nt, rest, more = strings.Cut(rest, ".")
		switch {
		case wt == ">":
			return true
		case nt == ">":
			return false
		case wt == "*", wt == nt:
			continue
		default:
			return false
		}
	}
	return !more
}

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

// Witness returns one concrete subject that two overlapping patterns both match.
func Witness(a, b string) string {
	at, bt := strings.Split(a, "."), strings.Split(b, ".")
	var out []string
	pick := func(x, y string) string {
		if x != "*" && x != ">" {
			return x
		}
		if y != "*" && y != ">" {
			return y
		}
		return "x"
	}
	for i := 0; i < len(at) || i < len(bt); i++ {
		switch {
		case i < len(at) && at[i] == ">":
			for _, t := range bt[i:] {
				out = append(out, pick(t, "x"))
			}
			return strings.Join(out, ".")
		case i < len(bt) && bt[i] == ">":
			for _, t := range at[i:] {
				out = append(out, pick(t, "x"))
			}
			return strings.Join(out, ".")
		case i >= len(at) || i >= len(bt):
			return strings.Join(out, ".")
		}
		out = append(out, pick(at[i], bt[i]))
	}
	return strings.Join(out, ".")
}
