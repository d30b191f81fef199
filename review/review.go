package review

import (
	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/lint"
)

// Review is everything a change does to a bus running its base: the streams and consumers, who
// reads what, the users and their grants, an isolated mesh's accounts, and what it breaks.
type Review struct {
	Changes  change.Changes
	Reads    []compiler.ReadChange
	Users    []compiler.UserChange
	Accounts []compiler.AccountChange
	// Keys are keys.yaml's keys the change moves (operator mode).
	Keys   []compiler.KeyChange
	Breaks []lint.Break
	// Unmatched are the approvals in mesh.yaml that approve none of the breaks.
	Unmatched catalogue.Findings
}

// Review compares the head with the base as a bus running the base would see it. With prune,
// the base's objects the head no longer has are shown as deletes.
func (c *Comparison) Review(prune bool) Review {
	// The breaking rules read the same diff and user comparison the review shows: computed once.
	compared := &lint.Compared{
		Changes: change.Diff(change.Applied(c.Base.Plan), c.Head.Plan, change.DiffOptions{Prune: prune}),
		Users:   compiler.CompareUsers(c.Base.Plan, c.Head.Plan),
	}
	breaks, unmatched := c.breaks(compared)
	return Review{
		Changes: compared.Changes,
		Reads:   c.Reads(),
		// After the breaks: they read the grants' sources as compiled, and these are rewritten.
		Users:     c.shownUsers(compared.Users),
		Accounts:  compiler.CompareAccounts(c.Base.Plan, c.Head.Plan),
		Keys:      compiler.CompareKeys(c.Base.Plan, c.Head.Plan),
		Breaks:    breaks,
		Unmatched: unmatched,
	}
}

// Empty reports whether the change does nothing a reviewer needs to see.
func (r Review) Empty() bool {
	return r.Changes.Empty() && len(r.Reads) == 0 && len(r.Users) == 0 && len(r.Accounts) == 0 && len(r.Keys) == 0 && len(r.Breaks) == 0 && len(r.Unmatched) == 0
}

// Findings are what lint --against adds to the catalogue's own findings: the breaks (an
// approved one as info) and the approvals that approve nothing.
func (r Review) Findings() catalogue.Findings {
	return append(lint.BreakFindings(r.Breaks), r.Unmatched...).Sorted()
}

// Counts are the review's numbers, one source for the summary lines of every format.
type Counts struct {
	UsersAdded   int `json:"users_added"`
	UsersRemoved int `json:"users_removed"`
	UsersChanged int `json:"users_changed"`
	// UsersWidened are exactly the users the widening rule reports.
	UsersWidened int `json:"users_widened"`
	// UsersReminted are the users whose recorded credential moved (minted again, or another's).
	UsersReminted int `json:"users_reminted"`
	// Keys are keys.yaml's keys that moved.
	Keys        int `json:"keys_changed"`
	ReadsGained int `json:"reads_gained"`
	ReadsLost   int `json:"reads_lost"`
	Accounts    int `json:"accounts_changed"`
	Breaks      int `json:"breaks"`
	Approved    int `json:"approved"`
	// Unmatched approvals approve nothing in this change.
	Unmatched int `json:"unmatched_approvals"`
}

// Count counts the review.
func (r Review) Count() Counts {
	var n Counts
	for _, uc := range r.Users {
		switch {
		case uc.Added:
			n.UsersAdded++
		case uc.Removed:
			n.UsersRemoved++
		default:
			n.UsersChanged++
		}
		if uc.Widened() {
			n.UsersWidened++
		}
		if uc.Credential != nil && !uc.Added {
			n.UsersReminted++
		}
	}
	n.Keys = len(r.Keys)
	for _, rc := range r.Reads {
		n.ReadsGained += len(rc.Gained)
		n.ReadsLost += len(rc.Lost)
	}
	n.Accounts = len(r.Accounts)
	for _, b := range r.Breaks {
		n.Breaks++
		if b.Approval != nil {
			n.Approved++
		}
	}
	n.Unmatched = len(r.Unmatched)
	return n
}

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
