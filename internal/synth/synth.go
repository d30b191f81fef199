// Package synth generates synthetic catalogues: deterministic from a seed, of any number of
// modules, shaped like a real mesh (several events per module, consumers of other modules' and
// roles' events, tools and calls, declared, claimed and used seats, machines running several
// modules, people) and clean under every lint rule, so a benchmark measures the path a healthy
// catalogue takes rather than the cost of reporting faults.
//
// Generation is linear in the number of modules: every choice looks back at a bounded number of
// earlier modules or draws from a slice, never searches the catalogue.
package synth

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// MinModules is the smallest catalogue Files makes: the fixed modules that hold the mesh's roles
// (bus, builder, packet filter, log shipper, audit logger) plus one ordinary module.
const MinModules = 6

// The fixed modules, by name. They are generated first, in modules/platform/.
const (
	busModule      = "bus"
	builderModule  = "builder"
	firewallModule = "firewall"
	shipperModule  = "shipper"
	auditModule    = "audit"
)

// The seats the fixed modules hold. Mesh roles are declared in mesh.yaml; the shipper's seat is
// a module-declared node-scoped marker, held once on every machine.
const (
	buildRole   = "mesh-build-machine"
	brokerRole  = "mesh-broker"
	filterRole  = "node-packet-filter"
	shipperSeat = "log-forwarder"
)

// Word lists. Module words and seat words are disjoint, and every generated module and seat name
// ends in its own index, so no seat shares a name with a module (name-clash) and no two names
// collide. None begins with mesh- or node- (reserved) or "module" (the old routing-key form).
var (
	moduleWords = []string{
		"ledger", "billing", "inventory", "search", "mailer", "thumbs", "ingest", "report",
		"session", "profile", "payment", "shipping", "pricing", "review", "cart", "quota",
		"webhook", "export", "importer", "feed", "ranker", "tagger", "geo", "wiki", "chat",
		"calendar", "ticket", "survey", "forum", "media", "archive", "crawler", "ocr", "invoice",
		"loyalty", "fraud", "ads", "signup", "stock", "tax",
	}
	seatWords = []string{"intake", "dispatch", "render-farm", "sync-desk", "batch", "courier", "vault-writer", "indexer"}
	objects   = []string{"order", "user", "item", "file", "job", "page", "account", "record", "batch", "message", "report", "price"}
	verbs     = []string{"created", "updated", "deleted", "published", "failed", "expired", "approved", "synced"}
	toolWords = []string{"lookup", "refresh", "status", "recompute", "purge", "preview", "validate", "export"}
	workKinds = []string{"run", "sync", "render", "index", "purge", "import"}
	people    = []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy"}
)

// module is one generated manifest, kept as its values until written.
type module struct {
	name, dir, description string
	provides, requires     []string
	emits, consumes        []string
	tools, calls           []string
	claims, uses           []string
	seat                   *seat
	busUsers               bool
	everywhere             bool // runs on every machine
}

type seat struct {
	name, scope, delivers string
	accepts, emits        []string
}

// Files returns a catalogue of n modules generated from seed, by slash-separated path relative
// to the catalogue's directory: mesh.yaml, inventory.yaml and modules/<group>/<module>.yaml.
// The same n and seed give the same bytes on every run and machine.
func Files(n int, seed int64) (map[string][]byte, error) {
	if n < MinModules {
		return nil, fmt.Errorf("a synthetic catalogue needs at least %d modules (its fixed ones hold the mesh's roles), not %d", MinModules, n)
	}
	g := &generator{rng: rand.New(rand.NewPCG(uint64(seed), 0x6d657368))}
	g.modules = make([]*module, 0, n)
	g.fixedModules()
	for i := len(g.modules); i < n; i++ {
		g.ordinary(i)
	}
	g.closeRing()

	machines := max(1, n/4)
	files := make(map[string][]byte, n+2)
	files["mesh.yaml"] = g.meshYAML()
	files["inventory.yaml"] = g.inventoryYAML(machines)
	for _, m := range g.modules {
		files["modules/"+m.dir+"/"+m.name+".yaml"] = m.yaml()
	}
	return files, nil
}

// Write writes the catalogue Files generates into dir, creating directories as needed.
func Write(dir string, n int, seed int64) error {
	files, err := Files(n, seed)
	if err != nil {
		return err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	made := map[string]bool{}
	for _, p := range paths {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if d := filepath.Dir(full); !made[d] {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("write synthetic catalogue: %w", err)
			}
			made[d] = true
		}
		if err := os.WriteFile(full, files[p], 0o644); err != nil {
			return fmt.Errorf("write synthetic catalogue: %w", err)
		}
	}
	return nil
}

type generator struct {
	rng     *rand.Rand
	modules []*module
	// tools are MODULE.TOOL names served so far: calls and people's grants draw from them, so
	// every call is served (call-agreement).
	tools []string
	// seats are seats accepting work declared so far: uses draw from them, so every use is of a
	// seat that accepts work (seat-use-nothing) and has a running holder (seat-unheld).
	seats []string
	// heard are events of earlier modules, EMITTER.EVENT, for extra consumers to pick from.
	heard []string
	// firstOrdinary is the index of the first ordinary module, which consumes the last one's
	// events to close the ring (every event is heard: event-unheard).
	firstOrdinary int
}

func (g *generator) pick(list []string) string { return list[g.rng.IntN(len(list))] }

// some picks up to k distinct entries of list, in list order.
func (g *generator) some(list []string, k int) []string {
	var out []string
	for range k {
		if v := g.pick(list); !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func (g *generator) fixedModules() {
	g.modules = append(g.modules,
		&module{
			name: busModule, dir: "platform", description: "The NATS bus",
			provides: []string{"mesh-bus"}, claims: []string{brokerRole}, busUsers: true,
		},
		&module{
			name: builderModule, dir: "platform", description: "Builds images for the mesh",
			provides: []string{"oci-build"}, claims: []string{buildRole},
			tools: []string{"build-now"},
		},
		&module{
			name: firewallModule, dir: "platform", description: "Each machine's packet filter",
			claims: []string{filterRole}, everywhere: true,
		},
		&module{
			name: shipperModule, dir: "platform", description: "Forwards each machine's logs",
			seat:   &seat{name: shipperSeat, scope: "node"},
			claims: []string{shipperSeat}, everywhere: true,
		},
		&module{
			name: auditModule, dir: "platform", description: "Keeps every event",
			consumes: []string{"**"}, tools: []string{"search"},
		},
	)
	g.tools = append(g.tools, builderModule+".build-now", auditModule+".search")
	g.seats = append(g.seats, buildRole)
	g.heard = append(g.heard, buildRole+".built")
	g.firstOrdinary = len(g.modules)
}

// ordinary generates module i. It consumes every event of module i-1 (and of the seat i-1
// declares), so every event has a listener besides the audit logger; the first ordinary module
// gets the last one's in closeRing.
func (g *generator) ordinary(i int) {
	word := g.pick(moduleWords)
	m := &module{name: word + "-" + strconv.Itoa(i), dir: word}
	m.description = "Synthetic " + word + " service"
	m.provides = []string{m.name + "-api"}

	for range 1 + g.rng.IntN(4) {
		if e := g.pick(objects) + "." + g.pick(verbs); !slices.Contains(m.emits, e) {
			m.emits = append(m.emits, e)
		}
	}
	m.tools = g.some(toolWords, g.rng.IntN(3))

	if i > g.firstOrdinary {
		prev := g.modules[i-1]
		m.consumes = listenTo(prev, g.rng.IntN(4) == 0)
		for range g.rng.IntN(3) {
			// Nothing the previous module's entries already cover: a narrower filter under a
			// wider one is dropped by the compiler, and written it would only mislead a reader.
			e := g.pick(g.heard)
			if slices.Contains(m.consumes, e) || strings.HasPrefix(e, prev.name+".") ||
				prev.seat != nil && strings.HasPrefix(e, prev.seat.name+".") {
				continue
			}
			m.consumes = append(m.consumes, e)
		}
		// Requires draw from earlier ordinary modules, all of which run.
		for range g.rng.IntN(3) {
			j := g.firstOrdinary + g.rng.IntN(i-g.firstOrdinary)
			if r := g.modules[j].provides[0]; !slices.Contains(m.requires, r) {
				m.requires = append(m.requires, r)
			}
		}
	}
	if len(g.tools) > 0 {
		m.calls = g.some(g.tools, g.rng.IntN(3))
	}
	if g.rng.IntN(4) == 0 {
		m.uses = []string{g.pick(g.seats)}
	}
	// One in eight declares a mesh-scoped seat and holds it; its interface is its own, so the
	// holder delivers it (seat-holder-delivers) and the seat's name is nothing like it.
	if i%8 == 0 {
		s := &seat{
			name:     g.pick(seatWords) + "-" + strconv.Itoa(i),
			scope:    "mesh",
			delivers: m.provides[0],
			accepts:  g.some(workKinds, 1+g.rng.IntN(2)),
			emits:    g.some([]string{"work.done", "work.failed", "work.started"}, 1+g.rng.IntN(2)),
		}
		m.seat, m.claims = s, []string{s.name}
	}

	g.modules = append(g.modules, m)
	for _, t := range m.tools {
		g.tools = append(g.tools, m.name+"."+t)
	}
	for _, e := range m.emits {
		g.heard = append(g.heard, m.name+"."+e)
	}
	if m.seat != nil {
		g.seats = append(g.seats, m.seat.name)
		for _, e := range m.seat.emits {
			g.heard = append(g.heard, m.seat.name+"."+e)
		}
	}
}

// listenTo is what a module writes to hear every event of m and of the seat m declares: each
// event by name, or the emitter-wide EMITTER.** form.
func listenTo(m *module, wide bool) []string {
	var out []string
	if wide {
		out = append(out, m.name+".**")
	} else {
		for _, e := range m.emits {
			out = append(out, m.name+"."+e)
		}
	}
	if s := m.seat; s != nil && len(s.emits) > 0 {
		out = append(out, s.name+".**")
	}
	return out
}

func (g *generator) closeRing() {
	first, last := g.modules[g.firstOrdinary], g.modules[len(g.modules)-1]
	if first == last {
		return // a lone ordinary module: the controller hears it (meshYAML)
	}
	for _, e := range listenTo(last, false) {
		if !slices.Contains(first.consumes, e) {
			first.consumes = append(first.consumes, e)
		}
	}
}

func (g *generator) meshYAML() []byte {
	var b strings.Builder
	b.WriteString("# A synthetic mesh generated by meshc/internal/synth: valid under every lint rule.\n")
	b.WriteString("name: synth\n")
	b.WriteString("roles:\n")
	fmt.Fprintf(&b, "  - {name: %s, scope: mesh, accepts: [build], emits: [built]}\n", buildRole)
	fmt.Fprintf(&b, "  - {name: %s, scope: mesh, delivers: mesh-bus}\n", brokerRole)
	fmt.Fprintf(&b, "  - {name: %s, scope: node}\n", filterRole)
	b.WriteString("controller:\n")
	fmt.Fprintf(&b, "  submits: [%s]\n", buildRole)
	// The controller hears the first ordinary module, so even a catalogue with only one has a
	// listener for every event besides the audit logger.
	follows := append([]string{buildRole + ".built"}, listenTo(g.modules[g.firstOrdinary], false)...)
	fmt.Fprintf(&b, "  follows: [%s]\n", strings.Join(follows, ", "))
	fmt.Fprintf(&b, "aliases: {build-machine: %s}\n", buildRole)
	b.WriteString("streams:\n")
	// Events of up to 1 KiB: EVENTS must hold every event subject at its cap, at least one
	// message each, and a catalogue of 100,000 modules has some 260,000 of them.
	b.WriteString("  events: {max-age: 720h, max-msg-size: 1024, replicas: 1}\n")
	b.WriteString("  control: {replicas: 1}\n")
	b.WriteString("  nodes: {replicas: 1}\n")
	b.WriteString("  seats: {replicas: 1, ack-wait: 10m}\n")
	return []byte(b.String())
}

// inventoryYAML places the modules: the bus and the audit logger on the first machine, the
// builder on the second, each ordinary module on one machine in turn (so every mesh-scoped seat
// has exactly one holder on exactly one machine), and the packet filter and log shipper on
// every machine (one holder of each node-scoped seat per machine).
func (g *generator) inventoryYAML(machines int) []byte {
	runs := make([][]string, machines)
	for i, m := range g.modules {
		switch {
		case m.everywhere:
			for k := range runs {
				runs[k] = append(runs[k], m.name)
			}
		case m.name == builderModule:
			runs[1%machines] = append(runs[1%machines], m.name)
		case i < g.firstOrdinary:
			runs[0] = append(runs[0], m.name)
		default:
			k := i % machines
			runs[k] = append(runs[k], m.name)
		}
	}
	var b strings.Builder
	b.WriteString("nodes:\n")
	for k, r := range runs {
		fmt.Fprintf(&b, "  - {name: box-%d, runs: [%s]", k, strings.Join(r, ", "))
		if k%10 == 9 {
			b.WriteString(", enrolling: true")
		}
		b.WriteString("}\n")
	}
	b.WriteString("people:\n")
	b.WriteString("  - {name: admin, may-call: [\"*\"]}\n")
	for k := range max(1, len(g.modules)/40) {
		grants := g.some(g.tools, 1+g.rng.IntN(3))
		fmt.Fprintf(&b, "  - {name: %s-%d, may-call: [%s]}\n", people[k%len(people)], k, strings.Join(grants, ", "))
	}
	return []byte(b.String())
}

func (m *module) yaml() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "module: %s\n", m.name)
	fmt.Fprintf(&b, "description: %s\n", m.description)
	list := func(key string, vs []string) {
		if len(vs) > 0 {
			fmt.Fprintf(&b, "%s: [%s]\n", key, strings.Join(vs, ", "))
		}
	}
	list("provides", m.provides)
	list("requires", m.requires)
	list("emits", m.emits)
	if len(m.consumes) > 0 {
		// Block form, each quoted: a bare ** would start a YAML alias.
		b.WriteString("consumes:\n")
		for _, c := range m.consumes {
			fmt.Fprintf(&b, "  - %q\n", c)
		}
	}
	list("tools", m.tools)
	list("calls", m.calls)
	if s := m.seat; s != nil {
		b.WriteString("seats:\n")
		fmt.Fprintf(&b, "  - name: %s\n    scope: %s\n", s.name, s.scope)
		if s.delivers != "" {
			fmt.Fprintf(&b, "    delivers: %s\n", s.delivers)
		}
		if len(s.accepts) > 0 {
			fmt.Fprintf(&b, "    accepts: [%s]\n", strings.Join(s.accepts, ", "))
		}
		if len(s.emits) > 0 {
			fmt.Fprintf(&b, "    emits: [%s]\n", strings.Join(s.emits, ", "))
		}
	}
	list("claims", m.claims)
	list("uses", m.uses)
	if m.busUsers {
		b.WriteString("files:\n  bus-users: /etc/nats-server/accounts.conf\n")
	}
	return []byte(b.String())
}
