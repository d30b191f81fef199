package review

import (
	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/lint"
)

// Breaks is what the change breaks, and the approvals in mesh.yaml that approve none of it,
// positions shown from where meshc was run.
func (c *Comparison) Breaks() ([]lint.Break, catalogue.Findings) { return c.breaks(nil) }

// breaks is Breaks from the comparison of the plans the caller already made, if any.
func (c *Comparison) breaks(compared *lint.Compared) ([]lint.Break, catalogue.Findings) {
	against := lint.Against{Base: c.Base, Head: c.Head, BasePos: c.basePos, Compared: compared}
	bs := lint.Breaks(against)
	unmatched := lint.UnmatchedApprovals(against, bs)
	for i := range unmatched {
		unmatched[i].Pos = c.headPos(unmatched[i].Pos)
	}
	for i := range bs {
		bs[i].Pos = c.headPos(bs[i].Pos)
		if a := bs[i].Approval; a != nil {
			shown := *a
			shown.Pos = c.headPos(a.Pos)
			bs[i].Approval = &shown
		}
	}
	return bs, unmatched
}

// Users is every user the change adds, removes or changes, each grant's declaration shown from
// where meshc was run: a gain's in the head, a loss's in the base.
func (c *Comparison) Users() []compiler.UserChange {
	return c.shownUsers(compiler.CompareUsers(c.Base.Plan, c.Head.Plan))
}

// shownUsers rewrites the declarations of ucs, in place, as Users shows them.
func (c *Comparison) shownUsers(ucs []compiler.UserChange) []compiler.UserChange {
	for i := range ucs {
		for j := range ucs[i].Gained {
			ucs[i].Gained[j].Because = shownGrants(ucs[i].Gained[j].Because, c.headPos)
		}
		for j := range ucs[i].Lost {
			ucs[i].Lost[j].Because = shownGrants(ucs[i].Lost[j].Because, c.basePos)
		}
	}
	return ucs
}

func shownGrants(gs []compiler.Grant, pos func(catalogue.Pos) catalogue.Pos) []compiler.Grant {
	out := make([]compiler.Grant, len(gs))
	for i, g := range gs {
		g.Source = pos(g.Source)
		out[i] = g
	}
	return out
}

// Reads is every consumer of a module or the controller that reads more or less, each entry's
// declaration shown from where meshc was run: a gain's in the head, a loss's in the base.
func (c *Comparison) Reads() []compiler.ReadChange {
	rcs := compiler.CompareReads(c.Base.Plan, c.Head.Plan)
	for i := range rcs {
		rcs[i].Gained = shownGrants(rcs[i].Gained, c.headPos)
		rcs[i].Lost = shownGrants(rcs[i].Lost, c.basePos)
	}
	return rcs
}
