package lint

import (
	"slices"

	"github.com/meshc-dev/meshc/catalogue"
)

// The rules this file reports, declared where they are reported (lint.Rules lists them all).
var (
	ruleModuleDuplicate = &catalogue.Rule{ID: "module-duplicate", Severity: catalogue.Error, Firm: true,
		Summary: "two manifests for one module",
		Why:     "Only one of them would be compiled, and which depends on file order."}
	ruleSeatDuplicate = &catalogue.Rule{ID: "seat-duplicate", Severity: catalogue.Error, Firm: true,
		Summary: "two declarers of one seat",
		Why:     "Two declarations of one seat disagree about what it accepts and emits, and only one is compiled."}
	ruleSeatUnknown = &catalogue.Rule{ID: "seat-unknown", Severity: catalogue.Error,
		Summary: "a claim or use of a seat nobody declares",
		Why:     "Work submitted to a seat nobody declares has no stream to wait in and is lost."}
	ruleSeatRenamed = &catalogue.Rule{ID: "seat-renamed", Severity: catalogue.Warning,
		Summary: "a claim, use or consumed event written with a seat's old name",
		Why:     "The old name still resolves through the alias, but a manifest written against it breaks when the alias is retired."}
	ruleSeatHolderDelivers = &catalogue.Rule{ID: "seat-holder-delivers", Severity: catalogue.Error,
		Summary: "a holder that does not provide what its seat delivers",
		Why:     "Whoever requires the seat's interface would be served by a module that does not speak it."}
	ruleSeatInterfaceName = &catalogue.Rule{ID: "seat-interface-name", Severity: catalogue.Warning,
		Summary: "a seat named like the interface it delivers, unless listed in shared-names",
		Why:     "A blanket rename once renamed a seat and the interface together, and the failure read \"served on <nil>\"."}
	ruleNameClash = &catalogue.Rule{ID: "name-clash", Severity: catalogue.Error, Firm: true,
		Summary: "a seat and a module with one name",
		Why:     "A consumed name's first token is resolved as a seat or a module; sharing a name makes the subject depend on which."}
	ruleBusUsersClaim = &catalogue.Rule{ID: "bus-users-claim", Severity: catalogue.Error,
		Summary: "a module asking for the bus-users file without a claim on mesh-broker",
		Why:     "That file holds every user's password hash: asking for it must not be enough to receive it."}
	ruleSeatUseNothing = &catalogue.Rule{ID: "seat-use-nothing", Severity: catalogue.Error,
		Summary: "a use of a seat that accepts no work",
		Why:     "Using a seat means submitting work to it; a seat that accepts none has no work queue, so the use grants nothing."}
	ruleSeatUnheld = &catalogue.Rule{ID: "seat-unheld", Severity: catalogue.Info,
		Summary: "a running module submitting work to a seat nobody running holds",
		Why:     "Work waits in the seat's queue until a holder appears; worth knowing, not wrong."}
	ruleAliasDangling = &catalogue.Rule{ID: "alias-dangling", Severity: catalogue.Warning,
		Summary: "an alias to a seat nobody declares",
		Why:     "A rename that leads nowhere turns every old name into a seat-unknown at the next lint."}
)

// checkDuplicates reports two manifests for one module, two declarers of one seat, and a seat
// and a module sharing a name. Each points at the later place and names the earlier.
func (l *linter) checkDuplicates() {
	ix := l.ix
	for _, m := range ix.Catalogue.Modules {
		if m.Name.Value == "" || !l.ok(m.Name) {
			continue
		}
		if first := ix.Modules[m.Name.Value]; first != m {
			l.related(ruleModuleDuplicate, first.Name.Pos, m.Name.Pos, "the first manifest for "+m.Name.Value, "",
				"module %q already has a manifest (%s): keep one manifest per module, or rename this one", m.Name.Value, first.File)
		}
	}

	seats := slices.Clone(ix.Catalogue.Mesh.Roles)
	for _, m := range ix.Catalogue.Modules {
		seats = append(seats, m.Seats...)
	}
	for _, s := range seats {
		if !l.ok(s.Name) {
			continue
		}
		if first := ix.Seats[s.Name.Value]; first != s {
			l.related(ruleSeatDuplicate, first.Name.Pos, s.Name.Pos, "declared first by "+declarer(first), "",
				"seat %q is already declared by %s: a seat has one declarer; drop this declaration and claim or use the seat instead",
				s.Name.Value, declarer(first))
		}
	}

	// A consumed name's first token is looked up as a seat and then as a module: with both, the
	// subject depends on the order of that lookup, not on what the consumer meant.
	for _, m := range ix.Catalogue.Modules {
		if !l.canonical(m) || !l.ok(m.Name) {
			continue
		}
		if s := ix.Seats[m.Name.Value]; s != nil && l.ok(s.Name) {
			l.related(ruleNameClash, s.Name.Pos, m.Name.Pos, "the seat, declared by "+declarer(s), "the module "+m.Name.Value,
				"%q names both a module (%s) and a seat (declared by %s), so %s.EVENT could mean either: rename one of them",
				m.Name.Value, m.File, declarer(s), m.Name.Value)
		}
	}
	l.aliasClashes()
}

// aliasClashes reports an old seat name that is also a module's name: the alias wins the lookup,
// so a consumer of the module's events would be given the renamed seat's instead.
func (l *linter) aliasClashes() {
	for _, a := range l.ix.Catalogue.Mesh.Aliases {
		m := l.ix.Modules[a.Old.Value]
		if m == nil || !l.ok(a.Old) || !l.ok(m.Name) || l.ix.Seats[a.New.Value] == nil {
			continue
		}
		l.related(ruleNameClash, a.Old.Pos, m.Name.Pos, "the alias "+a.Old.Value+" → "+a.New.Value, "the module "+m.Name.Value,
			"%q names both a module (%s) and a seat's old name (mesh.yaml aliases), so %s.EVENT would mean seat %s: rename the module, or retire the alias",
			m.Name.Value, m.File, m.Name.Value, a.New.Value)
	}
}

// seatRef is a claim, a use or a submit, resolved.
type seatRef struct {
	seat    *catalogue.Seat
	renamed bool
}

// resolveSeat resolves a written seat name through the aliases, reporting seat-unknown (with
// the new name when an alias knows it) when nothing is declared. ok is false after a finding.
func (l *linter) resolveSeat(t catalogue.Text) (seatRef, bool) {
	if !l.ok(t) {
		return seatRef{}, false
	}
	name, renamed := l.ix.SeatName(t.Value)
	if s := l.ix.Seats[name]; s != nil {
		return seatRef{seat: s, renamed: renamed}, true
	}
	if l.unread {
		return seatRef{}, false // an unread manifest may declare it
	}
	if to, ok := l.ix.Aliases[t.Value]; ok {
		l.report(ruleSeatUnknown, t.Pos, "%q was renamed to %q (mesh.yaml aliases), and nobody declares %q either: declare it in some module's seats or in mesh.yaml's roles, or fix the alias",
			t.Value, to, to)
		return seatRef{}, false
	}
	l.report(ruleSeatUnknown, t.Pos, "nobody declares seat %q: declare it in some module's seats or in mesh.yaml's roles, or fix the name%s",
		t.Value, didYouMean(l.seats().Closest(t.Value)))
	return seatRef{}, false
}

// renamed reports a seat written with its old name, once nothing more serious was said about it.
func (l *linter) renamed(t catalogue.Text, ref seatRef) {
	if ref.renamed && l.ok(t) {
		l.report(ruleSeatRenamed, t.Pos, "%q is the old name of seat %q (mesh.yaml aliases): write %q; the old name stops working when the alias is retired",
			t.Value, ref.seat.Name.Value, ref.seat.Name.Value)
	}
}

func (l *linter) checkSeats() {
	ix := l.ix
	for _, a := range ix.Catalogue.Mesh.Aliases {
		if l.ok(a.New) && ix.Seats[a.New.Value] == nil && !l.unread {
			l.report(ruleAliasDangling, a.New.Pos, "alias %s → %s leads to a seat nobody declares, so %q resolves to nothing: declare %q, or point the alias at the seat's new name%s",
				a.Old.Value, a.New.Value, a.Old.Value, a.New.Value, didYouMean(l.seats().Closest(a.New.Value)))
		}
	}

	for _, s := range ix.AllSeats() {
		if l.ok(s.Name) && s.Delivers.Value == s.Name.Value && !ix.SharedNames[s.Name.Value] {
			l.report(ruleSeatInterfaceName, s.Name.Pos, "seat %q is named like the interface it delivers, so a rename of one reads as a rename of both: name the seat for its role, or list it in mesh.yaml's shared-names",
				s.Name.Value)
		}
	}

	for _, m := range ix.Catalogue.Modules {
		if !l.canonical(m) {
			continue
		}
		l.checkClaims(m)
		for _, u := range m.Uses {
			l.checkUse(u, m.Name.Value, l.running(m.Name.Value))
		}
		l.checkFiles(m)
	}

	// The controller runs wherever the mesh does; what it submits waits for a holder the same way.
	for _, s := range ix.Catalogue.Mesh.Controller.Submits {
		l.checkUse(s, "the controller", ix.Catalogue.Inventory != nil)
	}
}

func (l *linter) checkClaims(m *catalogue.Module) {
	for _, c := range m.Claims {
		ref, ok := l.resolveSeat(c)
		if !ok {
			continue
		}
		if want := ref.seat.Delivers.Value; want != "" && !slices.ContainsFunc(m.Provides, func(p catalogue.Text) bool { return p.Value == want }) {
			l.report(ruleSeatHolderDelivers, c.Pos, "%s claims seat %s, whose holder must provide %s, and %s does not: add %s to its provides, or drop the claim",
				m.Name.Value, ref.seat.Name.Value, want, m.Name.Value, want)
			continue
		}
		l.renamed(c, ref)
	}
}

// checkUse checks one seat a module uses (or the controller submits to). running says whether
// the user runs, for seat-unheld.
func (l *linter) checkUse(u catalogue.Text, who string, running bool) {
	ref, ok := l.resolveSeat(u)
	if !ok {
		return
	}
	s := ref.seat
	if len(s.Accepts) == 0 {
		l.report(ruleSeatUseNothing, u.Pos, "seat %s accepts no work, so using it grants %s nothing: drop it, or add the kinds of work it takes to its accepts (in %s)",
			s.Name.Value, who, declarer(s))
		return
	}
	l.renamed(u, ref)
	if running && l.ok(u) && !l.unread && !l.heldByRunning(s.Name.Value) {
		fix := "run a module that claims it"
		if hs := l.ix.Holders[s.Name.Value]; len(hs) > 0 {
			fix = "run " + hs[0].Name.Value + ", which claims it"
		}
		l.report(ruleSeatUnheld, u.Pos, "nothing the inventory runs holds seat %s, so work %s submits waits in its queue until a holder runs: %s",
			s.Name.Value, who, fix)
	}
}

func (l *linter) heldByRunning(seat string) bool {
	return slices.ContainsFunc(l.ix.Holders[seat], func(m *catalogue.Module) bool { return l.running(m.Name.Value) })
}

// checkFiles reports a module asking for the bus's user list without holding the broker seat.
func (l *linter) checkFiles(m *catalogue.Module) {
	for _, f := range m.Files {
		if f.Kind.Value != busUsersFile || !l.ok(f.Kind) {
			continue
		}
		holds := slices.ContainsFunc(m.Claims, func(c catalogue.Text) bool {
			name, _ := l.ix.SeatName(c.Value)
			return name == brokerSeat
		})
		if !holds {
			l.report(ruleBusUsersClaim, f.Kind.Pos, "bus-users holds every user's password hash, and only the holder of %s receives it: claim %s, or drop this file",
				brokerSeat, brokerSeat)
		}
	}
}
