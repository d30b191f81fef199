package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// A combo is what one flag must or must not be given with. A flag meshc would silently ignore —
// --allow-missing without --accounts, --list with --against — is refused instead, in one line
// that says why: the user asked for something, and ignoring it would let them believe they got it.
type combo struct {
	flag string
	// notWith are flags it is refused alongside.
	notWith []string
	// needs are flags one of which it is refused without.
	needs []string
	// why says what the flag does that makes the combination meaningless.
	why string
}

// given returns the flags set on the command line.
func given(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// dashed writes a flag as help text does: -v, --format.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// refuseCombos reports the first combo the command line breaks, and whether it broke none.
func refuseCombos(fs *flag.FlagSet, stderr io.Writer, combos ...combo) bool {
	set := given(fs)
	for _, c := range combos {
		if !set[c.flag] {
			continue
		}
		for _, other := range c.notWith {
			if set[other] {
				fmt.Fprintf(stderr, "meshc %s: %s and %s do not combine: %s\n", fs.Name(), dashed(c.flag), dashed(other), c.why)
				return false
			}
		}
		if len(c.needs) > 0 && !slices.ContainsFunc(c.needs, func(n string) bool { return set[n] }) {
			names := make([]string, len(c.needs))
			for i, n := range c.needs {
				names[i] = dashed(n)
			}
			fmt.Fprintf(stderr, "meshc %s: %s works only with %s: %s\n", fs.Name(), dashed(c.flag), strings.Join(names, " or "), c.why)
			return false
		}
	}
	return true
}
