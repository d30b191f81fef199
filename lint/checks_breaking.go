package lint

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
)

// The breaking-change rules of `meshc lint --against`: what a change does to a bus that already
// runs the base, named as buf names breaking changes. Each is about one object (On), so a change
// can approve it in mesh.yaml.
var (
	ruleReplay = &catalogue.Rule{ID: "replay", Severity: catalogue.Error,
		Summary: "with --against: a consumer whose name changes (a module or machine renamed, a module moved to another machine)",
		Why:     "A new name is a new consumer: it starts at the beginning of its stream and delivers the history again, and the old one's position is lost."}
	ruleRetention = &catalogue.Rule{ID: "retention", Severity: catalogue.Error,
		Summary: "with --against: a stream's max-age, max-bytes, max-msgs, max-msgs-per-subject or replicas lowered, or a change that replaces a stream",
		Why:     "The server drops what a stream holds beyond a lowered limit the moment the change is applied, and a replace deletes everything; nothing on the bus asks first."}
	ruleWidening = &catalogue.Rule{ID: "widening", Severity: catalogue.Warning,
		Summary: "with --against: a bus user gaining a grant (a new wildcard, a new person, another module's subject called out)",
		Why:     "A new grant reaches the bus as one more line of accounts.conf; said here, a reviewer sees who may now do what without reading the golden diff."}
	ruleContract = &catalogue.Rule{ID: "contract", Severity: catalogue.Error,
		Summary: "with --against: an event, tool, seat or kind of work the base offered that is gone, or a seat renamed without an alias",
		Why:     "Whoever still consumes, calls or submits it meets silence, and work queued for a seat waits with nobody to take it."}
)

// Side is one side of a change: a catalogue, its index and the plan it compiles to.
type Side struct {
	Index *catalogue.Index
	Plan  *compiler.Plan
}

// Against is a change from Base to Head.
type Against struct {
	Base, Head Side
	// BasePos shows a base position to a reader (the base's files are not in the working tree:
	// `HEAD~1:modules/x.yaml`). Nil leaves positions as they are.
	BasePos func(catalogue.Pos) catalogue.Pos
	// Compared, when set, is what a caller that shows it too (the pull-request review) already
	// computed from Base and Head, so Breaks does not compute it a second time. Nil: Breaks does.
	Compared *Compared
}

// Compared is the comparison of two plans that the breaking rules read.
type Compared struct {
	// Changes is change.Diff(change.Applied(Base.Plan), Head.Plan, …), with or without Prune:
	// the streams it replaces are the same either way.
	Changes change.Changes
	// Users is compiler.CompareUsers(Base.Plan, Head.Plan), its grants' sources as compiled.
	Users []compiler.UserChange
}

// compared is a.Compared, computed when the caller gave none.
func (a Against) compared() *Compared {
	if a.Compared != nil {
		return a.Compared
	}
	return &Compared{
		Changes: change.Diff(change.Applied(a.Base.Plan), a.Head.Plan, change.DiffOptions{}),
		Users:   compiler.CompareUsers(a.Base.Plan, a.Head.Plan),
	}
}

// replaced names the streams the server cannot change in place from base to head, with the
// settings that force it: the change model's replace table decides, and lint keeps no second.
func (a Against) replaced() map[string]string {
	cs := a.Compared.Changes
	out := map[string]string{}
	for _, c := range cs.Items {
		if c.Kind != change.KindStream || c.Action != change.Replace {
			continue
		}
		var fields []string
		for _, f := range c.Fields {
			if f.Replaces {
				fields = append(fields, f.Name)
			}
		}
		out[c.Stream] = strings.Join(fields, ", ")
	}
	return out
}

// Break is one breaking finding, what it is about, and the approval that accepts it, if any.
type Break struct {
	catalogue.Finding
	// On is what breaks, as an approval names it: a consumer STREAM/name, a stream, a bus
	// user, an event or tool MODULE.NAME, a seat, work SEAT.KIND.
	On       string              `json:"on"`
	Approval *catalogue.Approval `json:"approval,omitempty"`
}

// Breaks lists what a change breaks, sorted, each approved or not by the head's mesh.yaml.
func Breaks(a Against) []Break {
	if a.BasePos == nil {
		a.BasePos = func(p catalogue.Pos) catalogue.Pos { return p }
	}
	a.Compared = a.compared()
	var out []Break
	out = append(out, replays(a)...)
	out = append(out, retentionCuts(a)...)
	out = append(out, widenings(a)...)
	out = append(out, contracts(a)...)
	approvals := a.Head.Index.Catalogue.Mesh.Approvals
	for i := range out {
		b := &out[i]
		if j := slices.IndexFunc(approvals, func(x catalogue.Approval) bool { return x.Rule.Value == b.Rule && x.On.Value == b.On }); j >= 0 {
			b.Approval = &approvals[j]
		}
	}
	slices.SortFunc(out, func(x, y Break) int {
		return cmp.Or(x.Pos.Compare(y.Pos), cmp.Compare(x.Rule, y.Rule), cmp.Compare(x.On, y.On), cmp.Compare(x.Message, y.Message))
	})
	return slices.CompactFunc(out, func(x, y Break) bool { return x.Pos == y.Pos && x.Rule == y.Rule && x.Message == y.Message })
}

// BreakFindings are the breaks as lint findings: an approved break is info, its message
// saying where it was approved and why, so the trace shows in every format.
func BreakFindings(bs []Break) catalogue.Findings {
	out := make(catalogue.Findings, 0, len(bs))
	for _, b := range bs {
		f := b.Finding
		if b.Approval != nil {
			f.Severity = catalogue.Info
			f.Message += fmt.Sprintf(" — approved in %s: %s", b.Approval.Pos, b.Approval.Reason.Value)
		}
		out = append(out, f)
	}
	return out.Sorted()
}

func breakAt(rule *Rule, pos catalogue.Pos, on string, format string, args ...any) Break {
	return Break{Finding: rule.At(pos, format, args...), On: on}
}

// meshPos is the head's mesh.yaml: where a break about the mesh as a whole is reported.
func (a Against) meshPos() catalogue.Pos {
	return catalogue.Pos{File: a.Head.Index.Catalogue.Mesh.File}
}

// runner names the module and machine a module's consumer belongs to, from the inventory.
type runner struct{ node, module string }

func consumerRunners(ix *catalogue.Index) map[string]runner {
	out := map[string]runner{}
	if inv := ix.Catalogue.Inventory; inv != nil {
		for _, n := range inv.Nodes {
			for _, r := range n.Runs {
				out[compiler.ModuleConsumer(n.Name.Value, r.Value)] = runner{n.Name.Value, r.Value}
			}
		}
	}
	return out
}

func filters(c jetstream.ConsumerConfig) []string {
	if c.FilterSubject != "" {
		return []string{c.FilterSubject}
	}
	return c.FilterSubjects
}

// replays: a consumer whose name changes is a new consumer. It starts at the beginning of its
// stream and delivers the stream's history again, and the old one's position is lost — a module
// renamed, a machine renamed, a module moved to another machine all change the name. Each
// consumer the change drops is paired with at most one it adds on the same stream: first the
// same module elsewhere, then a module renamed on the same machine (same filters), then any
// consumer with the same filters.
func replays(a Against) []Break {
	key := func(c compiler.Consumer) [2]string { return [2]string{c.Stream, c.Config.Durable} }
	inBase, inHead := map[[2]string]bool{}, map[[2]string]bool{}
	for _, c := range a.Base.Plan.Consumers {
		inBase[key(c)] = true
	}
	for _, c := range a.Head.Plan.Consumers {
		inHead[key(c)] = true
	}
	var gone, fresh []compiler.Consumer
	for _, c := range a.Base.Plan.Consumers {
		if !inHead[key(c)] {
			gone = append(gone, c)
		}
	}
	for _, c := range a.Head.Plan.Consumers {
		// A consumer told where to start does not replay from the beginning.
		if !inBase[key(c)] && c.Config.DeliverPolicy == jetstream.DeliverAllPolicy {
			fresh = append(fresh, c)
		}
	}
	baseRunners, headRunners := consumerRunners(a.Base.Index), consumerRunners(a.Head.Index)
	sameFilters := func(b, h compiler.Consumer) bool {
		x, y := slices.Clone(filters(b.Config)), slices.Clone(filters(h.Config))
		slices.Sort(x)
		slices.Sort(y)
		return slices.Equal(x, y)
	}
	tiers := []func(b, h compiler.Consumer) (string, bool){
		func(b, h compiler.Consumer) (string, bool) {
			br, hr := baseRunners[b.Config.Durable], headRunners[h.Config.Durable]
			if br.module == "" || br.module != hr.module {
				return "", false
			}
			if !nodeExists(a.Head.Index, br.node) {
				return fmt.Sprintf("machine %s is now %s", br.node, hr.node), true
			}
			return fmt.Sprintf("module %s moves from machine %s to %s", br.module, br.node, hr.node), true
		},
		func(b, h compiler.Consumer) (string, bool) {
			br, hr := baseRunners[b.Config.Durable], headRunners[h.Config.Durable]
			if br.node == "" || br.node != hr.node || !sameFilters(b, h) {
				return "", false
			}
			return fmt.Sprintf("module %s is now %s", br.module, hr.module), true
		},
		func(b, h compiler.Consumer) (string, bool) { return "its name changes", sameFilters(b, h) },
	}
	var out []Break
	paired := map[[2]string]bool{}
	for _, tier := range tiers {
		for _, bc := range gone {
			if paired[key(bc)] {
				continue
			}
			for _, hc := range fresh {
				if paired[key(hc)] || hc.Stream != bc.Stream {
					continue
				}
				why, ok := tier(bc, hc)
				if !ok {
					continue
				}
				paired[key(bc)], paired[key(hc)] = true, true
				on := bc.Stream + "/" + bc.Config.Durable
				out = append(out, breakAt(ruleReplay, hc.Source, on,
					"consumer %s/%s takes over from %s because %s: it starts at the beginning of %s and delivers its history again, and %s's position is lost; keep the name, or approve the replay (`approve: [{rule: replay, on: %s, reason: …}]` in mesh.yaml)",
					hc.Stream, hc.Config.Durable, bc.Config.Durable, why, hc.Stream, bc.Config.Durable, on))
				break
			}
		}
	}
	return out
}

func nodeExists(ix *catalogue.Index, node string) bool {
	return ix.Catalogue.Inventory != nil && slices.ContainsFunc(ix.Catalogue.Inventory.Nodes, func(n *catalogue.Node) bool { return n.Name.Value == node })
}

// retentionCuts: a stream that keeps less than it did drops what it holds beyond the new limit
// at once, and a stream replaced is deleted with everything in it.
func retentionCuts(a Against) []Break {
	var out []Break
	replaced := a.replaced()
	for _, hs := range a.Head.Plan.Streams {
		i := slices.IndexFunc(a.Base.Plan.Streams, func(s compiler.Stream) bool { return s.Config.Name == hs.Config.Name })
		if i < 0 {
			continue
		}
		b, h := a.Base.Plan.Streams[i].Config, hs.Config
		name := h.Name
		var cuts []string
		if lowered(int64(b.MaxAge), int64(h.MaxAge)) {
			cuts = append(cuts, fmt.Sprintf("max-age %s → %s", limit(b.MaxAge), limit(h.MaxAge)))
		}
		if lowered(b.MaxBytes, h.MaxBytes) {
			cuts = append(cuts, fmt.Sprintf("max-bytes %s → %s", limit(b.MaxBytes), limit(h.MaxBytes)))
		}
		if lowered(b.MaxMsgsPerSubject, h.MaxMsgsPerSubject) {
			cuts = append(cuts, fmt.Sprintf("max-msgs-per-subject %s → %s", limit(b.MaxMsgsPerSubject), limit(h.MaxMsgsPerSubject)))
		}
		if lowered(b.MaxMsgs, h.MaxMsgs) {
			cuts = append(cuts, fmt.Sprintf("max-msgs %s → %s", limit(b.MaxMsgs), limit(h.MaxMsgs)))
		}
		if h.Replicas < b.Replicas {
			cuts = append(cuts, fmt.Sprintf("replicas %d → %d", b.Replicas, h.Replicas))
		}
		if len(cuts) > 0 {
			out = append(out, breakAt(ruleRetention, hs.Source, name,
				"stream %s keeps less: %s; what it holds beyond the new limit is dropped when apply changes it; keep the limit, or approve the cut (`approve: [{rule: retention, on: %s, reason: …}]` in mesh.yaml)",
				name, strings.Join(cuts, ", "), name))
		}
		if field, ok := replaced[name]; ok {
			out = append(out, breakAt(ruleRetention, hs.Source, name,
				"stream %s must be replaced (%s cannot change in place): replacing deletes it with every message and consumer on it; keep %s, or approve the replace (`approve: [{rule: retention, on: %s, reason: …}]` in mesh.yaml)",
				name, field, field, name))
		}
	}
	return out
}

// lowered reports whether a limit goes down: an unlimited one (zero or negative) becoming
// limited, or a limit becoming smaller.
func lowered(base, head int64) bool {
	if head <= 0 {
		return false
	}
	return base <= 0 || head < base
}

func limit[T int64 | time.Duration](v T) string {
	if v <= 0 {
		return "unlimited"
	}
	return fmt.Sprint(v)
}

// widenings: every user who may do more than before, one finding per user at the declaration of
// its first gain, naming every subject gained and what makes it wide. A new user is a widening
// when something it gains reaches past its own things — a person, a wildcard, another module's
// subject: a machine or a module instance that only gets its own inbox, events and consumer is
// the plan's "users added", not a second look.
func widenings(a Against) []Break {
	var out []Break
	for _, uc := range a.Compared.Users {
		if len(uc.Gained) == 0 {
			continue
		}
		if uc.Added && !slices.ContainsFunc(uc.Gained, func(g compiler.GrantChange) bool { return len(g.Widening) > 0 }) {
			continue
		}
		var gains []string
		for _, g := range uc.Gained {
			s := g.Action + " " + g.Subject
			if len(g.Widening) > 0 {
				s += " (" + strings.Join(g.Widening, ", ") + ")"
			}
			gains = append(gains, s)
		}
		pos := a.meshPos()
		if len(uc.Gained[0].Because) > 0 {
			pos = uc.Gained[0].Because[0].Source
		}
		what := "bus user " + uc.User + " gains"
		if uc.Added {
			what = "new bus user " + uc.User + " may"
		}
		out = append(out, breakAt(ruleWidening, pos, uc.User,
			"%s %s; if that is meant, approve it (`approve: [{rule: widening, on: %s, reason: …}]` in mesh.yaml)",
			what, list(gains), uc.User))
	}
	return out
}

// contracts: what the base offered — an event, a tool, a seat, a kind of work — and the head no
// longer does. Whoever still consumes, calls or submits it meets silence; work already queued for
// a seat waits in its stream with nobody to take it.
func contracts(a Against) []Break {
	var out []Break
	base, head := a.Base.Index, a.Head.Index
	at := func(m *catalogue.Module) catalogue.Pos {
		if hm := head.Modules[m.Name.Value]; hm != nil {
			return hm.Name.Pos
		}
		return a.meshPos()
	}
	related := func(b *Break, p catalogue.Pos, what string) {
		b.Related = append(b.Related, catalogue.Related{Pos: a.BasePos(p), Message: what})
	}
	for _, name := range sortedKeys(base.Modules) {
		m := base.Modules[name]
		hm := head.Modules[name]
		for _, e := range m.Emits {
			if hm == nil || !slices.ContainsFunc(hm.Emits, func(t catalogue.Text) bool { return t.Value == e.Value }) {
				on := name + "." + e.Value
				b := breakAt(ruleContract, at(m), on,
					"event %s is gone: whoever consumes it hears nothing, and what EVENTS stored of it is no longer consumed; keep emitting it, or approve (`approve: [{rule: contract, on: %s, reason: …}]` in mesh.yaml)", on, on)
				related(&b, e.Pos, "the base emits it here")
				out = append(out, b)
			}
		}
		for _, t := range m.Tools {
			if hm == nil || !slices.ContainsFunc(hm.Tools, func(x catalogue.Text) bool { return x.Value == t.Value }) {
				on := name + "." + t.Value
				b := breakAt(ruleContract, at(m), on,
					"tool %s is gone: every call to it is answered \"no responders\"; keep serving it, or approve (`approve: [{rule: contract, on: %s, reason: …}]` in mesh.yaml)", on, on)
				related(&b, t.Pos, "the base serves it here")
				out = append(out, b)
			}
		}
	}
	var added []string
	for _, name := range sortedKeys(head.Seats) {
		if base.Seats[name] == nil {
			added = append(added, name)
		}
	}
	for _, name := range sortedKeys(base.Seats) {
		s := base.Seats[name]
		hs := head.Seat(name)
		if hs == nil {
			hint := ""
			if len(added) > 0 {
				hint = fmt.Sprintf(" (new here: %s)", list(added))
			}
			b := breakAt(ruleContract, a.meshPos(), name,
				"seat %s is gone%s: work queued in %s waits with nobody to take it, and manifests naming it no longer resolve; if it was renamed, add `aliases: {%s: <new name>}` to mesh.yaml, or approve (`approve: [{rule: contract, on: %s, reason: …}]`)",
				name, hint, compiler.SeatStream(name), name, name)
			related(&b, s.Name.Pos, "the base declares it here")
			out = append(out, b)
			continue
		}
		for _, k := range s.Accepts {
			if !slices.ContainsFunc(hs.Accepts, func(t catalogue.Text) bool { return t.Value == k.Value }) {
				on := name + "." + k.Value
				b := breakAt(ruleContract, hs.Name.Pos, on,
					"seat %s no longer accepts %s work: what is queued of it in %s is never taken, and whoever submits it is refused; keep accepting it, or approve (`approve: [{rule: contract, on: %s, reason: …}]` in mesh.yaml)",
					hs.Name.Value, k.Value, compiler.SeatStream(hs.Name.Value), on)
				related(&b, k.Pos, "the base accepts it here")
				out = append(out, b)
			}
		}
		for _, e := range s.Emits {
			if !slices.ContainsFunc(hs.Emits, func(t catalogue.Text) bool { return t.Value == e.Value }) {
				on := name + "." + e.Value
				b := breakAt(ruleContract, hs.Name.Pos, on,
					"seat %s no longer emits %s: whoever consumes it hears nothing; keep it, or approve (`approve: [{rule: contract, on: %s, reason: …}]` in mesh.yaml)",
					hs.Name.Value, e.Value, on)
				related(&b, e.Pos, "the base emits it here")
				out = append(out, b)
			}
		}
	}
	return out
}
