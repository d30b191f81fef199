package compiler

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/tools/txtar"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
)

func compileArchive(t *testing.T, archive string) (*Plan, catalogue.Findings) {
	t.Helper()
	c, loaded := cataloguetest.Load(t, archive)
	if len(loaded) > 0 {
		t.Fatalf("the test catalogue does not load cleanly: %v", loaded)
	}
	return Compile(catalogue.NewIndex(c))
}

func user(t *testing.T, p *Plan, name string) User {
	t.Helper()
	i := slices.IndexFunc(p.Users, func(u User) bool { return u.Name == name })
	if i < 0 {
		t.Fatalf("no user %s in %v", name, userNames(p))
	}
	return p.Users[i]
}

func userNames(p *Plan) []string {
	var out []string
	for _, u := range p.Users {
		out = append(out, u.Name)
	}
	return out
}

func TestUsersComeInSpecOrder(t *testing.T) {
	p, _ := compileArchive(t, "testdata/small.txtar")
	want := []string{
		"mesh-controller",
		"node.anchor", "mod.anchor.builder", "mod.anchor.catalog", "serve.anchor.catalog", "mod.anchor.registry",
		"node.laptop", "mod.laptop.audit",
		"enrol.laptop",
		"person.alice", "person.bob",
	}
	if diff := cmp.Diff(want, userNames(p)); diff != "" {
		t.Fatalf("users (-want +got):\n%s", diff)
	}
}

// Each kind of user gets exactly what its declaration needs. These are the grants of
// docs/catalogue.md, "Permissions", written out, so a derivation that widens or narrows one fails
// here before it reaches a bus.
func TestEachUserGetsExactlyItsGrants(t *testing.T) {
	p, _ := compileArchive(t, "testdata/small.txtar")
	cases := []struct {
		user           string
		pub, sub, deny []string
		responses      bool
	}{{
		// A module that serves a tool: its module user emits and consumes, and serves nothing.
		user: "mod.anchor.catalog",
		pub: []string{
			"$JS.ACK.*.*.EVENTS.anchor_catalog.*.*.*.*.>", "$JS.ACK.EVENTS.anchor_catalog.*.*.*.*.*",
			"$JS.API.CONSUMER.INFO.EVENTS.anchor_catalog", "$JS.API.CONSUMER.MSG.NEXT.EVENTS.anchor_catalog",
			"mesh.mod.catalog.event.upgraded",
		},
		sub: []string{"_INBOX.mod.anchor.catalog.>"},
	}, {
		// Its serving user: the tool in its module's queue group, answering the server's replies
		// to the calls that crossed into the module's account (an account per principal, the
		// default: no allow_responses), and nothing else, no inbox either.
		user: "serve.anchor.catalog",
		pub:  []string{"_R_.>"},
		sub:  []string{"mesh.mod.catalog.tool.lookup catalog"},
	}, {
		// Holds the build-machine role: announces its event and takes its work; submits work to
		// a seat it uses. Consumes nothing, so no EVENTS grant at all.
		user: "mod.anchor.builder",
		pub: []string{
			"$JS.ACK.*.*.SEAT_MESH_BUILD_MACHINE.holder.*.*.*.*.>", "$JS.ACK.SEAT_MESH_BUILD_MACHINE.holder.*.*.*.*.*",
			"$JS.API.CONSUMER.INFO.SEAT_MESH_BUILD_MACHINE.holder", "$JS.API.CONSUMER.MSG.NEXT.SEAT_MESH_BUILD_MACHINE.holder",
			"mesh.seat.image-store.accept.push", "mesh.seat.mesh-build-machine.event.built",
		},
		sub: []string{"_INBOX.mod.anchor.builder.>"},
	}, {
		user: "mod.laptop.audit",
		pub: []string{
			"$JS.ACK.*.*.EVENTS.laptop_audit.*.*.*.*.>", "$JS.ACK.EVENTS.laptop_audit.*.*.*.*.*",
			"$JS.API.CONSUMER.INFO.EVENTS.laptop_audit", "$JS.API.CONSUMER.MSG.NEXT.EVENTS.laptop_audit",
			"mesh.mod.catalog.tool.lookup",
		},
		sub: []string{"_INBOX.mod.laptop.audit.>"},
	}, {
		user: "node.laptop",
		pub: []string{
			"$JS.ACK.*.*.NODES.laptop.*.*.*.*.>", "$JS.ACK.NODES.laptop.*.*.*.*.*", "$JS.API.CONSUMER.INFO.NODES.laptop",
			"mesh.control.heartbeat.laptop", "mesh.control.report.laptop",
		},
		sub: []string{"_DELIVER.NODES.laptop", "_INBOX.node.laptop.>"},
	}, {
		user: "enrol.laptop",
		pub:  []string{"mesh.control.enrol.laptop"},
		sub:  []string{"_INBOX.enrol.laptop.>"},
	}, {
		// `*` covers the named tool, so the narrower grant is dropped rather than said twice.
		user: "person.alice",
		pub:  []string{"mesh.mod.*.tool.*"},
		sub:  []string{"_INBOX.person.alice.>"},
	}, {
		user: "mesh-controller",
		pub: []string{
			"$JS.ACK.*.*.CONTROL.enrolments.*.*.*.*.>", "$JS.ACK.*.*.CONTROL.reports.*.*.*.*.>", "$JS.ACK.*.*.EVENTS.mesh-controller.*.*.*.*.>",
			"$JS.ACK.CONTROL.enrolments.*.*.*.*.*", "$JS.ACK.CONTROL.reports.*.*.*.*.*", "$JS.ACK.EVENTS.mesh-controller.*.*.*.*.*",
			"$JS.API.>", "$KV.meshc.>", "_INBOX.enrol.*.>", "mesh.node.*.declare", "mesh.seat.mesh-build-machine.accept.build",
		},
		sub: []string{"_INBOX.mesh-controller.>", "mesh.control.heartbeat.*"},
	}}
	for _, c := range cases {
		u := user(t, p, c.user)
		if diff := cmp.Diff(c.pub, u.Publish.Allow); diff != "" {
			t.Errorf("%s publish (-want +got):\n%s", c.user, diff)
		}
		if diff := cmp.Diff(c.sub, u.Subscribe.Allow); diff != "" {
			t.Errorf("%s subscribe (-want +got):\n%s", c.user, diff)
		}
		if u.AllowResponses != c.responses {
			t.Errorf("%s allow_responses = %v, want %v", c.user, u.AllowResponses, c.responses)
		}
		if len(u.Publish.Deny) > 0 || len(u.Subscribe.Deny) > 0 {
			t.Errorf("%s has a deny list although it has grants: %+v %+v", c.user, u.Publish, u.Subscribe)
		}
	}
}

// To the server an empty allow list means everything (docs/nats.md, "An empty allow list means
// everything"): a user with nothing to publish must be written deny [">"], never allow [].
func TestAUserWithNothingToPublishIsDeniedEverything(t *testing.T) {
	p, _ := compileArchive(t, "testdata/small.txtar")
	u := user(t, p, "mod.anchor.registry") // holds a seat that accepts work: it has grants
	if len(u.Publish.Allow) == 0 {
		t.Fatal("the registry holds a seat that accepts work and was granted nothing")
	}
	c, _ := cataloguetest.Load(t, "testdata/small.txtar")
	c.Inventory.People = append(c.Inventory.People, &catalogue.Person{Name: catalogue.Text{Value: "carol"}})
	p, _ = Compile(catalogue.NewIndex(c))
	carol := user(t, p, "person.carol")
	if len(carol.Publish.Allow) != 0 || !slices.Equal(carol.Publish.Deny, []string{">"}) {
		t.Fatalf("a person with no tools got publish %+v; want deny [>]", carol.Publish)
	}
}

func TestStreamsAndConsumers(t *testing.T) {
	p, findings := compileArchive(t, "testdata/small.txtar")
	if len(findings) != countRule(findings, RuleCredentialMissing) {
		t.Fatalf("unexpected findings: %v", findings)
	}
	var streams []string
	for _, s := range p.Streams {
		streams = append(streams, s.Config.Name+" "+strings.Join(s.Config.Subjects, ",")+" "+s.Config.Retention.String())
	}
	want := []string{
		"CONTROL mesh.control.report.*,mesh.control.enrol.* WorkQueue",
		"EVENTS mesh.mod.*.event.>,mesh.seat.*.event.> Limits",
		"NODES mesh.node.*.declare Limits",
		"SEAT_IMAGE_STORE mesh.seat.image-store.accept.> WorkQueue",
		"SEAT_MESH_BUILD_MACHINE mesh.seat.mesh-build-machine.accept.> WorkQueue",
	}
	if diff := cmp.Diff(want, streams); diff != "" {
		t.Fatalf("streams (-want +got):\n%s", diff)
	}
	events := p.Streams[1].Config
	if events.MaxAge != 720*time.Hour || events.MaxMsgsPerSubject != 10000 {
		t.Errorf("EVENTS settings not carried from mesh.yaml: %+v", events)
	}
	if p.Streams[2].Config.MaxMsgsPerSubject != 1 {
		t.Errorf("NODES must keep only the newest declaration per machine")
	}

	var consumers []string
	for _, c := range p.Consumers {
		filters := c.Config.FilterSubjects
		if c.Config.FilterSubject != "" {
			filters = []string{c.Config.FilterSubject}
		}
		consumers = append(consumers, c.Stream+"/"+c.Config.Durable+" "+strings.Join(filters, ",")+" "+c.Config.DeliverSubject)
	}
	want = []string{
		"CONTROL/enrolments mesh.control.enrol.* ",
		"CONTROL/reports mesh.control.report.* ",
		"EVENTS/anchor_catalog mesh.seat.image-store.event.pushed,mesh.seat.mesh-build-machine.event.built ",
		// ** covers catalog.upgraded: overlapping filters are refused by the server, so the
		// narrower one is dropped.
		"EVENTS/laptop_audit mesh.mod.*.event.>,mesh.seat.*.event.> ",
		"EVENTS/mesh-controller mesh.mod.catalog.event.upgraded,mesh.seat.mesh-build-machine.event.built ",
		"NODES/anchor mesh.node.anchor.declare _DELIVER.NODES.anchor",
		"NODES/laptop mesh.node.laptop.declare _DELIVER.NODES.laptop",
		"SEAT_IMAGE_STORE/holder mesh.seat.image-store.accept.> ",
		"SEAT_MESH_BUILD_MACHINE/holder mesh.seat.mesh-build-machine.accept.> ",
	}
	if diff := cmp.Diff(want, consumers); diff != "" {
		t.Fatalf("consumers (-want +got):\n%s", diff)
	}
	for _, c := range p.Consumers {
		if c.Config.AckPolicy != jetstream.AckExplicitPolicy || c.Config.MaxDeliver != -1 {
			t.Errorf("%s/%s: every consumer acks explicitly and never dead-letters: %+v", c.Stream, c.Config.Durable, c.Config)
		}
		if strings.Contains(c.Config.Durable, ".") {
			t.Errorf("durable name %q holds a dot, which the server refuses", c.Config.Durable)
		}
	}
	for _, c := range p.Consumers {
		if c.Stream == "SEAT_MESH_BUILD_MACHINE" && c.Config.AckWait != 10*time.Minute {
			t.Errorf("seats.ack-wait not carried to the holder: %v", c.Config.AckWait)
		}
		if c.Stream == "NODES" && c.Config.AckWait != NodeAckWait {
			t.Errorf("a machine's declaration consumer waits %v, want %v", c.Config.AckWait, NodeAckWait)
		}
	}
}

// The same catalogue compiles to the same plan whatever order its files, nodes, runs or people
// were read in: the bus reloads on the accounts file's digest, so an order-dependent compiler
// would reload the whole bus on every run.
func TestCompilingIgnoresOrder(t *testing.T) {
	c, _ := cataloguetest.Load(t, "testdata/small.txtar")
	want, _ := Compile(catalogue.NewIndex(c))
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		r.Shuffle(len(c.Modules), func(i, j int) { c.Modules[i], c.Modules[j] = c.Modules[j], c.Modules[i] })
		nodes := c.Inventory.Nodes
		r.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
		for _, n := range nodes {
			r.Shuffle(len(n.Runs), func(i, j int) { n.Runs[i], n.Runs[j] = n.Runs[j], n.Runs[i] })
		}
		people := c.Inventory.People
		r.Shuffle(len(people), func(i, j int) { people[i], people[j] = people[j], people[i] })
		for _, m := range c.Modules {
			r.Shuffle(len(m.Consumes), func(i, j int) { m.Consumes[i], m.Consumes[j] = m.Consumes[j], m.Consumes[i] })
		}
		got, _ := Compile(catalogue.NewIndex(c))
		// Positions travel with their values; only what reaches the bus must not move.
		if diff := cmp.Diff(bus(want), bus(got)); diff != "" {
			t.Fatalf("shuffling the catalogue changed the plan (-want +got):\n%s", diff)
		}
	}
}

// bus is the part of a plan the bus sees.
func bus(p *Plan) any {
	type u struct {
		Name      string
		Pub, Sub  Permission
		Responses bool
	}
	var users []u
	for _, x := range p.Users {
		users = append(users, u{x.Name, x.Publish, x.Subscribe, x.AllowResponses})
	}
	var streams []jetstream.StreamConfig
	for _, s := range p.Streams {
		streams = append(streams, s.Config)
	}
	var consumers []jetstream.ConsumerConfig
	for _, c := range p.Consumers {
		consumers = append(consumers, c.Config)
	}
	return struct {
		Users     []u
		Streams   []jetstream.StreamConfig
		Consumers []jetstream.ConsumerConfig
	}{users, streams, consumers}
}

func TestUserDuplicate(t *testing.T) {
	_, findings := compileArchive(t, "testdata/small.txtar")
	if n := countRule(findings, RuleUserDuplicate); n != 0 {
		t.Fatalf("user-duplicate fired on a catalogue without duplicates: %v", findings)
	}
	// The archive says beside each duplicate the finding it must give.
	a, err := txtar.ParseFile("testdata/user-duplicate.txtar")
	if err != nil {
		t.Fatal(err)
	}
	_, findings = compileArchive(t, "testdata/user-duplicate.txtar")
	cataloguetest.Check(t, findings, cataloguetest.Wants(t, a))
}

func TestCredentialMissing(t *testing.T) {
	// No credentials.yaml: one finding, not one per user, saying emit will need
	// `meshc mint --missing`. Before, a new catalogue linted clean and emit then refused it.
	_, findings := compileArchive(t, "testdata/small.txtar")
	if m := rule(findings, RuleCredentialMissing); len(m) != 1 || m[0].Pos.File != "mesh.yaml" || !strings.Contains(m[0].Message, "meshc mint --missing") {
		t.Fatalf("want one credential-missing finding naming `meshc mint --missing`, got %v", findings)
	}
	p, findings := compileArchive(t, "testdata/credentials.txtar")
	missing := rule(findings, RuleCredentialMissing)
	if len(missing) != 1 || !strings.Contains(missing[0].Message, "meshc mint node.anchor") {
		t.Fatalf("want node.anchor named with the mint command, got %v", findings)
	}
	if missing[0].Severity != catalogue.Warning {
		t.Errorf("credential-missing is a warning, got %v", missing[0].Severity)
	}
	// Named, never dropped: the user is still in the plan, without a hash.
	if u := user(t, p, "node.anchor"); u.Hash != "" {
		t.Errorf("node.anchor got a hash from nowhere: %q", u.Hash)
	}
	if u := user(t, p, "mesh-controller"); !strings.HasPrefix(u.Hash, "$2a$") {
		t.Errorf("the recorded hash was not carried: %q", u.Hash)
	}
}

func TestStreamOverlap(t *testing.T) {
	mk := func(name string, line int, subjects ...string) Stream {
		return Stream{Config: jetstream.StreamConfig{Name: name, Subjects: subjects}, Source: catalogue.Pos{File: "mesh.yaml", Line: line}}
	}
	quiet := []Stream{
		mk("EVENTS", 1, "mesh.mod.*.event.>", "mesh.seat.*.event.>"),
		mk("CONTROL", 2, "mesh.control.report.*", "mesh.control.enrol.*"),
		mk("SEAT_A", 3, "mesh.seat.a.accept.>"),
		mk("SEAT_B", 4, "mesh.seat.b.accept.>"),
	}
	if f := streamOverlaps(quiet); len(f) != 0 {
		t.Fatalf("disjoint streams reported as overlapping: %v", f)
	}
	loud := append(slices.Clone(quiet),
		mk("ORDERS", 5, "orders.>"),
		mk("ORDERS_EU", 6, "orders.eu.*"),
		mk("X", 7, "x.*.y"),
		mk("XA", 8, "x.a.*"),
		mk("AUDIT", 9, "mesh.*.a.event.b"),
	)
	f := streamOverlaps(loud)
	var got []string
	for _, x := range f.Sorted() {
		got = append(got, x.Pos.String()+" "+x.Message)
	}
	if len(got) != 3 {
		t.Fatalf("want 3 overlapping pairs, got %d:\n%s", len(got), strings.Join(got, "\n"))
	}
	for _, want := range []string{
		"mesh.yaml:6 streams ORDERS_EU (orders.eu.*) and ORDERS (orders.>) both capture orders.eu.x",
		"mesh.yaml:8 streams XA (x.a.*) and X (x.*.y) both capture x.a.y",
		"mesh.yaml:9 streams AUDIT (mesh.*.a.event.b) and EVENTS (mesh.mod.*.event.>) both capture mesh.mod.a.event.b",
	} {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, want) }) {
			t.Errorf("missing %q in:\n%s", want, strings.Join(got, "\n"))
		}
	}
}

// A seat name that is not a subject token derives a work queue that overlaps every other seat's.
// lint names the bad name; the compiler still says what it would do to the bus.
func TestStreamOverlapFromACatalogue(t *testing.T) {
	_, findings := compileArchive(t, "testdata/stream-overlap.txtar")
	if len(rule(findings, RuleStreamOverlap)) == 0 {
		t.Fatalf("a seat named * did not overlap the other seats' work queues: %v", findings)
	}
}

func rule(fs catalogue.Findings, r *catalogue.Rule) catalogue.Findings {
	var out catalogue.Findings
	for _, f := range fs {
		if f.Rule == r.ID {
			out = append(out, f)
		}
	}
	return out
}

func countRule(fs catalogue.Findings, r *catalogue.Rule) int { return len(rule(fs, r)) }

func TestSubjectAlgebra(t *testing.T) {
	for _, c := range []struct {
		a, b             string
		covers, overlaps bool
	}{
		{"a.>", "a.b", true, true},
		{"a.>", "a", false, false},
		{"a.*", "a.b", true, true},
		{"a.*", "a.b.c", false, false},
		{"a.b", "a.*", false, true},
		{"x.*.y", "x.a.*", false, true},
		{"mesh.mod.*.event.>", "mesh.seat.*.event.>", false, false},
		{"mesh.mod.*.tool.*", "mesh.mod.catalog.tool.lookup", true, true},
		{">", "a.b.c", true, true},
		{"a.b", "a.b", true, true},
		{"a.b", "a.c", false, false},
	} {
		if got := Covers(c.a, c.b); got != c.covers {
			t.Errorf("Covers(%q, %q) = %v", c.a, c.b, got)
		}
		if got := Overlaps(c.a, c.b); got != c.overlaps {
			t.Errorf("Overlaps(%q, %q) = %v", c.a, c.b, got)
		}
		if got := Overlaps(c.b, c.a); got != c.overlaps {
			t.Errorf("Overlaps(%q, %q) = %v (not symmetric)", c.b, c.a, got)
		}
		if c.overlaps {
			w := Witness(c.a, c.b)
			if !Covers(c.a, w) || !Covers(c.b, w) {
				t.Errorf("Witness(%q, %q) = %q matches not both", c.a, c.b, w)
			}
		}
	}
	if got := Minimise([]string{"a.b", "a.>", "a.b", "c", "a.*"}); !slices.Equal(got, []string{"a.>", "c"}) {
		t.Errorf("Minimise = %v", got)
	}
}

// Covers and Overlaps agree with the server's own subject algebra (sublist.go's
// SubjectMatchesFilter and SubjectsCollide) on every pair of a set of patterns, ack subjects of
// both forms among them: what meshc decides a grant admits is what the server decides.
func TestTheSubjectMatcherIsTheServers(t *testing.T) {
	subjects := []string{"a", "a.b", "a.b.c", "a.*", "a.>", "*", ">", "*.b", "a.*.c", "a.b.>", "x.y", "*.*", "*.>",
		"$JS.ACK.*.*.EVENTS.n_m.*.*.*.*.>", "$JS.ACK.EVENTS.n_m.*.*.*.*.*", "$JS.ACK.a.b.EVENTS.n_m.1.2",
		"$JS.ACK.EVENTS.x_y.EVENTS.n_m.1.1.1", "$JS.ACK.*.*.EVENTS.n_m.>", "mesh.mod.*.tool.*", "mesh.mod.m.tool.t"}
	for _, w := range subjects {
		for _, n := range subjects {
			if got, want := Covers(w, n), server.SubjectMatchesFilter(n, w); got != want {
				t.Errorf("Covers(%q, %q) = %v, the server says %v", w, n, got, want)
			}
			if got, want := Overlaps(w, n), server.SubjectsCollide(w, n); got != want {
				t.Errorf("Overlaps(%q, %q) = %v, the server says %v", w, n, got, want)
			}
		}
	}
}

// Past the server's default of 1,000 consumers a stream gets room of its own, rounded up to the
// next thousand; under it the stream says nothing and the server's default stands.
func TestAStreamPastTheDefaultConsumerLimitGetsRoom(t *testing.T) {
	c := &compilation{plan: &Plan{
		Streams: []Stream{{Config: jetstream.StreamConfig{Name: "EVENTS"}}, {Config: jetstream.StreamConfig{Name: "NODES"}}},
	}}
	for range 1001 {
		c.plan.Consumers = append(c.plan.Consumers, Consumer{Stream: "EVENTS"})
	}
	for range 1000 {
		c.plan.Consumers = append(c.plan.Consumers, Consumer{Stream: "NODES"})
	}
	c.roomForConsumers()
	if got := c.plan.Streams[0].Config.MaxConsumers; got != 2000 {
		t.Errorf("EVENTS with 1,001 consumers: max_consumers %d, want 2000", got)
	}
	if got := c.plan.Streams[1].Config.MaxConsumers; got != 0 {
		t.Errorf("NODES with 1,000 consumers: max_consumers %d, want the server's default (0)", got)
	}
}

// Covers agrees with the rule read token by token from split subjects, on random patterns of
// literal, empty and wildcard tokens, `>` anywhere included.
func TestCoversIsTheTokenRule(t *testing.T) {
	covers := func(wide, narrow string) bool {
		w, n := strings.Split(wide, "."), strings.Split(narrow, ".")
		for i, wt := range w {
			switch {
			case wt == ">":
				return i < len(n)
			case i >= len(n):
				return false
			case n[i] == ">", wt != "*" && wt != n[i]:
				return false
			}
		}
		return len(w) == len(n)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	subject := randomSubjects(rng)
	for range 200_000 {
		wide, narrow := subject(), subject()
		if got, want := Covers(wide, narrow), covers(wide, narrow); got != want {
			t.Fatalf("Covers(%q, %q) = %v, the token rule says %v", wide, narrow, got, want)
		}
	}
}
