package change

import (
	"encoding/json"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
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
	// Discards: the server changes this in place by dropping messages the stream holds
	// (replace.go); DiscardsWhen says which, and Drops how many, where the bus could say.
	Discards     bool   `json:"discards,omitempty"`
	DiscardsWhen string `json:"discards_when,omitempty"`
	Drops        string `json:"drops,omitempty"`
	// Approved is where mesh.yaml's approve: accepts this drop (a retention break from this
	// value to that one), "" when nothing does: a saved plan carrying it is what lets `meshc apply
	// FILE` make the drop without --allow-discard.
	Approved string `json:"approved,omitempty"`
	// Added and Removed are, for a list (a consumer's filters, a stream's subjects), what the
	// change adds and takes away: a reviewer reads one new filter, not two long lists.
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
	// OldList and NewList are Old and New as the lists they are, for a list field: JSON
	// writes them as arrays, so a script reads a filter list as a list, not as "[a, b]".
	OldList []string `json:"-"`
	NewList []string `json:"-"`
}

// MarshalJSON writes a list field's old and new values as arrays, every other field's as text.
func (f Field) MarshalJSON() ([]byte, error) {
	type plain Field
	if f.OldList == nil && f.NewList == nil {
		return json.Marshal(plain(f))
	}
	return json.Marshal(struct {
		plain
		Old []string `json:"old"`
		New []string `json:"new"`
	}{plain(f), nonNil(f.OldList), nonNil(f.NewList)})
}

// UnmarshalJSON reads what MarshalJSON writes: old and new as text, or as arrays for a list.
func (f *Field) UnmarshalJSON(data []byte) error {
	type plain Field
	var raw struct {
		plain
		Old json.RawMessage `json:"old"`
		New json.RawMessage `json:"new"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*f = Field(raw.plain)
	for _, v := range []struct {
		raw  json.RawMessage
		text *string
		list *[]string
	}{{raw.Old, &f.Old, &f.OldList}, {raw.New, &f.New, &f.NewList}} {
		if len(v.raw) > 0 && v.raw[0] == '[' {
			if err := json.Unmarshal(v.raw, v.list); err != nil {
				return err
			}
			*v.text = "[" + strings.Join(*v.list, ", ") + "]"
		} else if len(v.raw) > 0 {
			if err := json.Unmarshal(v.raw, v.text); err != nil {
				return err
			}
		}
	}
	return nil
}

// Change is what happens to one stream, consumer, user, account or accounts file.
type Change struct {
	Action Action
	Kind   Kind
	Stream string
	// Consumer is the consumer's name; "" for a stream.
	Consumer string
	// Principal is the user's or account's name, or where the accounts file goes (KindUser,
	// KindAccount, KindAccountsFile); Key an account's public key in operator mode.
	Principal string
	Key       string
	Fields    []Field
	// Messages the stream holds (streams only): a delete or replace of one holding any needs
	// Options.PurgeNonEmpty.
	Messages uint64
	// Notes are what was kept on purpose, said so a difference between plan and bus is never
	// one nobody can find.
	Notes []string
	// Unmanaged names, for a stream being replaced, the consumers on it that meshc does not
	// manage: a replace would delete them, so it is refused whatever the flags.
	Unmanaged []string
	// ResumeRecorded: the consumer's stream holds a resume point for it (an earlier replace
	// stopped between delete and create), which this create starts from; apply removes the
	// point once the consumer exists again.
	ResumeRecorded bool
	// Adopts: the object exists without any meshc mark (another application's, or made by hand
	// or before marks): applying the change makes it the mesh's, which only --adopt permits.
	Adopts bool
	// Foreign names whose mark the object (or its stream) carries when it is another mesh's or
	// another catalogue's: the change is refused whatever the flags.
	Foreign string
	// Unreadable: the server reported the object (or its stream's consumers) missing or offline,
	// so it was left alone; the bus may still differ from the plan there.
	Unreadable bool
	// StreamConfig or ConsumerConfig is what apply asserts (nil for a delete or no-op).
	StreamConfig   *jetstream.StreamConfig
	ConsumerConfig *jetstream.ConsumerConfig
	// Refused says why no flag permits the change (an account that is another's, a mesh
	// account re-keyed away from its streams): the apply is refused before anything is written.
	Refused string
	// Revokes: an account the catalogue dropped is first pushed as a revoking version — no
	// users, no connections, newer than any held — then deleted if the action is Delete.
	Revokes bool
}

// Unapproved lists the discarding fields no approval accepts.
func (c Change) Unapproved() []Field {
	var out []Field
	for _, f := range c.Discarding() {
		if f.Approved == "" {
			out = append(out, f)
		}
	}
	return out
}

// Discarding lists the fields of a change the server makes by dropping stored messages.
func (c Change) Discarding() []Field {
	var out []Field
	if c.Action != Update {
		return nil
	}
	for _, f := range c.Fields {
		if f.Discards {
			out = append(out, f)
		}
	}
	return out
}

// Name is the object's name as a reviewer reads it: STREAM or STREAM/consumer, a user's or an
// account's name, the accounts file's place.
func (c Change) Name() string {
	switch c.Kind {
	case KindConsumer:
		return c.Stream + "/" + c.Consumer
	case KindStream:
		return c.Stream
	}
	return c.Principal
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
	// Stale are resume points nothing will use, by stream and consumer: apply removes them.
	Stale []StaleResume
	// Principals are the users, accounts and accounts file that differ (or carry a note), in
	// that order, each by name; PrincipalsFrom says what the bus's side was read from, and
	// PrincipalsUnknown, when set, why nothing could be told of them.
	Principals        []Change
	PrincipalsFrom    string
	PrincipalsUnknown string
	// Undelivered, when set, says who delivers the users and accounts instead of this apply:
	// their changes are shown, and left to it.
	Undelivered string
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

// Empty reports whether applying would change nothing: no object to change, no stale resume
// point to remove, and no user or account that differs.
func (cs Changes) Empty() bool { return cs.StreamsEmpty() && cs.PrincipalsEmpty() }

// StreamsEmpty: no stream or consumer to change and no stale resume point to remove.
func (cs Changes) StreamsEmpty() bool { return cs.Count(NoOp) == len(cs.Items) && len(cs.Stale) == 0 }

// PrincipalsEmpty: no user, account or accounts file differs.
func (cs Changes) PrincipalsEmpty() bool {
	for _, c := range cs.Principals {
		if c.Action != NoOp {
			return false
		}
	}
	return true
}

// CountPrincipals returns how many user, account and file changes carry the action.
func (cs Changes) CountPrincipals(kind Kind, a Action) int {
	n := 0
	for _, c := range cs.Principals {
		if c.Kind == kind && c.Action == a {
			n++
		}
	}
	return n
}

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
