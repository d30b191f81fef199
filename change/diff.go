package change

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/compiler"
)

// DiffOptions tune Diff.
type DiffOptions struct {
	// Prune lists objects meshc made (they carry the mesh's mark) that the plan no longer has as
	// deletes; without it they are left alone and counted in a note. Objects without the mark
	// are never deleted, with or without it.
	Prune bool
	// Principals are the users and accounts the catalogue derives (WantedFile's or
	// WantedClaims' principals): compared with the live state's when both are given.
	Principals *Principals
}

// Diff compares the live state with the plan: a pure function, so what a reviewer is shown is
// exactly what apply does. Both sides are normalised to the server's defaults and stripped of
// the server's own metadata first, so a bus holding exactly the plan shows nothing to change.
//
// Ownership (compiler.Ownership): what the plan names and carries this catalogue's mark is the
// mesh's. One the plan names that carries no mark is adopted only when asked (Change.Adopts,
// apply --adopt), and one carrying another mesh's or another catalogue's mark is never changed
// (Change.Foreign). What the plan does not name is pruned only when it carries this catalogue's
// mark; everything else — KV and object-store buckets, other applications' streams, consumers
// another tool added to the mesh's streams — is listed as not managed and never changed.
func Diff(live *State, plan *compiler.Plan, opts DiffOptions) Changes {
	d := &diffing{live: live, plan: plan, opts: opts,
		wantStreams: map[string]bool{}, foreign: map[string]string{}, replaced: map[string]bool{}, deleted: map[string]bool{},
		unread: map[string]bool{}, wantConsumers: map[[2]string]bool{},
		inPlan: make(map[[2]string]bool, len(plan.Consumers)), resumes: map[string]map[string]ResumePoint{}, needed: map[string]map[string]ResumePoint{}}
	for _, pc := range plan.Consumers {
		d.inPlan[[2]string{pc.Stream, compiler.ConsumerName(pc.Config)}] = true
	}
	d.plannedStreams()
	d.strayStreams()
	d.plannedConsumers()
	d.strayConsumers()
	d.staleResumes()
	cs := d.changes()
	cs.Principals, cs.PrincipalsFrom, cs.PrincipalsUnknown, cs.Undelivered = DiffState(live, opts.Principals, plan.Account)
	return cs
}

// DiffState is the users-and-accounts half of Diff: what differs, what the bus's side was read
// from, and why nothing is known when nothing is.
func DiffState(live *State, want *Principals, mesh string) (changes []Change, from, unknown, undelivered string) {
	if live.Principals == nil || want == nil {
		return nil, "", "", ""
	}
	held := live.Principals
	if held.Known == KnownNothing {
		return nil, "", cmp.Or(held.From, "nothing the bus records says which users and permissions it runs"), held.Undelivered
	}
	return DiffPrincipals(held, want, mesh), held.From, "", held.Undelivered
}

// diffing is one Diff, phase by phase: the plan's streams, the bus's streams the plan lacks, the
// plan's consumers, the bus's consumers the plan lacks. Each later phase reads what the earlier
// ones decided (a replaced or deleted stream takes its consumers with it).
type diffing struct {
	live *State
	plan *compiler.Plan
	opts DiffOptions
	cs   Changes

	wantStreams   map[string]bool
	foreign       map[string]string // the plan's streams another mesh or catalogue marked: whose
	replaced      map[string]bool
	deleted       map[string]bool
	unread        map[string]bool
	wantConsumers map[[2]string]bool
	// liveConsumers indexes each live stream's consumers by name, built on first use: looking
	// each planned consumer up by scanning its stream's list was quadratic in a stream's
	// consumers (EVENTS holds one per consuming module instance).
	liveConsumers map[*Stream]map[string]*Consumer
	// inPlan is every consumer of the plan, by stream and name, known from the start (a stream's
	// phase asks about consumers the consumers' phase has not reached). resumes and needed are
	// each stream's resume points, decoded once, and those a create will use: decoding every
	// point of a stream once per missing consumer, each looked up in the whole plan, took 14.7 s
	// for one diff of 14,000 consumers with 200 points (benchmarks, BenchmarkDiffWithResumePoints).
	inPlan  map[[2]string]bool
	resumes map[string]map[string]ResumePoint
	needed  map[string]map[string]ResumePoint

	strays             []string // not in the plan and left alone (no prune)
	strayConsumerNames []string
	unmanagedConsumers []string
}

// plannedStreams compares each stream of the plan with the bus's.
func (d *diffing) plannedStreams() {
	live, plan := d.live, d.plan
	for _, ps := range plan.Streams {
		name := ps.Config.Name
		d.wantStreams[name] = true
		want := ps.Config
		want.Metadata = plan.Marked(want.Metadata)
		ls := live.Stream(name)
		c := Change{Kind: KindStream, Stream: name, StreamConfig: &want}
		switch {
		case ls == nil:
			c.Action = Create
		case ls.Unavailable != "":
			c.Action, c.StreamConfig, c.Unreadable = NoOp, nil, true
			c.Notes = append(c.Notes, fmt.Sprintf("stream %s is %s: it exists, so it is not created again, and it cannot be compared, so it is not changed; apply again when its peers are back", name, ls.Unavailable))
		default:
			c.Messages = ls.Messages
			d.owner(&c, ls.Config.Metadata)
			if c.Foreign != "" {
				d.foreign[name] = c.Foreign
			}
			c.Fields = compareStreams(ls.Config, want)
			c.Action = actionFor(c.Fields)
			switch c.Action {
			case NoOp:
				c.StreamConfig = nil
			case Update:
				// Resume points still to be used ride along an update of their stream.
				want.Metadata = withResumes(want.Metadata, d.neededResumes(ls))
			}
		}
		if ls != nil && ls.ConsumersUnread {
			d.unread[name] = true
		}
		if ls != nil && ls.Unavailable == "" {
			if _, parked := ParkedSubjects(ls.Config); parked {
				c.Notes = append(c.Notes, parkedNote(name))
			}
		}
		if c.Action == Replace {
			d.replaced[name] = true
			lost := "it holds no messages"
			if c.Messages > 0 {
				lost = fmt.Sprintf("its %d messages are lost", c.Messages)
			}
			c.Notes = append(c.Notes, fmt.Sprintf("replacing stream %s deletes every consumer on it and the plan's are made again; %s", name, lost))
			if c.Unmanaged = d.foreignConsumers(ls); len(c.Unmanaged) > 0 {
				c.Notes = append(c.Notes, fmt.Sprintf("stream %s carries consumers meshc does not manage (%s): the replace would delete them, so it is refused whatever the flags",
					name, strings.Join(c.Unmanaged, ", ")))
			}
		}
		d.cs.Items = append(d.cs.Items, c)
	}
}

// strayStreams decides about each stream of the bus the plan does not have: pruned when marked
// and asked for, else left alone and said.
func (d *diffing) strayStreams() {
	for _, ls := range d.live.Streams {
		if d.wantStreams[ls.Name] || ls.Name == compiler.ApplyBucketStream {
			// The state bucket is apply's own (the lock, the resume points): never in a plan,
			// never pruned, not news to a reviewer.
			continue
		}
		switch foreign := d.foreignConsumers(&ls); {
		case ls.Unavailable != "":
			d.cs.Notes = append(d.cs.Notes, fmt.Sprintf("stream %s is not in the plan and is %s: left alone", ls.Name, ls.Unavailable))
		case !d.plan.Owns(ls.Config.Metadata):
			d.cs.Unmanaged = append(d.cs.Unmanaged, unmanagedStream(ls, d.plan))
		case len(foreign) > 0:
			// Deleting a stream deletes every consumer on it, and some are not the mesh's.
			d.cs.Notes = append(d.cs.Notes, fmt.Sprintf("stream %s is not in the plan but carries consumers meshc does not manage (%s): left alone, since deleting it would delete them",
				ls.Name, strings.Join(foreign, ", ")))
		case d.opts.Prune:
			d.deleted[ls.Name] = true
			d.cs.Items = append(d.cs.Items, Change{Action: Delete, Kind: KindStream, Stream: ls.Name, Messages: ls.Messages})
		default:
			if _, parked := ParkedSubjects(ls.Config); parked {
				// Left alone, it must at least take messages again.
				want := Unparked(ls.Config)
				d.cs.Items = append(d.cs.Items, Change{Action: Update, Kind: KindStream, Stream: ls.Name, Messages: ls.Messages,
					StreamConfig: &want, Fields: compareStreams(ls.Config, want), Notes: []string{parkedNote(ls.Name)}})
			}
			d.strays = append(d.strays, ls.Name)
		}
	}
}

// plannedConsumers compares each consumer of the plan with the bus's, carrying across where an
// existing one starts and resuming one an earlier apply deleted to replace.
func (d *diffing) plannedConsumers() {
	live, plan := d.live, d.plan
	for _, pc := range plan.Consumers {
		name := compiler.ConsumerName(pc.Config)
		d.wantConsumers[[2]string{pc.Stream, name}] = true
		want := pc.Config
		want.Metadata = plan.Marked(want.Metadata)
		c := Change{Kind: KindConsumer, Stream: pc.Stream, Consumer: name, ConsumerConfig: &want}
		lc := d.liveConsumer(pc.Stream, name)
		if whose, ok := d.foreign[pc.Stream]; ok {
			c.Foreign = whose
			c.Notes = append(c.Notes, fmt.Sprintf("its stream %s carries the mark of %s: neither it nor its consumers are changed", pc.Stream, whose))
		}
		switch {
		case d.unread[pc.Stream]:
			c.Action, c.ConsumerConfig, c.Unreadable = NoOp, nil, true
			c.Notes = append(c.Notes, fmt.Sprintf("the consumers of stream %s could not be read: consumer %s is neither made nor changed; apply again when the stream answers", pc.Stream, name))
		case d.replaced[pc.Stream]:
			c.Action = Create
		case lc == nil:
			c.Action = Create
			if r, ok := d.neededResumes(live.Stream(pc.Stream))[name]; ok {
				// An apply deleted it to replace it and stopped before making it again.
				r.applyTo(&want)
				c.ResumeRecorded = true
				c.Notes = append(c.Notes, fmt.Sprintf("consumer %s on %s resumes at %s, recorded on its stream before an earlier apply deleted it to replace it and stopped: nothing it acknowledged is delivered again",
					name, pc.Stream, r.describe()))
			} else if note := deliversWhatIsHeld(live.Stream(pc.Stream), want); note != "" {
				c.Notes = append(c.Notes, note)
			}
		case lc.Unavailable != "":
			c.Action, c.ConsumerConfig, c.Unreadable = NoOp, nil, true
			c.Notes = append(c.Notes, fmt.Sprintf("consumer %s on %s is %s: not made again, not changed", name, pc.Stream, lc.Unavailable))
		default:
			var notes []string
			c.Fields, notes = compareConsumers(*lc, &want)
			c.Notes = append(c.Notes, notes...)
			if c.Foreign == "" {
				d.owner(&c, lc.Config.Metadata)
			}
			c.Action = actionFor(c.Fields)
			if c.Action == Replace {
				resumeAfterAckFloor(*lc, &want, &c)
			}
			if c.Action == NoOp {
				c.ConsumerConfig = nil
			}
		}
		d.cs.Items = append(d.cs.Items, c)
	}
}

// liveConsumer is live.Consumer(stream, name), from an index built once per stream: the first
// consumer of that name, or nil.
func (d *diffing) liveConsumer(stream, name string) *Consumer {
	ls := d.live.Stream(stream)
	if ls == nil {
		return nil
	}
	byName, ok := d.liveConsumers[ls]
	if !ok {
		byName = make(map[string]*Consumer, len(ls.Consumers))
		for i := range ls.Consumers {
			if _, dup := byName[ls.Consumers[i].Name]; !dup {
				byName[ls.Consumers[i].Name] = &ls.Consumers[i]
			}
		}
		if d.liveConsumers == nil {
			d.liveConsumers = map[*Stream]map[string]*Consumer{}
		}
		d.liveConsumers[ls] = byName
	}
	return byName[name]
}

// strayConsumers decides about each consumer of the bus the plan does not have, on the streams
// the mesh manages.
func (d *diffing) strayConsumers() {
	for _, ls := range d.live.Streams {
		if !d.wantStreams[ls.Name] && (!d.plan.Owns(ls.Config.Metadata) || ls.Name == compiler.ApplyBucketStream) {
			// Its stream is listed as not managed, consumers and all.
			continue
		}
		for _, lc := range ls.Consumers {
			if d.wantConsumers[[2]string{ls.Name, lc.Name}] {
				continue
			}
			switch {
			case lc.Unavailable != "":
				d.cs.Notes = append(d.cs.Notes, fmt.Sprintf("consumer %s on %s is not in the plan and is %s: left alone", lc.Name, ls.Name, lc.Unavailable))
			case !d.plan.Owns(lc.Config.Metadata):
				d.unmanagedConsumers = append(d.unmanagedConsumers, "consumer "+ls.Name+"/"+lc.Name+markedBy(lc.Config.Metadata, d.plan))
			case d.replaced[ls.Name] || d.deleted[ls.Name]:
				// Goes with its stream; said in the stream's note.
			case !d.wantStreams[ls.Name] && !d.opts.Prune:
				// Its stream is already counted as left alone.
			case d.opts.Prune:
				d.cs.Items = append(d.cs.Items, Change{Action: Delete, Kind: KindConsumer, Stream: ls.Name, Consumer: lc.Name,
					Notes: []string{positionLost(ls.Name, lc)}})
			default:
				d.strayConsumerNames = append(d.strayConsumerNames, ls.Name+"/"+lc.Name)
			}
		}
	}
}

// deliversWhatIsHeld says, of a consumer made on a stream that already holds messages and
// delivering from its start, that it delivers them all: the same name pruned in one pull request
// and declared again in another looks like a new consumer in each review, yet its module
// receives again everything it once acknowledged (the soak's "redeliveries" were this). "" when
// there is nothing to say.
func deliversWhatIsHeld(ls *Stream, want jetstream.ConsumerConfig) string {
	if ls == nil || ls.Messages == 0 || want.DeliverPolicy != jetstream.DeliverAllPolicy {
		return ""
	}
	return fmt.Sprintf("consumer %s is new on %s, which holds %d messages: it delivers every one its filters match (deliver policy all), including any an earlier consumer of that name acknowledged",
		compiler.ConsumerName(want), ls.Name, ls.Messages)
}

// positionLost says what pruning a consumer loses: where its module had read to.
func positionLost(stream string, lc Consumer) string {
	return fmt.Sprintf("consumer %s on %s is deleted with its position (acknowledged up to stream sequence %d): made again later, it starts over from its deliver policy, and delivers again what %s still holds",
		lc.Name, stream, lc.AckFloor, stream)
}

// parkedNote says a stream is parked, for a plan that finds one.
func parkedNote(stream string) string {
	return fmt.Sprintf("stream %s is parked (its subjects moved to %s by an apply that stopped before deleting it, so it takes no message): apply gives them back unless it deletes the stream", stream, ParkedSubject(stream))
}

// neededResumes are the resume points a live stream of the plan carries that a create will use:
// their consumer is in the plan and missing from the bus. None on a stream that is not the
// plan's, is replaced (the new stream starts empty), or whose consumers could not be read.
// Worked out once per stream: what it reads (the plan's streams, replaced or not) is decided
// before anything asks.
func (d *diffing) neededResumes(ls *Stream) map[string]ResumePoint {
	if ls == nil || !d.wantStreams[ls.Name] || d.replaced[ls.Name] || ls.ConsumersUnread || ls.Unavailable != "" {
		return nil
	}
	if out, ok := d.needed[ls.Name]; ok {
		return out
	}
	out := map[string]ResumePoint{}
	for consumer, r := range d.resumesOf(ls) {
		if r.Recorded.IsZero() {
			continue // not a point apply wrote: stale
		}
		if d.planned(ls.Name, consumer) && d.liveConsumer(ls.Name, consumer) == nil {
			out[consumer] = r
		}
	}
	d.needed[ls.Name] = out
	return out
}

// resumesOf is ls.Resumes(), decoded once per stream.
func (d *diffing) resumesOf(ls *Stream) map[string]ResumePoint {
	r, ok := d.resumes[ls.Name]
	if !ok {
		r = ls.Resumes()
		d.resumes[ls.Name] = r
	}
	return r
}

// planned says whether the plan has the consumer.
func (d *diffing) planned(stream, consumer string) bool { return d.inPlan[[2]string{stream, consumer}] }

// staleResumes lists the resume points of the plan's streams that nothing will use: the
// consumer exists (an apply stopped between making it again and removing its point), or the
// plan no longer has it (removed or renamed). A replaced stream's go with it.
func (d *diffing) staleResumes() {
	for i := range d.live.Streams {
		ls := &d.live.Streams[i]
		if !d.wantStreams[ls.Name] || d.replaced[ls.Name] || ls.ConsumersUnread || ls.Unavailable != "" {
			continue
		}
		needed := d.neededResumes(ls)
		for consumer := range d.resumesOf(ls) {
			if _, ok := needed[consumer]; ok {
				continue
			}
			why := "the plan no longer has the consumer"
			switch {
			case d.liveConsumer(ls.Name, consumer) != nil:
				why = "the consumer exists: an apply made it again and stopped before removing the point"
			case d.planned(ls.Name, consumer):
				why = "meshc did not write it"
			}
			d.cs.Stale = append(d.cs.Stale, StaleResume{Stream: ls.Name, Consumer: consumer, Why: why})
		}
	}
	sortStale(d.cs.Stale)
}

// withResumes returns metadata carrying the resume points as well (md is never changed).
func withResumes(md map[string]string, points map[string]ResumePoint) map[string]string {
	if len(points) == 0 {
		return md
	}
	out := make(map[string]string, len(md)+len(points))
	for k, v := range md {
		out[k] = v
	}
	for _, r := range points {
		out[r.Key()] = r.Value()
	}
	return out
}

// changes puts the change set in its order: streams, then consumers, each by name; the notes
// sorted; what is not managed, streams then consumers.
func (d *diffing) changes() Changes {
	cs := d.cs
	if len(d.strays)+len(d.strayConsumerNames) > 0 {
		cs.Notes = append(cs.Notes, fmt.Sprintf("not in the plan and left alone (apply with prune to delete them): %s",
			strings.Join(slices.Concat(d.strays, d.strayConsumerNames), ", ")))
	}
	slices.SortStableFunc(cs.Items, func(a, b Change) int {
		return cmp.Or(
			cmp.Compare(kindOrder(a.Kind), kindOrder(b.Kind)),
			strings.Compare(a.Stream, b.Stream),
			strings.Compare(a.Consumer, b.Consumer))
	})
	slices.Sort(cs.Notes)
	slices.Sort(cs.Unmanaged)
	slices.Sort(d.unmanagedConsumers)
	cs.Unmanaged = append(cs.Unmanaged, d.unmanagedConsumers...)
	return cs
}

// unmanagedStream names a stream meshc does not manage, saying what it is when its name says so,
// and whose mark it carries when it carries another's.
func unmanagedStream(ls Stream, plan *compiler.Plan) string {
	switch {
	case strings.HasPrefix(ls.Name, "KV_"):
		return "stream " + ls.Name + " (key-value bucket " + strings.TrimPrefix(ls.Name, "KV_") + ")"
	case strings.HasPrefix(ls.Name, "OBJ_"):
		return "stream " + ls.Name + " (object store " + strings.TrimPrefix(ls.Name, "OBJ_") + ")"
	}
	return "stream " + ls.Name + markedBy(ls.Config.Metadata, plan)
}

// markedBy says " (marked by …)" for an object another mesh or catalogue marked, else "".
func markedBy(md map[string]string, plan *compiler.Plan) string {
	switch plan.Ownership(md) {
	case compiler.OtherMesh, compiler.OtherCatalogue:
		return " (marked by " + compiler.Whose(md) + ")"
	}
	return ""
}

// owner notes what an existing object's mark makes of a change to it: an adoption for an
// unmarked one, a refusal for another's, an upgrade for a mark that names the mesh alone.
func (d *diffing) owner(c *Change, md map[string]string) {
	noun := string(c.Kind) + " " + c.Name()
	switch d.plan.Ownership(md) {
	case compiler.Unmarked:
		c.Adopts = true
		c.Notes = append(c.Notes, fmt.Sprintf("%s exists without meshc's mark (another application's, made by hand, or by a meshc from before marks): apply makes it the mesh's, with the plan's settings, only with --adopt", noun))
	case compiler.OtherMesh, compiler.OtherCatalogue:
		c.Foreign = compiler.Whose(md)
		c.Notes = append(c.Notes, fmt.Sprintf("%s carries the mark of %s: it is not this catalogue's, and apply never changes it, whatever the flags", noun, c.Foreign))
	case compiler.Ours:
		if _, hasID := md[compiler.CatalogueKey]; !hasID && d.plan.Catalogue != "" {
			c.Notes = append(c.Notes, fmt.Sprintf("%s is marked with the mesh's name alone (from before catalogues had an id): its mark gains this catalogue's id", noun))
		}
	}
}

// foreignConsumers names the consumers on a stream that do not carry the mesh's mark and the
// plan does not name: deleting or replacing the stream would delete them.
func (d *diffing) foreignConsumers(ls *Stream) []string {
	var out []string
	for _, lc := range ls.Consumers {
		if !d.plan.Owns(lc.Config.Metadata) && !d.planned(ls.Name, lc.Name) {
			out = append(out, ls.Name+"/"+lc.Name)
		}
	}
	return out
}

func kindOrder(k Kind) int {
	return slices.Index([]Kind{KindStream, KindConsumer, KindAccountsFile, KindAccount, KindUser}, k)
}

func actionFor(fields []Field) Action {
	if len(fields) == 0 {
		return NoOp
	}
	for _, f := range fields {
		if f.Replaces {
			return Replace
		}
	}
	return Update
}
