package suggest

import (
	"slices"
	"sort"
	"strings"
)

// An Index answers Closest for one list of candidates asked about again and again: lint asks
// for a hint at every unknown name in a catalogue, and scanning every module's name for each of
// thousands of typos is quadratic (5,000 manifests each consuming a mistyped emitter took 13 s).
// The candidates are kept in byte order and searched as a trie is, each prefix's row of the
// edit distance computed once for every candidate sharing it, and a prefix no extension of
// which can come close skipped with all of them; a word asked about twice is answered once.
// Its answers are Closest's, ties included (TestIndexIsClosest). An Index is used from one
// goroutine at a time.
type Index struct {
	sorted []candidate
	// inOrder is set when the candidates were given in byte order already: a later candidate
	// in the search then never wins a tie, so it must come strictly closer.
	inOrder bool
	asked   map[string]string
	rows    [][]int
}

// candidate is one candidate and its place in the list given, which decides a tie.
type candidate struct {
	s  string
	at int
}

// NewIndex indexes candidates for Closest.
func NewIndex(candidates []string) *Index {
	x := &Index{sorted: make([]candidate, len(candidates)), inOrder: slices.IsSorted(candidates), asked: map[string]string{}}
	for i, c := range candidates {
		x.sorted[i] = candidate{c, i}
	}
	if !x.inOrder {
		slices.SortStableFunc(x.sorted, func(a, b candidate) int { return strings.Compare(a.s, b.s) })
	}
	return x
}

// Closest is Closest(word, candidates) for the indexed candidates.
func (x *Index) Closest(word string) string {
	if near, ok := x.asked[word]; ok {
		return near
	}
	near := x.search(word)
	x.asked[word] = near
	return near
}

func (x *Index) search(word string) string {
	// Most typos are one slip from the name meant: the candidates within one edit are few and
	// found quickly, where those within three of a short name in a long list of similar ones
	// (mod1, mod2, …) are many. So the search widens one edit at a time and stops at the first
	// width that finds a candidate; each width finds every candidate that close, so the answer
	// is the nearest, and of those the earliest.
	limit := min(max(len(word)/3, 1), 3)
	for width := 1; width <= limit; width++ {
		if near, ok := x.within(word, width); ok {
			return near
		}
	}
	return ""
}

// within finds, of the candidates at most width edits from word, the nearest and then the
// earliest in the list given.
func (x *Index) within(word string, width int) (string, bool) {
	best, bestDist, bestAt := "", width+1, len(x.sorted)
	// rows[d] is the row of the edit distance between a candidate's first d bytes and every
	// prefix of word; valid is how many rows the current candidate shares with the last one.
	x.row(0, len(word))
	for j := range x.rows[0] {
		x.rows[0][j] = j
	}
	valid := 0
	prev := ""
	for i := 0; i < len(x.sorted); {
		c := x.sorted[i]
		d := commonPrefix(prev, c.s, valid)
		prev = c.s
		pruned := false
		for ; d < len(c.s); d++ {
			// A row's least value never falls as the prefix grows (the same argument lets
			// distance stop early), so once it passes the bound no candidate sharing the
			// prefix can win.
			if x.fill(d+1, c.s, word) > x.bound(width, bestDist) {
				pruned = true
				break
			}
		}
		if pruned {
			valid = d
			p := c.s[:d+1]
			i += 1 + sort.Search(len(x.sorted)-i-1, func(k int) bool {
				s := x.sorted[i+1+k].s
				return s > p && !strings.HasPrefix(s, p)
			})
			continue
		}
		valid = len(c.s)
		if dist := x.rows[len(c.s)][len(word)]; c.s != word && dist <= width && (dist < bestDist || dist == bestDist && c.at < bestAt) {
			best, bestDist, bestAt = c.s, dist, c.at
		}
		i++
	}
	return best, bestDist <= width
}

// bound is the row value past which a prefix is skipped: past the limit nothing is close
// enough; with candidates given in byte order, a later one must beat the best found, and
// otherwise it may tie it and come earlier in the list.
func (x *Index) bound(limit, bestDist int) int {
	if x.inOrder {
		bestDist--
	}
	return min(limit, bestDist)
}

// fill computes row d (the candidate's first d bytes of s against every prefix of word), and
// returns its least value.
func (x *Index) fill(d int, s, word string) int {
	x.row(d, len(word))
	cur, prev := x.rows[d], x.rows[d-1]
	cur[0] = d
	least := d
	for j := 1; j <= len(word); j++ {
		cost := 1
		if s[d-1] == word[j-1] {
			cost = 0
		}
		cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		if d > 1 && j > 1 && s[d-1] == word[j-2] && s[d-2] == word[j-1] {
			cur[j] = min(cur[j], x.rows[d-2][j-2]+1)
		}
		least = min(least, cur[j])
	}
	return least
}

// row makes sure row d exists and holds a value for each of the n+1 prefixes of the word.
func (x *Index) row(d, n int) {
	for len(x.rows) <= d {
		x.rows = append(x.rows, nil)
	}
	x.rows[d] = slices.Grow(x.rows[d][:0], n+1)[:n+1]
}

// commonPrefix is how many leading bytes a and b share, at most most.
func commonPrefix(a, b string, most int) int {
	n := min(len(a), len(b), most)
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
