package compiler

import (
	"slices"

	"github.com/meshc-dev/meshc/catalogue"
)

// Meaning is the grants a user gained, or lost, that mean one thing: a consumer's pull, info
// and two ack subjects are one "read its own consumer EVENTS/anchor_photos". It carries every
// declaration behind them, their subjects, and, for a gain, what makes it wide. The widening
// rule and the review both speak of a user's change in meanings, and both read them here.
type Meaning struct {
	// Gained is true for what the user may now do, false for what it may no longer.
	Gained bool
	// Means is what follows "may" (or "may no longer"): "call registry's tool list".
	Means string
	// Declared are the declarations behind the grants, each once, in order of first appearance.
	Declared []Origin
	// Subjects are the grants as the server reads them: "pub mesh.mod.registry.tool.list".
	Subjects []string
	// Widening names what makes a gain wide, each once ("a wildcard", "a new person").
	Widening []string
}

// Origin is where a grant is declared and why it follows from there ("calls
// registry.list"), kept apart: a path may hold a space.
type Origin struct {
	Source  catalogue.Pos
	Because string
}

// Meanings groups the change's grants by what they mean: the gains in order of first
// appearance, then the losses.
func (uc UserChange) Meanings() []Meaning {
	var out []Meaning
	for _, side := range []struct {
		gained bool
		gs     []GrantChange
	}{{true, uc.Gained}, {false, uc.Lost}} {
		at := map[string]int{}
		for _, g := range side.gs {
			i, ok := at[g.Means()]
			if !ok {
				i = len(out)
				at[g.Means()] = i
				out = append(out, Meaning{Gained: side.gained, Means: g.Means()})
			}
			m := &out[i]
			for _, x := range g.Because {
				if d := (Origin{x.Source, x.Because}); !slices.Contains(m.Declared, d) {
					m.Declared = append(m.Declared, d)
				}
			}
			m.Subjects = append(m.Subjects, g.Action+" "+g.Subject)
			for _, w := range g.Widening {
				if !slices.Contains(m.Widening, w) {
					m.Widening = append(m.Widening, w)
				}
			}
		}
	}
	return out
}
