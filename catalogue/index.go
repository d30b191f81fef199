package catalogue

import "slices"

// Index answers the questions every check and the compiler ask of a catalogue — which module has
// this name, which seat, what an old seat name became, what runs where — in constant time, so
// no whole-catalogue check is quadratic in the number of modules.
//
// Where a name is declared twice, the index holds the first declarer in path order (roles before
// modules); the duplicate is lint's finding, and everything else proceeds as if it were absent.
type Index struct {
	Catalogue *Catalogue
	Modules   map[string]*Module
	Seats     map[string]*Seat
	// Aliases maps an old seat name to its new one.
	Aliases map[string]string
	// Running maps a module to the machines that run it, in inventory order.
	Running map[string][]*Node
	// Holders maps a seat to the modules whose manifests claim it (resolved through aliases).
	Holders map[string][]*Module
	// SharedNames are the seats allowed to share a name with what they deliver.
	SharedNames map[string]bool
}

// NewIndex builds the index of a loaded catalogue.
func NewIndex(c *Catalogue) *Index {
	// Sized once: on a large catalogue growing these maps step by step, rehashing each time,
	// was most of the index's cost.
	ix := &Index{
		Catalogue:   c,
		Modules:     make(map[string]*Module, len(c.Modules)),
		Seats:       map[string]*Seat{},
		Aliases:     map[string]string{},
		Running:     make(map[string][]*Node, len(c.Modules)),
		Holders:     map[string][]*Module{},
		SharedNames: map[string]bool{},
	}
	for _, s := range c.Mesh.Roles {
		if _, ok := ix.Seats[s.Name.Value]; !ok {
			ix.Seats[s.Name.Value] = s
		}
	}
	for _, m := range c.Modules {
		if m.Name.Value != "" {
			if _, ok := ix.Modules[m.Name.Value]; !ok {
				ix.Modules[m.Name.Value] = m
			}
		}
		for _, s := range m.Seats {
			if _, ok := ix.Seats[s.Name.Value]; !ok {
				ix.Seats[s.Name.Value] = s
			}
		}
	}
	for _, a := range c.Mesh.Aliases {
		if _, ok := ix.Aliases[a.Old.Value]; !ok {
			ix.Aliases[a.Old.Value] = a.New.Value
		}
	}
	for _, n := range c.Mesh.SharedNames {
		ix.SharedNames[n.Value] = true
	}
	if c.Inventory != nil {
		for _, n := range c.Inventory.Nodes {
			for _, r := range n.Runs {
				ix.Running[r.Value] = append(ix.Running[r.Value], n)
			}
		}
	}
	for _, m := range c.Modules {
		if ix.Modules[m.Name.Value] != m {
			continue // a duplicate manifest holds nothing: lint names it
		}
		for _, claim := range m.Claims {
			seat, _ := ix.SeatName(claim.Value)
			if !slices.Contains(ix.Holders[seat], m) {
				ix.Holders[seat] = append(ix.Holders[seat], m)
			}
		}
	}
	return ix
}

// SeatName resolves a seat name as written in a claim, a use or a consumed event: an old name
// whose new one is declared resolves to the new one (renamed = true). Anything else is returned
// as written.
func (ix *Index) SeatName(written string) (name string, renamed bool) {
	if _, declared := ix.Seats[written]; declared {
		return written, false
	}
	if renamedTo, ok := ix.Aliases[written]; ok {
		if _, declared := ix.Seats[renamedTo]; declared {
			return renamedTo, true
		}
	}
	return written, false
}

// Seat returns the declared seat a written name means, following an alias, or nil.
func (ix *Index) Seat(written string) *Seat {
	name, _ := ix.SeatName(written)
	return ix.Seats[name]
}

// AllSeats returns every declared seat, roles first then modules' in path order, without the
// duplicates a second declarer would add.
func (ix *Index) AllSeats() []*Seat {
	var out []*Seat
	for _, s := range ix.Catalogue.Mesh.Roles {
		if ix.Seats[s.Name.Value] == s {
			out = append(out, s)
		}
	}
	for _, m := range ix.Catalogue.Modules {
		for _, s := range m.Seats {
			if ix.Seats[s.Name.Value] == s {
				out = append(out, s)
			}
		}
	}
	return out
}
