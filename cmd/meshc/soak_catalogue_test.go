package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// soakCatalogue is the catalogue the soak evolves, as a model it writes out as YAML: modules on
// machines, what each emits and consumes, the seats they declare, EVENTS' settings. Every name a
// module instance or a consumer ever had is fresh: a module moves to a machine it never ran on
// and a new module takes a name never used, so one consumer name is one consumer's life and "no
// acknowledged message delivered again" means the same consumer's history.
type soakCatalogue struct {
	modules []*soakModule
	// aliases are the seats' old names, old: new.
	aliases map[string]string
	// EVENTS' settings.
	maxAge     string
	perSubject int
	storage    string

	next int // the next fresh number for a module, a machine or a seat
}

type soakModule struct {
	name, node string
	emits      []string
	consumes   []string // EMITTER.EVENT
	seat       string   // a seat it declares and claims, "" for none
	seatScope  string
}

func newSoakCatalogue(r *rand.Rand) *soakCatalogue {
	c := &soakCatalogue{aliases: map[string]string{}, maxAge: "720h", perSubject: 10_000, storage: "file"}
	for range 4 {
		c.addModule(r)
	}
	for range 3 {
		c.consumeMore(r)
	}
	return c
}

func (c *soakCatalogue) fresh(prefix string) string {
	c.next++
	return fmt.Sprintf("%s%d", prefix, c.next)
}

func (c *soakCatalogue) module(name string) *soakModule {
	for _, m := range c.modules {
		if m.name == name {
			return m
		}
	}
	return nil
}

// events is every event some module emits, EMITTER.EVENT.
func (c *soakCatalogue) events() []string {
	var out []string
	for _, m := range c.modules {
		for _, e := range m.emits {
			out = append(out, m.name+"."+e)
		}
	}
	return out
}

// An evolution changes the catalogue and says what it did, or "" when it could not apply here.
type soakEvolution struct {
	name string
	do   func(c *soakCatalogue, r *rand.Rand) string
}

var soakEvolutions = []soakEvolution{
	{"add a module", (*soakCatalogue).addModule},
	{"remove a module", (*soakCatalogue).removeModule},
	{"move a module", (*soakCatalogue).moveModule},
	{"consume one more event", (*soakCatalogue).consumeMore},
	{"consume one event fewer", (*soakCatalogue).consumeLess},
	{"change EVENTS' per-subject cap", (*soakCatalogue).changeCap},
	{"change EVENTS' max age", (*soakCatalogue).changeAge},
	{"declare a seat", (*soakCatalogue).declareSeat},
	{"rename a seat", (*soakCatalogue).renameSeat},
	{"re-scope a seat", (*soakCatalogue).rescopeSeat},
	{"move EVENTS to the other storage", (*soakCatalogue).flipStorage},
}

func (c *soakCatalogue) addModule(r *rand.Rand) string {
	m := &soakModule{name: c.fresh("m"), node: c.fresh("h"), emits: []string{"done"}}
	if r.IntN(2) == 0 {
		m.emits = append(m.emits, "failed.hard")
	}
	events := c.events()
	r.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
	m.consumes = slices.Clone(events[:min(len(events), r.IntN(3))])
	c.modules = append(c.modules, m)
	return fmt.Sprintf("added module %s on %s, consuming %v", m.name, m.node, m.consumes)
}

func (c *soakCatalogue) removeModule(r *rand.Rand) string {
	if len(c.modules) <= 3 {
		return ""
	}
	gone := c.modules[r.IntN(len(c.modules))]
	c.modules = slices.DeleteFunc(c.modules, func(m *soakModule) bool { return m == gone })
	for _, m := range c.modules {
		m.consumes = slices.DeleteFunc(m.consumes, func(e string) bool { return strings.HasPrefix(e, gone.name+".") })
	}
	for old, now := range c.aliases {
		if now == gone.seat {
			delete(c.aliases, old)
		}
	}
	return "removed module " + gone.name
}

func (c *soakCatalogue) moveModule(r *rand.Rand) string {
	m := c.modules[r.IntN(len(c.modules))]
	was := m.node
	m.node = c.fresh("h")
	return fmt.Sprintf("moved module %s from %s to %s", m.name, was, m.node)
}

func (c *soakCatalogue) consumeMore(r *rand.Rand) string {
	m := c.modules[r.IntN(len(c.modules))]
	var candidates []string
	for _, e := range c.events() {
		if !strings.HasPrefix(e, m.name+".") && !slices.Contains(m.consumes, e) {
			candidates = append(candidates, e)
		}
	}
	if len(candidates) == 0 {
		return ""
	}
	e := candidates[r.IntN(len(candidates))]
	m.consumes = append(m.consumes, e)
	return fmt.Sprintf("module %s consumes %s too", m.name, e)
}

func (c *soakCatalogue) consumeLess(r *rand.Rand) string {
	m := c.modules[r.IntN(len(c.modules))]
	if len(m.consumes) == 0 {
		return ""
	}
	i := r.IntN(len(m.consumes))
	e := m.consumes[i]
	m.consumes = slices.Delete(m.consumes, i, i+1)
	return fmt.Sprintf("module %s no longer consumes %s", m.name, e)
}

func (c *soakCatalogue) changeCap(r *rand.Rand) string {
	caps := slices.DeleteFunc([]int{3_000, 10_000, 30_000}, func(n int) bool { return n == c.perSubject })
	was := c.perSubject
	c.perSubject = caps[r.IntN(len(caps))]
	return fmt.Sprintf("EVENTS' per-subject cap %d → %d", was, c.perSubject)
}

func (c *soakCatalogue) changeAge(r *rand.Rand) string {
	ages := slices.DeleteFunc([]string{"48h", "240h", "720h"}, func(a string) bool { return a == c.maxAge })
	was := c.maxAge
	c.maxAge = ages[r.IntN(len(ages))]
	return fmt.Sprintf("EVENTS' max age %s → %s", was, c.maxAge)
}

func (c *soakCatalogue) declareSeat(r *rand.Rand) string {
	var free []*soakModule
	for _, m := range c.modules {
		if m.seat == "" {
			free = append(free, m)
		}
	}
	if len(free) == 0 {
		return ""
	}
	m := free[r.IntN(len(free))]
	m.seat, m.seatScope = c.fresh("s"), "mesh"
	return fmt.Sprintf("module %s declares and holds seat %s", m.name, m.seat)
}

func (c *soakCatalogue) seated(r *rand.Rand) *soakModule {
	var seated []*soakModule
	for _, m := range c.modules {
		if m.seat != "" {
			seated = append(seated, m)
		}
	}
	if len(seated) == 0 {
		return nil
	}
	return seated[r.IntN(len(seated))]
}

func (c *soakCatalogue) renameSeat(r *rand.Rand) string {
	m := c.seated(r)
	if m == nil {
		return ""
	}
	was := m.seat
	m.seat = c.fresh("s")
	for old, now := range c.aliases {
		if now == was {
			c.aliases[old] = m.seat
		}
	}
	c.aliases[was] = m.seat
	return fmt.Sprintf("seat %s renamed %s", was, m.seat)
}

func (c *soakCatalogue) rescopeSeat(r *rand.Rand) string {
	m := c.seated(r)
	if m == nil {
		return ""
	}
	if m.seatScope == "mesh" {
		m.seatScope = "node"
	} else {
		m.seatScope = "mesh"
	}
	return fmt.Sprintf("seat %s is %s-scoped", m.seat, m.seatScope)
}

func (c *soakCatalogue) flipStorage(r *rand.Rand) string {
	// Rare: it replaces EVENTS, every message in it, and every consumer's position.
	if r.IntN(4) != 0 {
		return ""
	}
	if c.storage == "file" {
		c.storage = "memory"
	} else {
		c.storage = "file"
	}
	return "EVENTS' storage → " + c.storage
}

// write writes the catalogue into dir, over what the last write left (credentials.yaml and the
// golden files are meshc's own and are kept).
func (c *soakCatalogue) write(t *testing.T, dir string) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(dir, "modules")); err != nil {
		t.Fatal(err)
	}
	var mesh strings.Builder
	mesh.WriteString("name: novox\nid: 2b8c0d54-7f0e-4a51-9a8f-5e3d0c9b1a77\nisolation: shared-account\n")
	if len(c.aliases) > 0 {
		mesh.WriteString("aliases:\n")
		for _, old := range sortedKeys(c.aliases) {
			fmt.Fprintf(&mesh, "  %s: %s\n", old, c.aliases[old])
		}
	}
	// The soak's events are message ids, a few dozen bytes: a small max-msg-size lets every
	// subject's cap fit EVENTS' max-bytes (limit-too-low), as many subjects as the soak grows.
	fmt.Fprintf(&mesh, "streams:\n  events: {max-age: %s, max-msgs-per-subject: %d, max-msg-size: 512, replicas: 3, storage: %s}\n", c.maxAge, c.perSubject, c.storage)
	mesh.WriteString("  control: {replicas: 3}\n  nodes: {replicas: 3}\n  seats: {replicas: 3}\n")
	files := map[string]string{"mesh.yaml": mesh.String()}
	byNode := map[string][]string{}
	for _, m := range c.modules {
		var y strings.Builder
		fmt.Fprintf(&y, "module: %s\nemits: [%s]\n", m.name, strings.Join(m.emits, ", "))
		if len(m.consumes) > 0 {
			fmt.Fprintf(&y, "consumes: [%s]\n", strings.Join(m.consumes, ", "))
		}
		if m.seat != "" {
			fmt.Fprintf(&y, "seats:\n  - {name: %s, scope: %s, accepts: [job]}\nclaims: [%s]\n", m.seat, m.seatScope, m.seat)
		}
		files["modules/"+m.name+".yaml"] = y.String()
		byNode[m.node] = append(byNode[m.node], m.name)
	}
	var inv strings.Builder
	inv.WriteString("nodes:\n")
	for _, n := range sortedKeys(byNode) {
		fmt.Fprintf(&inv, "  - {name: %s, runs: [%s]}\n", n, strings.Join(byNode[n], ", "))
	}
	files["inventory.yaml"] = inv.String()
	if _, err := os.Stat(filepath.Join(dir, "credentials.yaml")); err != nil {
		files["credentials.yaml"] = ""
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// instances are the module instances the catalogue runs: user, consumer (or ""), the subjects
// it publishes.
func (c *soakCatalogue) instances() []soakInstance {
	var out []soakInstance
	for _, m := range c.modules {
		in := soakInstance{user: "mod." + m.node + "." + m.name}
		if len(m.consumes) > 0 {
			in.consumer = m.node + "_" + m.name
		}
		for _, e := range m.emits {
			in.subjects = append(in.subjects, "mesh.mod."+m.name+".event."+e)
		}
		out = append(out, in)
	}
	return out
}

type soakInstance struct {
	user, consumer string
	subjects       []string
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
