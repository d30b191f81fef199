package change

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// SavedFormat is the version of a saved plan's shape.
const SavedFormat = 1

// Saved is a plan saved by `meshc plan --save FILE` for `meshc apply FILE`, as Terraform's users
// apply the plan they reviewed: the change set, the catalogue it was made from (each file's
// digest) and what the bus held when it was read (each object's digest). Applying it refuses,
// naming what moved, when the catalogue or the bus is no longer what the plan was made from, or
// when the change set meshc makes now is not the one saved.
type Saved struct {
	Format int `json:"meshc_saved_plan"`
	// Meshc is the version that saved it, said when a plan no longer comes out the same.
	Meshc string `json:"meshc"`
	// Summary is the change set's line, for a reader of the file.
	Summary   string         `json:"summary"`
	Catalogue SavedCatalogue `json:"catalogue"`
	Bus       SavedBus       `json:"bus"`
	// Prune: the change set shows objects the plan no longer has as deletes.
	Prune bool `json:"prune"`
	// Digest is what the change set does (ChangesDigest), what applying checks it still does.
	Digest  string  `json:"changes_digest"`
	Changes Changes `json:"changes"`
}

// SavedCatalogue is the catalogue a plan was made from: its directory as given and the digest
// of each file the loader read.
type SavedCatalogue struct {
	Dir   string            `json:"dir"`
	Files map[string]string `json:"files"`
}

// SavedBus is what the plan read from the bus: where, which bus it was, and each object's
// digest.
type SavedBus struct {
	Server string `json:"server"`
	// Identity says which bus it is, as the server tells it: its cluster's name, else its own
	// name, else where it listens (Bus.Identity); applying the plan to another is refused.
	Identity string            `json:"identity,omitempty"`
	Objects  map[string]string `json:"objects"`
}

// NewSaved records a change set made from the catalogue in dir (its files' digests) and the
// live state it was diffed against.
func NewSaved(meshc string, cs Changes, prune bool, dir string, files map[string]string, server, identity string, live *State) *Saved {
	return &Saved{Format: SavedFormat, Meshc: meshc, Summary: cs.Summary(), Prune: prune,
		Catalogue: SavedCatalogue{Dir: dir, Files: files},
		Bus:       SavedBus{Server: server, Identity: identity, Objects: StateDigests(live, cs)},
		Digest:    ChangesDigest(cs), Changes: cs}
}

// ReadSaved reads a saved plan, refusing what is not one.
func ReadSaved(data []byte) (*Saved, error) {
	var s Saved
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("not a plan saved by meshc plan --save (%v): give apply the file plan --save wrote, or plan again", err)
	}
	if s.Format != SavedFormat {
		return nil, fmt.Errorf("not a plan saved by meshc plan --save (format %d; this meshc reads %d): save it again", s.Format, SavedFormat)
	}
	return &s, nil
}

// StateDigests are the digest of each object a change set is about, as the bus holds it, by
// "stream NAME" and "consumer STREAM/NAME" ("absent" when the bus has none): its configuration
// as read, whether the server could report it, and the resume point recorded for it. What moves
// on its own while a bus runs — messages held, acknowledgements, a subscriber binding, other
// applications' consumers — is left out; where it matters to the change, the change set says so
// and ChangesDigest compares it.
func StateDigests(st *State, cs Changes) map[string]string {
	out := map[string]string{}
	for _, c := range cs.Items {
		key := string(c.Kind) + " " + c.Name()
		var obj any
		if c.Kind == KindStream {
			if s := st.Stream(c.Stream); s != nil {
				obj = struct {
					Config          any
					Unavailable     string
					ConsumersUnread bool
				}{s.Config, s.Unavailable, s.ConsumersUnread}
			}
		} else if k := st.Consumer(c.Stream, c.Consumer); k != nil {
			obj = struct {
				Config      any
				Unavailable string
			}{k.Config, k.Unavailable}
		}
		if s := st.Stream(c.Stream); s != nil && c.Kind == KindConsumer {
			if r, ok := s.Resumes()[c.Consumer]; ok {
				obj = struct{ Object, Resume any }{obj, r}
			}
		}
		if obj == nil {
			out[key] = "absent"
			continue
		}
		out[key] = digest(obj)
	}
	for _, c := range cs.Principals {
		key := string(c.Kind) + " " + c.Name()
		var held *Principal
		if ps := st.Principals; ps != nil {
			switch c.Kind {
			case KindUser:
				held = ps.User(c.Principal)
			case KindAccount:
				held = ps.accountByKey(c.Principal, c.Key)
			case KindAccountsFile:
				out[key] = cmp.Or(ps.File, "absent")
				continue
			}
		}
		if held == nil {
			out[key] = "absent"
			continue
		}
		out[key] = digest(struct {
			Digests          map[string]string
			Revoked          bool
			IssuedAt, Pushed int64
			Streams          []string
		}{held.Digests, held.Revoked, held.IssuedAt, held.Pushed, held.Streams})
	}
	return out
}

// ChangesDigest is the digest of what a change set does: each object's action and the fields it
// changes, from what to what — not the message counts or resume points (stale ones among them),
// which a running bus moves and apply reads afresh.
func ChangesDigest(cs Changes) string { return digest(whatItDoes(cs)) }

type done struct {
	Action string
	Name   string
	Fields []string
}

func whatItDoes(cs Changes) []done {
	out := []done{}
	for _, c := range slices.Concat(cs.Items, cs.Principals) {
		if c.Action == NoOp {
			continue
		}
		d := done{Action: c.Action.Word(), Name: string(c.Kind) + " " + c.Name()}
		for _, f := range c.Fields {
			line := fmt.Sprintf("%s: %s → %s", f.Name, f.Old, f.New)
			if len(f.Added)+len(f.Removed) > 0 {
				line += fmt.Sprintf(" (+%q -%q)", f.Added, f.Removed)
			}
			d.Fields = append(d.Fields, line)
		}
		out = append(out, d)
	}
	return out
}

func digest(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // configurations and strings always marshal
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// CatalogueMoved names each catalogue file changed, added or removed since the plan was saved.
func (s *Saved) CatalogueMoved(files map[string]string) []string {
	return moved(s.Catalogue.Files, files)
}

// still are the objects the change set made now still changes, by "kind name": an object the
// saved plan changed that is not among them holds what the plan wanted (an earlier run of the plan
// applied it), and is done, not moved.
func still(cs Changes) map[string]bool {
	out := map[string]bool{}
	for _, c := range slices.Concat(cs.Items, cs.Principals) {
		if c.Action != NoOp {
			out[string(c.Kind)+" "+c.Name()] = true
		}
	}
	return out
}

// BusMoved names each object the change set still changes that the bus holds otherwise now
// than when the plan was saved: changed, created or deleted since.
func (s *Saved) BusMoved(live *State, cs Changes) []string {
	var out []string
	todo := still(cs)
	now := StateDigests(live, s.Changes)
	for k, d := range now {
		if !todo[k] {
			continue
		}
		switch was := s.Bus.Objects[k]; {
		case was == d:
		case was == "absent":
			out = append(out, k+" created on the bus since")
		case d == "absent":
			out = append(out, k+" deleted from the bus since")
		default:
			out = append(out, k+" changed on the bus")
		}
	}
	slices.Sort(out)
	return out
}

// ChangesMoved names each object the change set made now does otherwise than the saved one
// (a meshc of another version may plan the same catalogue and bus differently), leaving out what
// an earlier run of the plan already did.
func (s *Saved) ChangesMoved(cs Changes) []string {
	todo := still(cs)
	was, now := map[string]string{}, map[string]string{}
	for _, d := range whatItDoes(s.Changes) {
		if todo[d.Name] {
			was[d.Name] = digest(d)
		}
	}
	for _, d := range whatItDoes(cs) {
		now[d.Name] = digest(d)
	}
	return moved(was, now)
}

// Approvals carries the saved plan's approved drops onto the change set made now: the drops the
// reviewed plan showed approved, field for field, from the same value to the same value. The
// approval is the saved plan's to give: a plain apply's change set carries none.
func (s *Saved) Approvals(cs *Changes) {
	approved := map[string]string{}
	for _, c := range s.Changes.Items {
		for _, f := range c.Fields {
			if f.Approved != "" {
				approved[c.Name()+" "+f.Name+" "+f.Old+" "+f.New] = f.Approved
			}
		}
	}
	for i := range cs.Items {
		c := &cs.Items[i]
		for j := range c.Fields {
			f := &c.Fields[j]
			f.Approved = approved[c.Name()+" "+f.Name+" "+f.Old+" "+f.New]
		}
	}
}

// Done reports whether the bus already holds everything the saved plan changes: nothing it
// would deliver is left to do (a CI job run again after it applied the plan), and it had
// something to do. What this apply would not deliver (users delivered where the server runs) is
// left as it was, and must still be the plan's.
func (s *Saved) Done(live *State, cs Changes) bool {
	deliverable := func(cs Changes) bool {
		return !cs.StreamsEmpty() || (!cs.PrincipalsEmpty() && cs.Undelivered == "")
	}
	return deliverable(s.Changes) && !deliverable(cs) && len(s.BusMoved(live, cs))+len(s.ChangesMoved(cs)) == 0
}

// StillHolds refuses a saved plan whose bus moved since it was saved, or whose change set meshc
// no longer makes from its catalogue.
func (s *Saved) StillHolds(live *State, cs Changes) error {
	if m := s.BusMoved(live, cs); len(m) > 0 {
		return Moved("the bus", m, "by "+s.Bus.Server)
	}
	if m := s.ChangesMoved(cs); len(m) > 0 {
		return Moved("what the plan does", m, "meshc "+s.Meshc+" saved it")
	}
	return nil
}

// moved compares two digest maps: what changed, what is new, what is gone.
func moved(was, now map[string]string) []string {
	var out []string
	for k, d := range now {
		switch w, ok := was[k]; {
		case !ok:
			out = append(out, k+" added")
		case w != d:
			out = append(out, k+" changed")
		}
	}
	for k := range was {
		if _, ok := now[k]; !ok {
			out = append(out, k+" removed")
		}
	}
	slices.Sort(out)
	return out
}

// Moved is the refusal of a saved plan whose ground moved: what moved, and what to do.
func Moved(what string, moved []string, since string) error {
	const most = 10
	shown := moved
	if len(shown) > most {
		shown = append(slices.Clone(shown[:most]), fmt.Sprintf("and %d more", len(moved)-most))
	}
	return fmt.Errorf("%s changed since the plan was saved (%s): %s; nothing was applied — plan again and review the new plan", what, since, strings.Join(shown, ", "))
}
