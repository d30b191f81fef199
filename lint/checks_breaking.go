package lint

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
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
	ruleApprovalUnmatched = &catalogue.Rule{ID: "approval-unmatched", Severity: catalogue.Warning,
		Summary: "with --against: an approval in mesh.yaml that matches no break of the change, or names another before and after than the change has",
		Why:     "An approval names the break it was given for; one left in place after its change merged, or written for 720h → 24h when the change now says 1h, must not approve what nobody reviewed."}
	ruleCredential = &catalogue.Rule{ID: "credential", Severity: catalogue.Warning,
		Summary: "with --against: a bus user's credential re-minted or taken from another user, or a key of keys.yaml (the operator's, its signing key, the system account's, the probe key, an account's) changed",
		Why:     "A credential decides who logs in as whom: a re-mint shuts out the holder of the old one and lets in whoever minted the new, one user recording another's lets either log in as both, and a changed key re-signs or re-keys what the servers trust. Each reaches the bus as one changed line a reviewer reads past; said here, it is approved by name, with its reason."}
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

// replacement is why a stream must be replaced: the settings the server cannot change in place,
// each with its value before and after.
type replacement struct{ fields, from, to string }

// replaced names the streams the server cannot change in place from base to head, with the
// settings that force it: the change model's replace table decides, and lint keeps no second.
func (a Against) replaced() map[string]replacement {
	cs := a.Compared.Changes
	out := map[string]replacement{}
	for _, c := range cs.Items {
		if c.Kind != change.KindStream || c.Action != change.Replace {
			continue
		}
		var fields, from, to []string
		for _, f := range c.Fields {
			if f.Replaces {
				fields = append(fields, f.Name)
				from = append(from, f.Name+" "+f.Old)
				to = append(to, f.Name+" "+f.New)
			}
		}
		out[c.Stream] = replacement{strings.Join(fields, ", "), strings.Join(from, "; "), strings.Join(to, "; ")}
	}
	return out
}

// Break is one breaking finding, what it is about, and the approval that accepts it, if any.
type Break struct {
	catalogue.Finding
	// On is what breaks, as an approval names it: a consumer STREAM/name, a stream, a bus
	// user, an event or tool MODULE.NAME, a seat, work SEAT.KIND.
	On string `json:"on"`
	// From and To are the before and after the break is about, in the catalogue's words
	// ("max-age 720h" → "max-age 24h"; a replay's new consumer; what a widened user may now do):
	// an approval names them and approves that alone. Empty when On says it all (a contract:
	// what was offered is gone).
	From     string              `json:"from,omitempty"`
	To       string              `json:"to,omitempty"`
	Approval *catalogue.Approval `json:"approval,omitempty"`
}

// Approves reports whether an approval is for this break: its rule, what it is about, and the
// before and after it was given for.
func (b Break) Approves(x catalogue.Approval) bool {
	return x.Rule.Value == b.Rule && x.On.Value == b.On && same(x.From.Value, b.From) && same(x.To.Value, b.To)
}

// same compares two values as written by hand: spacing aside.
func same(a, b string) bool {
	return strings.Join(strings.Fields(a), " ") == strings.Join(strings.Fields(b), " ")
}

// ApprovalLine is the approval that accepts this break and nothing else, as mesh.yaml's
// approve: list holds it.
func (b Break) ApprovalLine() string {
	parts := []string{"rule: " + b.Rule, "on: " + flowValue(b.On)}
	if b.From != "" {
		parts = append(parts, "from: "+flowValue(b.From))
	}
	if b.To != "" {
		parts = append(parts, "to: "+flowValue(b.To))
	}
	return "{" + strings.Join(parts, ", ") + ", reason: …}"
}

// flowValue is a value as it can stand in a YAML flow mapping: quoted when a character would
// end or change it there.
func flowValue(v string) string {
	if v == "" || strings.ContainsAny(v, ",:{}[]#&*!|>'\"%@`") || strings.TrimSpace(v) != v {
		return strconv.Quote(v)
	}
	return v
}

// approveHint ends a break's message: how to keep what was, or the one approval that accepts it.
func (b Break) approveHint(keep string) Break {
	b.Message += fmt.Sprintf("; %s, or approve it (`approve: [%s]` in mesh.yaml)", keep, b.ApprovalLine())
	return b
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
	out = append(out, credentialMoves(a)...)
	out = append(out, contracts(a)...)
	approvals := a.Head.Index.Catalogue.Mesh.Approvals
	for i := range out {
		b := &out[i]
		if j := slices.IndexFunc(approvals, b.Approves); j >= 0 {
			b.Approval = &approvals[j]
		}
	}
	slices.SortFunc(out, func(x, y Break) int {
		return cmp.Or(x.Pos.Compare(y.Pos), cmp.Compare(x.Rule, y.Rule), cmp.Compare(x.On, y.On), cmp.Compare(x.Message, y.Message))
	})
	return slices.CompactFunc(out, func(x, y Break) bool { return x.Pos == y.Pos && x.Rule == y.Rule && x.Message == y.Message })
}

// UnmatchedApprovals are the head's approvals that approve none of the breaks: each is a
// finding at the approval, saying what the change does instead when it breaks the same thing
// another way, and giving the approval's form when it was written without a before and after.
func UnmatchedApprovals(a Against, bs []Break) catalogue.Findings {
	var out catalogue.Findings
	for _, x := range a.Head.Index.Catalogue.Mesh.Approvals {
		if slices.ContainsFunc(bs, func(b Break) bool { return b.Approval != nil && b.Approval.Pos == x.Pos }) {
			continue
		}
		var near []string
		for _, b := range bs {
			if b.Rule == x.Rule.Value && b.On == x.On.Value && b.Approval == nil {
				near = append(near, "`"+b.ApprovalLine()+"`")
			}
		}
		switch {
		case len(near) > 0 && x.From.Value == "" && x.To.Value == "":
			out = append(out, ruleApprovalUnmatched.At(x.Pos,
				"this approval of %s on %s names no before and after, so it approves nothing: an approval names what it approves, and approves that alone; write %s instead",
				x.Rule.Value, catalogue.Excerpt(x.On.Value), strings.Join(near, " or ")))
		case len(near) > 0:
			out = append(out, ruleApprovalUnmatched.At(x.Pos,
				"this approval of %s on %s was given for %s, which is not what the change does: if the change is meant, approve what it does with %s",
				x.Rule.Value, catalogue.Excerpt(x.On.Value), fromTo(x), strings.Join(near, " or ")))
		default:
			out = append(out, ruleApprovalUnmatched.At(x.Pos,
				"this approval of %s on %s matches no break of the change: remove it, or it stays to approve the same break unseen the next time",
				x.Rule.Value, catalogue.Excerpt(x.On.Value)))
		}
	}
	return out
}

func fromTo(x catalogue.Approval) string {
	switch {
	case x.From.Value != "" && x.To.Value != "":
		return catalogue.Excerpt(x.From.Value) + " → " + catalogue.Excerpt(x.To.Value)
	case x.To.Value != "":
		return "→ " + catalogue.Excerpt(x.To.Value)
	}
	return catalogue.Excerpt(x.From.Value) + " →"
}

// ReportedSeverity is the severity the break is reported at: an approved break is info, so it
// stays visible without failing the check; an unapproved one has its rule's.
func (b Break) ReportedSeverity() catalogue.Severity {
	if b.Approval != nil {
		return catalogue.Info
	}
	return b.Severity
}

// BreakFindings are the breaks as lint findings, each at its reported severity, an approved
// one's message saying where it was approved and why, so the trace shows in every format.
func BreakFindings(bs []Break) catalogue.Findings {
	out := make(catalogue.Findings, 0, len(bs))
	for _, b := range bs {
		f := b.Finding
		f.Severity = b.ReportedSeverity()
		if b.Approval != nil {
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
				b := breakAt(ruleReplay, hc.Source, on,
					"consumer %s/%s takes over from %s because %s: it starts at the beginning of %s and delivers its history again, and %s's position is lost",
					hc.Stream, hc.Config.Durable, bc.Config.Durable, why, hc.Stream, bc.Config.Durable)
				b.To = hc.Stream + "/" + hc.Config.Durable
				out = append(out, b.approveHint("keep the name"))
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
	// By name: a mesh has a work queue per seat that accepts work, thousands in a large one.
	base := make(map[string]*jetstream.StreamConfig, len(a.Base.Plan.Streams))
	for i := range a.Base.Plan.Streams {
		base[a.Base.Plan.Streams[i].Config.Name] = &a.Base.Plan.Streams[i].Config
	}
	for _, hs := range a.Head.Plan.Streams {
		bc := base[hs.Config.Name]
		if bc == nil {
			continue
		}
		b, h := *bc, hs.Config
		name := h.Name
		type cut struct{ setting, from, to string }
		var cuts []cut
		if lowered(int64(b.MaxAge), int64(h.MaxAge)) {
			cuts = append(cuts, cut{"max-age", limit(b.MaxAge), limit(h.MaxAge)})
		}
		if lowered(b.MaxBytes, h.MaxBytes) {
			cuts = append(cuts, cut{"max-bytes", limit(b.MaxBytes), limit(h.MaxBytes)})
		}
		if lowered(b.MaxMsgsPerSubject, h.MaxMsgsPerSubject) {
			cuts = append(cuts, cut{"max-msgs-per-subject", limit(b.MaxMsgsPerSubject), limit(h.MaxMsgsPerSubject)})
		}
		if lowered(b.MaxMsgs, h.MaxMsgs) {
			cuts = append(cuts, cut{"max-msgs", limit(b.MaxMsgs), limit(h.MaxMsgs)})
		}
		if h.Replicas < b.Replicas {
			cuts = append(cuts, cut{"replicas", fmt.Sprint(b.Replicas), fmt.Sprint(h.Replicas)})
		}
		// One break per setting: an approval of max-age 720h → 24h approves that cut alone.
		for _, c := range cuts {
			x := breakAt(ruleRetention, hs.Source, name,
				"stream %s keeps less: %s %s → %s; what it holds beyond the new limit is dropped when apply changes it",
				name, c.setting, c.from, c.to)
			x.From, x.To = c.setting+" "+c.from, c.setting+" "+c.to
			out = append(out, x.approveHint("keep the limit"))
		}
		if r, ok := replaced[name]; ok {
			x := breakAt(ruleRetention, hs.Source, name,
				"stream %s must be replaced (%s cannot change in place): replacing deletes it with every message and consumer on it",
				name, r.fields)
			x.From, x.To = r.from, r.to
			out = append(out, x.approveHint("keep "+r.fields))
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

// limit is a stream limit as the catalogue writes it: 720h, not 720h0m0s.
func limit[T int64 | time.Duration](v T) string {
	if v <= 0 {
		return "unlimited"
	}
	if d, ok := any(v).(time.Duration); ok {
		s := d.String()
		if strings.HasSuffix(s, "m0s") {
			s = strings.TrimSuffix(s, "0s")
		}
		if strings.HasSuffix(s, "h0m") {
			s = strings.TrimSuffix(s, "0m")
		}
		return s
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
		if !uc.Widened() {
			continue
		}
		// In the catalogue's words, one entry per meaning: a consumer's four grants are one
		// "read its own consumer", and the subjects stay in the review beside it.
		var gains, said []string
		for _, m := range uc.Meanings() {
			if !m.Gained {
				continue
			}
			gains = append(gains, m.Means)
			if len(m.Widening) > 0 {
				said = append(said, m.Means+" ("+strings.Join(m.Widening, ", ")+")")
			} else {
				said = append(said, m.Means)
			}
		}
		pos := a.meshPos()
		if len(uc.Gained[0].Because) > 0 {
			pos = uc.Gained[0].Because[0].Source
		}
		what := "bus user " + uc.User + " may now"
		if uc.Added {
			what = "new bus user " + uc.User + " may"
		}
		b := breakAt(ruleWidening, pos, uc.User, "%s %s", what, list(said))
		slices.Sort(gains)
		b.To = strings.Join(gains, "; ")
		out = append(out, b.approveHint("if that is not meant, take the grant away"))
	}
	return out
}

// credentialMoves: each user whose recorded credential changes (re-minted, or one another user
// records), and each key of keys.yaml that changes, at the line of the head that records it.
func credentialMoves(a Against) []Break {
	var out []Break
	cat := a.Head.Index.Catalogue
	for _, uc := range a.Compared.Users {
		if uc.Credential == nil || uc.Removed {
			continue
		}
		pos := a.meshPos()
		if cat.Credentials != nil {
			if h, ok := cat.Credentials.Hashes[uc.User]; ok {
				pos = h.Pos
			}
		}
		b := breakAt(ruleCredential, pos, uc.User, "bus user %s %s", uc.User, uc.Credential.Means(uc.User))
		b.From, b.To = uc.Credential.Was, uc.Credential.Now
		if len(uc.Credential.Of) > 0 {
			b.To = "the credential of " + strings.Join(uc.Credential.Of, ", ")
			out = append(out, b.approveHint("mint it a credential of its own: `meshc mint "+uc.User+"`"))
			continue
		}
		out = append(out, b.approveHint("if nobody meant to rotate it, restore the base's line"))
	}
	for _, k := range compiler.CompareKeys(a.Base.Plan, a.Head.Plan) {
		b := breakAt(ruleCredential, keyPos(cat, k, a.meshPos()), k.What, "keys.yaml's %s changes (%s → %s): %s", k.What, k.Was, k.Now, k.Means)
		b.From, b.To = k.Was, k.Now
		out = append(out, b.approveHint("if nobody meant to change it, restore the base's key"))
	}
	return out
}

// keyPos is where keys.yaml records the key a KeyChange names.
func keyPos(c *catalogue.Catalogue, kc compiler.KeyChange, fallback catalogue.Pos) catalogue.Pos {
	k := c.Keys
	if k == nil {
		return fallback
	}
	var t catalogue.Text
	switch kc.What {
	case "operator":
		t = k.Operator
	case "signing key":
		t = k.SigningKey
	case "system account":
		t = k.SystemAccount
	case "probe key":
		t = k.ProbeKey
	default:
		t = k.Accounts[kc.Account]
	}
	if t.Pos.File == "" {
		return fallback
	}
	return t.Pos
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
		// Sets, not scans: a module may declare thousands.
		var headEmits, headTools map[string]bool
		if hm != nil {
			headEmits, headTools = valueSet(hm.Emits), valueSet(hm.Tools)
		}
		for _, e := range m.Emits {
			if hm == nil || !headEmits[e.Value] {
				on := name + "." + e.Value
				b := breakAt(ruleContract, at(m), on,
					"event %s is gone: whoever consumes it hears nothing, and what EVENTS stored of it is no longer consumed", on).approveHint("keep emitting it")
				related(&b, e.Pos, "the base emits it here")
				out = append(out, b)
			}
		}
		for _, t := range m.Tools {
			if hm == nil || !headTools[t.Value] {
				on := name + "." + t.Value
				b := breakAt(ruleContract, at(m), on,
					"tool %s is gone: every call to it is answered \"no responders\"", on).approveHint("keep serving it")
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
				hint = fmt.Sprintf(" (new here: %s)", some(added))
			}
			b := breakAt(ruleContract, a.meshPos(), name,
				"seat %s is gone%s: work queued in %s waits with nobody to take it, and manifests naming it no longer resolve",
				name, hint, compiler.SeatStream(name)).approveHint(fmt.Sprintf("if it was renamed, add `aliases: {%s: <new name>}` to mesh.yaml", name))
			related(&b, s.Name.Pos, "the base declares it here")
			out = append(out, b)
			continue
		}
		headAccepts, headEmits := valueSet(hs.Accepts), valueSet(hs.Emits)
		for _, k := range s.Accepts {
			if !headAccepts[k.Value] {
				on := name + "." + k.Value
				b := breakAt(ruleContract, hs.Name.Pos, on,
					"seat %s no longer accepts %s work: what is queued of it in %s is never taken, and whoever submits it is refused",
					hs.Name.Value, k.Value, compiler.SeatStream(hs.Name.Value)).approveHint("keep accepting it")
				related(&b, k.Pos, "the base accepts it here")
				out = append(out, b)
			}
		}
		for _, e := range s.Emits {
			if !headEmits[e.Value] {
				on := name + "." + e.Value
				b := breakAt(ruleContract, hs.Name.Pos, on,
					"seat %s no longer emits %s: whoever consumes it hears nothing",
					hs.Name.Value, e.Value).approveHint("keep it")
				related(&b, e.Pos, "the base emits it here")
				out = append(out, b)
			}
		}
	}
	return out
}

// discardSettings are the catalogue's names of the stream settings a change drops messages by
// lowering, by the JetStream API's field names the change set speaks of.
var discardSettings = map[string]string{
	"max_age": "max-age", "max_bytes": "max-bytes", "max_msgs_per_subject": "max-msgs-per-subject", "max_msgs": "max-msgs",
}

// ApproveDrops marks each drop of a change set that an approval in mesh.yaml accepts: a retention
// approval on the stream from the value the bus holds to the value the catalogue sets, as the
// retention rule names its cuts ("max-age 720h"). A saved plan carries the marks, and they are
// what lets `meshc apply FILE` make those drops, and only those, without --allow-discard.
func ApproveDrops(c *catalogue.Catalogue, cs *change.Changes) {
	if c == nil || c.Mesh == nil {
		return
	}
	for i := range cs.Items {
		ch := &cs.Items[i]
		if ch.Kind != change.KindStream {
			continue
		}
		for j := range ch.Fields {
			f := &ch.Fields[j]
			setting, ok := discardSettings[f.Name]
			if !f.Discards || !ok {
				continue
			}
			from, to := setting+" "+apiLimit(f.Old), setting+" "+apiLimit(f.New)
			for _, x := range c.Mesh.Approvals {
				if x.Rule.Value == ruleRetention.ID && x.On.Value == ch.Stream && x.From.Value == from && x.To.Value == to {
					f.Approved = x.Pos.String()
				}
			}
		}
	}
}

// apiLimit is a value the change set renders (the JetStream API's "720h0m0s", "-1") as the
// catalogue writes it ("720h", "unlimited").
func apiLimit(v string) string {
	if d, err := time.ParseDuration(v); err == nil {
		return limit(d)
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return limit(n)
	}
	return v
}

// valueSet is the values of a list, as a set.
func valueSet(ts []catalogue.Text) map[string]bool {
	out := make(map[string]bool, len(ts))
	for _, t := range ts {
		out[t.Value] = true
	}
	return out
}
