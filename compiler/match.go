package compiler

import (
	"slices"
	"strings"
)

// Covers reports whether every subject the narrow pattern matches is also matched by the wide
// one (NATS wildcards: `*` one token, a final `>` one or more); for a literal narrow subject,
// whether the wide pattern matches it. It is meshc's one subject matcher: grants, filters, lint's
// agreement checks and the review all ask it. Both sides are read token by token in place:
// Minimise runs it for every grant of every user.
func Covers(wide, narrow string) bool {
	// Each token is found by a loop over its bytes: tokens are a few bytes long, and
	// strings.Cut's general search was a sixth of the compiler's time.
	for {
		w := 0
		for w < len(wide) && wide[w] != '.' {
			w++
		}
		n := 0
		for n < len(narrow) && narrow[n] != '.' {
			n++
		}
		wt, nt := wide[:w], narrow[:n]
		wmore, nmore := w < len(wide), n < len(narrow)
		switch {
		case wt == ">":
			return true
		case nt == ">", wt != "*" && wt != nt:
			return false
		case !wmore || !nmore:
			return wmore == nmore
		}
		wide, narrow = wide[w+1:], narrow[n+1:]
	}
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
	return minimiseOwn(slices.Clone(subjects))
}

// minimiseOwn is Minimise of a list nothing else holds, which it sorts and shortens in place: a
// user's subjects, gathered for it alone, need no copy.
func minimiseOwn(out []string) []string {
	slices.Sort(out)
	out = slices.Compact(out)
	// Only a pattern with a wildcard covers a subject other than itself, and duplicates are gone:
	// comparing each subject with the wildcards alone keeps a machine's user of thousands of
	// literal grants linear rather than quadratic (BENCHMARKS.md).
	var wild []string
	for _, s := range out {
		if strings.ContainsAny(s, "*>") {
			wild = append(wild, s)
		}
	}
	if len(wild) == 0 {
		return out
	}
	// A few wildcards, as nearly every user has, are faster scanned than indexed.
	var x *coverIndex
	if len(wild) > indexed {
		x = newCoverIndex(slices.Clone(wild)) // a copy: wild stays on the stack in the common case
	}
	kept := out[:0]
	for _, s := range out {
		var covered bool
		if x != nil {
			covered = x.coversOther(s)
		} else {
			covered = slices.ContainsFunc(wild, func(w string) bool { return w != s && Covers(w, s) })
		}
		if !covered {
			kept = append(kept, s)
		}
	}
	return kept
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
