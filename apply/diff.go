package apply

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"meshc/compiler"
)

// Action is what apply does to one object, shown as the symbols a reviewer reads.
type Action int

const (
	NoOp Action = iota
	Create
	Update
	Replace
	Delete
)

func (a Action) String() string {
	switch a {
	case Create:
		return "+"
	case Update:
		return "~"
	case Replace:
		return "-/+"
	case Delete:
		return "-"
	}
	return " "
}

// Word is the action in words, for JSON and markdown.
func (a Action) Word() string {
	return [...]string{"unchanged", "create", "update", "replace", "delete"}[a]
}

// Kind is the sort of object a change is about.
type Kind string

const (
	KindStream   Kind = "stream"
	KindConsumer Kind = "consumer"
)

// Field is one setting that differs, by its JetStream API name.
type Field struct {
	Name string `json:"field"`
	Old  string `json:"old"`
	New  string `json:"new"`
	// Replaces: the server cannot change this in place, so the object is deleted and made again.
	Replaces bool `json:"replaces,omitempty"`
	// Added and Removed are, for a list (a consumer's filters, a stream's subjects), what the
	// change adds and takes away: a reviewer reads one new filter, not two long lists.
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

// Change is what happens to one stream or consumer.
type Change struct {
	Action Action
	Kind   Kind
	Stream string
	// Consumer is the consumer's name; "" for a stream.
	Consumer string
	Fields   []Field
	// Messages the stream holds (streams only): a delete or replace of one holding any needs
	// Options.PurgeNonEmpty.
	Messages uint64
	// Notes are what was kept on purpose, said so a difference between plan and bus is never
	// one nobody can find.
	Notes []string
	// Unmanaged names, for a stream being replaced, the consumers on it that meshc does not
	// manage: a replace would delete them, so it is refused whatever the flags.
	Unmanaged []string
	// ResumeRecorded: the bus holds a resume point for this consumer (an earlier replace
	// stopped between delete and create); apply removes it once the consumer exists again.
	ResumeRecorded bool
	// Unreadable: the server reported the object (or its stream's consumers) missing or offline,
	// so it was left alone; the bus may still differ from the plan there.
	Unreadable bool
	// StreamConfig or ConsumerConfig is what apply asserts (nil for a delete or no-op).
	StreamConfig   *jetstream.StreamConfig
	ConsumerConfig *jetstream.ConsumerConfig
}

// Name is the object's name as a reviewer reads it: STREAM or STREAM/consumer.
func (c Change) Name() string {
	if c.Kind == KindConsumer {
		return c.Stream + "/" + c.Consumer
	}
	return c.Stream
}

// Changes is the whole change set: every object of plan and bus, streams first, then consumers,
// each by name.
type Changes struct {
	Items []Change
	// Notes concern the change set as a whole (objects left alone because they are not in the
	// plan and pruning was not asked for).
	Notes []string
	// Unmanaged lists what the bus holds that meshc does not manage ("stream KV_leases",
	// "consumer EVENTS/audit"): shown, never changed, whatever the flags.
	Unmanaged []string
}

// Count returns how many changes carry the action.
func (cs Changes) Count(a Action) int {
	n := 0
	for _, c := range cs.Items {
		if c.Action == a {
			n++
		}
	}
	return n
}

// Empty reports whether applying would change nothing.
func (cs Changes) Empty() bool { return cs.Count(NoOp) == len(cs.Items) }

// Unreadable counts the objects left alone because the server could not report them: a bus
// with any may still differ from the plan, so "nothing to change" is not "matches".
func (cs Changes) Unreadable() int {
	n := 0
	for _, c := range cs.Items {
		if c.Unreadable {
			n++
		}
	}
	return n
}

// DiffOptions tune Diff.
type DiffOptions struct {
	// Prune lists objects meshc made (they carry the mesh's mark) that the plan no longer has as
	// deletes; without it they are left alone and counted in a note. Objects without the mark
	// are never deleted, with or without it.
	Prune bool
}

// Diff compares the live state with the plan: a pure function, so what a reviewer is shown is
// exactly what apply does. Both sides are normalised to the server's defaults and stripped of
// the server's own metadata first, so a bus holding exactly the plan shows nothing to change.
//
// Ownership: what the plan names is the mesh's, and gets the mesh's mark on its next update (an
// existing bus is adopted). What it does not name is pruned only when it carries the mark;
// everything else — KV and object-store buckets, other applications' streams, consumers another
// tool added to the mesh's streams — is listed as not managed and never changed.
func Diff(live *State, plan *compiler.Plan, opts DiffOptions) Changes {
	var cs Changes
	wantStreams := map[string]bool{}
	replaced := map[string]bool{}
	deleted := map[string]bool{}
	unread := map[string]bool{}
	var strayStreams, strayConsumers, unmanagedConsumers []string

	for _, ps := range plan.Streams {
		name := ps.Config.Name
		wantStreams[name] = true
		want := ps.Config
		want.Metadata = plan.Marked(want.Metadata)
		ls := live.stream(name)
		c := Change{Kind: KindStream, Stream: name, StreamConfig: &want}
		switch {
		case ls == nil:
			c.Action = Create
		case ls.Unavailable != "":
			c.Action, c.StreamConfig, c.Unreadable = NoOp, nil, true
			c.Notes = append(c.Notes, fmt.Sprintf("stream %s is %s: it exists, so it is not created again, and it cannot be compared, so it is not changed; apply again when its peers are back", name, ls.Unavailable))
		default:
			c.Messages = ls.Messages
			c.Fields = compareStreams(ls.Config, want)
			c.Action = actionFor(c.Fields)
			if c.Action == NoOp {
				c.StreamConfig = nil
			}
		}
		if ls != nil && ls.ConsumersUnread {
			unread[name] = true
		}
		if c.Action == Replace {
			replaced[name] = true
			lost := "it holds no messages"
			if c.Messages > 0 {
				lost = fmt.Sprintf("its %d messages are lost", c.Messages)
			}
			c.Notes = append(c.Notes, fmt.Sprintf("replacing stream %s deletes every consumer on it and the plan's are made again; %s", name, lost))
			if c.Unmanaged = foreignConsumers(ls, plan); len(c.Unmanaged) > 0 {
				c.Notes = append(c.Notes, fmt.Sprintf("stream %s carries consumers meshc does not manage (%s): the replace would delete them, so it is refused whatever the flags",
					name, strings.Join(c.Unmanaged, ", ")))
			}
		}
		cs.Items = append(cs.Items, c)
	}
	for _, ls := range live.Streams {
		if wantStreams[ls.Name] || ls.Name == StateStream {
			// The state bucket is apply's own (the lock, the resume points): never in a plan,
			// never pruned, not news to a reviewer.
			continue
		}
		switch {
		case ls.Unavailable != "":
			cs.Notes = append(cs.Notes, fmt.Sprintf("stream %s is not in the plan and is %s: left alone", ls.Name, ls.Unavailable))
		case !plan.Owns(ls.Config.Metadata):
			cs.Unmanaged = append(cs.Unmanaged, unmanagedStream(ls))
		case len(foreignConsumers(&ls, plan)) > 0:
			// Deleting a stream deletes every consumer on it, and some are not the mesh's.
			cs.Notes = append(cs.Notes, fmt.Sprintf("stream %s is not in the plan but carries consumers meshc does not manage (%s): left alone, since deleting it would delete them",
				ls.Name, strings.Join(foreignConsumers(&ls, plan), ", ")))
		case opts.Prune:
			deleted[ls.Name] = true
			cs.Items = append(cs.Items, Change{Action: Delete, Kind: KindStream, Stream: ls.Name, Messages: ls.Messages})
		default:
			strayStreams = append(strayStreams, ls.Name)
		}
	}

	wantConsumers := map[[2]string]bool{}
	for _, pc := range plan.Consumers {
		name := consumerName(pc.Config)
		wantConsumers[[2]string{pc.Stream, name}] = true
		want := pc.Config
		want.Metadata = plan.Marked(want.Metadata)
		c := Change{Kind: KindConsumer, Stream: pc.Stream, Consumer: name, ConsumerConfig: &want}
		lc := live.consumer(pc.Stream, name)
		switch {
		case unread[pc.Stream]:
			c.Action, c.ConsumerConfig, c.Unreadable = NoOp, nil, true
			c.Notes = append(c.Notes, fmt.Sprintf("the consumers of stream %s could not be read: consumer %s is neither made nor changed; apply again when the stream answers", pc.Stream, name))
		case replaced[pc.Stream]:
			c.Action = Create
		case lc == nil:
			c.Action = Create
			if r, ok := live.Resumes[[2]string{pc.Stream, name}]; ok {
				// An apply deleted it to replace it and stopped before making it again.
				r.applyTo(&want)
				c.Notes = append(c.Notes, fmt.Sprintf("consumer %s on %s resumes at %s, recorded on the bus before an earlier apply deleted it to replace it and stopped: nothing it acknowledged is delivered again",
					name, pc.Stream, r.describe()))
			}
		case lc.Unavailable != "":
			c.Action, c.ConsumerConfig, c.Unreadable = NoOp, nil, true
			c.Notes = append(c.Notes, fmt.Sprintf("consumer %s on %s is %s: not made again, not changed", name, pc.Stream, lc.Unavailable))
		default:
			c.Fields, c.Notes = compareConsumers(*lc, &want)
			c.Action = actionFor(c.Fields)
			if c.Action == Replace {
				resumeAfterAckFloor(*lc, &want, &c)
			}
			if c.Action == NoOp {
				c.ConsumerConfig = nil
			}
		}
		_, c.ResumeRecorded = live.Resumes[[2]string{pc.Stream, name}]
		cs.Items = append(cs.Items, c)
	}
	for _, ls := range live.Streams {
		if !wantStreams[ls.Name] && (!plan.Owns(ls.Config.Metadata) || ls.Name == StateStream) {
			// Its stream is listed as not managed, consumers and all.
			continue
		}
		for _, lc := range ls.Consumers {
			if wantConsumers[[2]string{ls.Name, lc.Name}] {
				continue
			}
			switch {
			case lc.Unavailable != "":
				cs.Notes = append(cs.Notes, fmt.Sprintf("consumer %s on %s is not in the plan and is %s: left alone", lc.Name, ls.Name, lc.Unavailable))
			case !plan.Owns(lc.Config.Metadata):
				unmanagedConsumers = append(unmanagedConsumers, "consumer "+ls.Name+"/"+lc.Name)
			case replaced[ls.Name] || deleted[ls.Name]:
				// Goes with its stream; said in the stream's note.
			case !wantStreams[ls.Name] && !opts.Prune:
				// Its stream is already counted as left alone.
			case opts.Prune:
				_, recorded := live.Resumes[[2]string{ls.Name, lc.Name}]
				cs.Items = append(cs.Items, Change{Action: Delete, Kind: KindConsumer, Stream: ls.Name, Consumer: lc.Name, ResumeRecorded: recorded})
			default:
				strayConsumers = append(strayConsumers, ls.Name+"/"+lc.Name)
			}
		}
	}
	if len(strayStreams)+len(strayConsumers) > 0 {
		cs.Notes = append(cs.Notes, fmt.Sprintf("not in the plan and left alone (apply with prune to delete them): %s",
			strings.Join(slices.Concat(strayStreams, strayConsumers), ", ")))
	}

	slices.SortStableFunc(cs.Items, func(a, b Change) int {
		return cmp.Or(
			cmp.Compare(kindOrder(a.Kind), kindOrder(b.Kind)),
			strings.Compare(a.Stream, b.Stream),
			strings.Compare(a.Consumer, b.Consumer))
	})
	slices.Sort(cs.Notes)
	// Streams, then consumers, each by name: the order of the change set.
	slices.Sort(cs.Unmanaged)
	slices.Sort(unmanagedConsumers)
	cs.Unmanaged = append(cs.Unmanaged, unmanagedConsumers...)
	return cs
}

// unmanagedStream names a stream meshc does not manage, saying what it is when its name says so.
func unmanagedStream(ls Stream) string {
	switch {
	case strings.HasPrefix(ls.Name, "KV_"):
		return "stream " + ls.Name + " (key-value bucket " + strings.TrimPrefix(ls.Name, "KV_") + ")"
	case strings.HasPrefix(ls.Name, "OBJ_"):
		return "stream " + ls.Name + " (object store " + strings.TrimPrefix(ls.Name, "OBJ_") + ")"
	}
	return "stream " + ls.Name
}

// foreignConsumers names the consumers on a stream that do not carry the mesh's mark and the
// plan does not name: deleting or replacing the stream would delete them.
func foreignConsumers(ls *Stream, plan *compiler.Plan) []string {
	var out []string
	for _, lc := range ls.Consumers {
		if !plan.Owns(lc.Config.Metadata) && !slices.ContainsFunc(plan.Consumers, func(pc compiler.Consumer) bool {
			return pc.Stream == ls.Name && consumerName(pc.Config) == lc.Name
		}) {
			out = append(out, ls.Name+"/"+lc.Name)
		}
	}
	return out
}

func kindOrder(k Kind) int {
	if k == KindStream {
		return 0
	}
	return 1
}

func (s *State) consumer(stream, name string) *Consumer {
	ls := s.stream(stream)
	if ls == nil {
		return nil
	}
	for i := range ls.Consumers {
		if ls.Consumers[i].Name == name {
			return &ls.Consumers[i]
		}
	}
	return nil
}

func consumerName(c jetstream.ConsumerConfig) string {
	if c.Durable != "" {
		return c.Durable
	}
	return c.Name
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

// The server's defaults, each checked against a real server by reading back what it filled in
// (TestServerFillsTheDefaultsDiffAssumes).
const (
	defaultDuplicates    = 2 * time.Minute
	defaultAckWait       = 30 * time.Second
	defaultMaxAckPending = 1000
	defaultMaxWaiting    = 512
)

// normalStream fills what the server fills for a zero value, and strips what it injects, so a
// config compares equal to the one the server made from it.
func normalStream(c jetstream.StreamConfig) jetstream.StreamConfig {
	for _, p := range []*int64{&c.MaxMsgs, &c.MaxBytes, &c.MaxMsgsPerSubject} {
		if *p == 0 {
			*p = -1
		}
	}
	if c.MaxConsumers == 0 {
		c.MaxConsumers = -1
	}
	if c.MaxMsgSize == 0 {
		c.MaxMsgSize = -1
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.Duplicates == 0 {
		// The window never outlasts the messages it guards.
		c.Duplicates = defaultDuplicates
		if c.MaxAge > 0 && c.MaxAge < c.Duplicates {
			c.Duplicates = c.MaxAge
		}
	}
	if len(c.Subjects) == 0 && c.Mirror == nil && len(c.Sources) == 0 {
		c.Subjects = []string{c.Name}
	}
	c.Subjects = sortedCopy(c.Subjects)
	c.Metadata = userMetadata(c.Metadata)
	return c
}

func normalConsumer(c jetstream.ConsumerConfig) jetstream.ConsumerConfig {
	if c.Name == "" {
		c.Name = c.Durable
	}
	if c.AckWait == 0 {
		c.AckWait = defaultAckWait
	}
	if c.MaxDeliver == 0 {
		c.MaxDeliver = -1
	}
	if c.MaxAckPending == 0 && c.AckPolicy != jetstream.AckNonePolicy {
		c.MaxAckPending = defaultMaxAckPending
	}
	if c.MaxWaiting == 0 && c.DeliverSubject == "" {
		c.MaxWaiting = defaultMaxWaiting
	}
	// One filter is one filter, however it is written.
	if c.FilterSubject != "" && len(c.FilterSubjects) == 0 {
		c.FilterSubjects = []string{c.FilterSubject}
	}
	c.FilterSubject = ""
	c.FilterSubjects = sortedCopy(c.FilterSubjects)
	c.Metadata = userMetadata(c.Metadata)
	return c
}

func sortedCopy(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// userMetadata drops the `_nats.*` keys the server injects (its version and API level): they
// are the server's, not the plan's, and would otherwise differ on every object.
func userMetadata(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if !strings.HasPrefix(k, "_nats.") {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func compareStreams(have, want jetstream.StreamConfig) []Field {
	h, w := normalStream(have), normalStream(want)
	fields := compareStructs(reflect.ValueOf(h), reflect.ValueOf(w), map[string]bool{"name": true})
	for i := range fields {
		f := &fields[i]
		switch f.Name {
		case "storage", "allow_msg_counter", "persist_mode", "mirror":
			f.Replaces = true
		case "retention":
			f.Replaces = h.Retention == jetstream.WorkQueuePolicy || w.Retention == jetstream.WorkQueuePolicy
		case "sealed":
			f.Replaces = h.Sealed
		case "deny_delete":
			f.Replaces = h.DenyDelete
		case "deny_purge":
			f.Replaces = h.DenyPurge
		case "allow_msg_ttl":
			f.Replaces = h.AllowMsgTTL
		case "allow_msg_schedules":
			f.Replaces = h.AllowMsgSchedules
		}
	}
	return fields
}

// compareConsumers compares an existing consumer with the plan's, after carrying across what is
// the consumer's history rather than its configuration. It adjusts want to what apply must send.
func compareConsumers(have Consumer, want *jetstream.ConsumerConfig) ([]Field, []string) {
	var notes []string
	// Where an existing consumer starts is its history: the server refuses to change it, and
	// reasserting it would replay or skip what it already delivered (seed 003).
	want.DeliverPolicy = have.Config.DeliverPolicy
	want.OptStartSeq = have.Config.OptStartSeq
	want.OptStartTime = have.Config.OptStartTime

	h, w := normalConsumer(have.Config), normalConsumer(*want)
	if h.DeliverSubject != "" && w.DeliverSubject != "" && h.DeliverSubject != w.DeliverSubject && have.PushBound {
		// The server will not move a delivery subject while a subscriber is bound, and answers
		// "consumer name already in use". Bound is a machine listening; moving it would need
		// its grant for the new subject first, which travels in the user list applied later.
		// So it keeps the subject that works, and that is said (seed 003).
		notes = append(notes, fmt.Sprintf("consumer %s on %s keeps its delivery subject %q rather than %q because a subscriber is bound to it: it keeps delivering; the subject moves on an apply made while nothing is bound",
			have.Name, have.Stream, h.DeliverSubject, w.DeliverSubject))
		want.DeliverSubject = have.Config.DeliverSubject
		w.DeliverSubject = h.DeliverSubject
	}
	fields := compareStructs(reflect.ValueOf(h), reflect.ValueOf(w), map[string]bool{"name": true, "durable_name": true})
	for i := range fields {
		f := &fields[i]
		switch f.Name {
		case "ack_policy", "replay_policy", "idle_heartbeat", "flow_control", "mem_storage", "max_waiting",
			"deliver_policy", "opt_start_seq", "opt_start_time":
			f.Replaces = true
		case "deliver_subject":
			// Pull to push or back cannot be done in place; a push consumer's subject can move.
			f.Replaces = h.DeliverSubject == "" || w.DeliverSubject == ""
		}
	}
	return fields, notes
}

// resumeAfterAckFloor makes a replacement consumer start after the last message the old one
// acknowledged, so replacing it neither replays its history nor skips what is pending.
func resumeAfterAckFloor(have Consumer, want *jetstream.ConsumerConfig, c *Change) {
	if have.AckFloor == 0 {
		return
	}
	want.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
	want.OptStartSeq = have.AckFloor + 1
	want.OptStartTime = nil
	c.Notes = append(c.Notes, fmt.Sprintf("the new consumer %s resumes at stream sequence %d, after the last message the old one acknowledged; apply records this on the bus before the delete, so a rerun after a stop between delete and create resumes there too", have.Name, want.OptStartSeq))
}

// compareStructs lists every field, by its JSON name, whose values differ. Every field is
// compared, not a chosen few: a setting the plan drops is a change too, and a default the
// normalisation missed shows up as a phantom change in the round-trip test rather than as a
// drift nobody sees.
func compareStructs(have, want reflect.Value, skip map[string]bool) []Field {
	var out []Field
	t := have.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "" || name == "-" || skip[name] {
			continue
		}
		h, w := have.Field(i), want.Field(i)
		if equalValues(h, w) {
			continue
		}
		f := Field{Name: name, Old: render(h), New: render(w)}
		if hs, ok := h.Interface().([]string); ok {
			ws := w.Interface().([]string)
			f.Added, f.Removed = listDelta(hs, ws)
		}
		out = append(out, f)
	}
	return out
}

// listDelta returns what want has that have lacks, and the reverse, each sorted.
func listDelta(have, want []string) (added, removed []string) {
	for _, x := range want {
		if !slices.Contains(have, x) {
			added = append(added, x)
		}
	}
	for _, x := range have {
		if !slices.Contains(want, x) {
			removed = append(removed, x)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	return added, removed
}

func equalValues(a, b reflect.Value) bool {
	if ta, ok := a.Interface().(*time.Time); ok {
		tb := b.Interface().(*time.Time)
		if ta == nil || tb == nil {
			return ta == tb
		}
		return ta.Equal(*tb)
	}
	if a.Kind() == reflect.Slice || a.Kind() == reflect.Map {
		if a.Len() == 0 && b.Len() == 0 {
			return true
		}
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

// render shows a value the way a reviewer reads it: durations as durations, policies by name.
func render(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case string:
		if x == "" {
			return `""`
		}
		return x
	case time.Duration:
		return x.String()
	case *time.Time:
		if x == nil {
			return "none"
		}
		return x.UTC().Format(time.RFC3339Nano)
	case json.Marshaler:
		// The policies, in the JetStream API's own words ("workqueue", "explicit").
		if b, err := x.MarshalJSON(); err == nil {
			var s string
			if json.Unmarshal(b, &s) == nil {
				return s
			}
			return string(b)
		}
	case []string:
		return "[" + strings.Join(x, ", ") + "]"
	case map[string]string:
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(x)) {
			kv = append(kv, k+"="+x[k])
		}
		return "{" + strings.Join(kv, ", ") + "}"
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "none"
		}
		return render(v.Elem())
	case reflect.Struct, reflect.Slice:
		return fmt.Sprintf("%+v", v.Interface())
	}
	return fmt.Sprint(v.Interface())
}
