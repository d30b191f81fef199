package compiler

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
)

// compileText compiles a catalogue written inline as a txtar archive.
func compileText(t *testing.T, archive string) (*Plan, catalogue.Findings) {
	t.Helper()
	c, loaded, err := catalogue.Load(cataloguetest.Write(t, txtar.Parse([]byte(archive))))
	if err != nil || len(loaded) > 0 {
		t.Fatalf("the test catalogue does not load cleanly: %v %v", err, loaded)
	}
	return Compile(catalogue.NewIndex(c))
}

// streamLimits is what bounds one stream, in the order docs/catalogue.md's table says them.
type streamLimits struct {
	MaxBytes          int64
	MaxMsgSize        int32
	MaxMsgsPerSubject int64
	Discard           jetstream.DiscardPolicy
}

func limitsOf(p *Plan) map[string]streamLimits {
	out := map[string]streamLimits{}
	for _, s := range p.Streams {
		c := s.Config
		out[c.Name] = streamLimits{c.MaxBytes, c.MaxMsgSize, c.MaxMsgsPerSubject, c.Discard}
	}
	return out
}

// A mesh.yaml that sets nothing gets every stream bounded: a history drops its oldest, a work
// queue refuses new work, and the subjects one principal owns are capped.
func TestEveryStreamIsBoundedByDefault(t *testing.T) {
	p, _ := compileText(t, `-- mesh.yaml --
name: novox
roles:
  - {name: mesh-build-machine, scope: mesh, accepts: [build]}
-- modules/builder.yaml --
module: builder
claims: [mesh-build-machine]
`)
	want := map[string]streamLimits{
		"EVENTS":                  {1 << 30, 16 << 10, 10_000, jetstream.DiscardOld},
		"CONTROL":                 {64 << 20, 64 << 10, 16, jetstream.DiscardOld},
		"NODES":                   {256 << 20, 1 << 20, 1, jetstream.DiscardOld},
		"SEAT_MESH_BUILD_MACHINE": {16 << 20, 256 << 10, 0, jetstream.DiscardNew},
	}
	if diff := cmp.Diff(want, limitsOf(p)); diff != "" {
		t.Fatalf("stream limits (-want +got):\n%s", diff)
	}
}

// Each stream's settings in mesh.yaml replace its defaults; NODES keeps one message per machine
// whatever is written.
func TestStreamLimitsComeFromMeshYAML(t *testing.T) {
	p, findings := compileText(t, `-- mesh.yaml --
name: novox
roles:
  - {name: mesh-build-machine, scope: mesh, accepts: [build]}
streams:
  events: {max-bytes: 2147483648, max-msg-size: 1024, max-msgs-per-subject: 50}
  control: {max-bytes: 1048576, max-msg-size: 4096, max-msgs-per-subject: 4}
  nodes: {max-bytes: 4194304, max-msg-size: 8192, max-msgs-per-subject: 9}
  seats: {max-bytes: 2097152, max-msg-size: 2048, max-msgs-per-subject: 7}
-- modules/builder.yaml --
module: builder
claims: [mesh-build-machine]
`)
	if n := len(findings) - countRule(findings, RuleCredentialMissing); n != 0 {
		t.Fatalf("unexpected findings: %v", findings)
	}
	want := map[string]streamLimits{
		"EVENTS":                  {2 << 30, 1024, 50, jetstream.DiscardOld},
		"CONTROL":                 {1 << 20, 4096, 4, jetstream.DiscardOld},
		"NODES":                   {4 << 20, 8192, 1, jetstream.DiscardOld},
		"SEAT_MESH_BUILD_MACHINE": {2 << 20, 2048, 7, jetstream.DiscardNew},
	}
	if diff := cmp.Diff(want, limitsOf(p)); diff != "" {
		t.Fatalf("stream limits (-want +got):\n%s", diff)
	}
}

// Every pull consumer bounds how long one pull waits, below the two minutes an isolated mesh
// keeps a pull's way back; a push consumer takes no pulls.
func TestEveryPullIsBoundedInTime(t *testing.T) {
	p, _ := compileArchive(t, "testdata/small.txtar")
	for _, c := range p.Consumers {
		want := MaxPullExpires
		if c.Config.DeliverSubject != "" {
			want = 0
		}
		if c.Config.MaxRequestExpires != want {
			t.Errorf("%s/%s: max_expires %v, want %v", c.Stream, c.Config.Durable, c.Config.MaxRequestExpires, want)
		}
	}
	if MaxPullExpires >= 2*time.Minute {
		t.Errorf("MaxPullExpires %v is not below the pull export's response threshold (2m)", MaxPullExpires)
	}
}

// Every account gets limits, derived from its own users in either isolation: connections per
// user times its users, subscriptions and payload per connection; a principal's account takes no
// leafnode; the mesh's account holds its streams, apply's bucket and room for others.
func TestEveryAccountIsBounded(t *testing.T) {
	for _, isolation := range []string{catalogue.IsolationShared, catalogue.IsolationPerModule} {
		t.Run(isolation, func(t *testing.T) {
			c, _ := cataloguetest.Load(t, "testdata/small.txtar")
			c.Mesh.Isolation.Value = isolation
			p, _ := Compile(catalogue.NewIndex(c))
			accounts := p.allAccounts()
			if isolation == catalogue.IsolationShared && (len(accounts) != 1 || len(p.Accounts) != 0) {
				t.Fatalf("a shared mesh has one account, and Plan.Accounts stays empty: %d, %d", len(accounts), len(p.Accounts))
			}
			mesh := p.MeshAccount()
			if mesh != accounts[0] || !mesh.JetStream {
				t.Fatalf("the mesh's account is the first and holds JetStream: %+v", mesh)
			}
			if got, want := mesh.JetStreamLimits, (JetStreamLimits{MaxStreams: int64(len(p.Streams)) + 1 + catalogue.DefaultRoomForOtherStreams, MaxConsumers: ServerDefaultMaxConsumers, MaxFile: -1, MaxMemory: -1}); got != want {
				t.Errorf("the mesh's JetStream limits: %+v, want %+v", got, want)
			}
			users := 0
			for _, a := range accounts {
				users += len(a.Users)
				want := AccountLimits{Connections: 8 * int64(len(a.Users)), Subscriptions: 1000, Payload: 1 << 20, NoLeafnodes: !a.JetStream}
				if a.Limits != want {
					t.Errorf("account %s: %+v, want %+v", a.Name, a.Limits, want)
				}
				if !a.JetStream && a.JetStreamLimits != (JetStreamLimits{}) {
					t.Errorf("account %s has no JetStream, yet JetStream limits %+v", a.Name, a.JetStreamLimits)
				}
			}
			if users != len(p.Users) {
				t.Errorf("the accounts hold %d users, the plan %d", users, len(p.Users))
			}
		})
	}
}

// mesh.yaml's limits replace the derived ones; the mesh's account follows a stream that needs
// room past the server's 1,000 consumers, since its limit replaces the server's per stream.
func TestAccountLimitsComeFromMeshYAML(t *testing.T) {
	p, findings := compileText(t, `-- mesh.yaml --
name: novox
isolation: shared-account
limits: {connections-per-user: 2, max-subscriptions: 50, max-payload: 4194304, max-streams: 20, max-consumers: 30, max-file: 2147483648, max-memory: 1073741824}
streams:
  nodes: {max-msg-size: 4194304}
-- modules/catalog.yaml --
module: catalog
-- inventory.yaml --
nodes:
  - {name: anchor, runs: [catalog]}
`)
	if n := len(findings) - countRule(findings, RuleCredentialMissing); n != 0 {
		t.Fatalf("unexpected findings: %v", findings)
	}
	mesh := p.MeshAccount()
	if want := (AccountLimits{Connections: 2 * 3, Subscriptions: 50, Payload: 4 << 20}); mesh.Limits != want {
		t.Errorf("limits %+v, want %+v", mesh.Limits, want)
	}
	if want := (JetStreamLimits{MaxStreams: 20, MaxConsumers: 30, MaxFile: 2 << 30, MaxMemory: 1 << 30}); mesh.JetStreamLimits != want {
		t.Errorf("JetStream limits %+v, want %+v", mesh.JetStreamLimits, want)
	}

	c := &compilation{ix: catalogue.NewIndex(&catalogue.Catalogue{Mesh: &catalogue.Mesh{File: catalogue.MeshFile}}), plan: &Plan{
		Streams: []Stream{{Config: jetstream.StreamConfig{Name: "EVENTS"}}, {Config: jetstream.StreamConfig{Name: "NODES"}}},
	}}
	for range 2500 {
		c.plan.Consumers = append(c.plan.Consumers, Consumer{Stream: "EVENTS"})
	}
	c.roomForConsumers()
	c.limits()
	if got := c.plan.MeshAccount().JetStreamLimits.MaxConsumers; got != 3000 {
		t.Errorf("a stream of 2,500 consumers: the account's max_consumers %d, want 3000 (the stream's own room)", got)
	}
}

// The capacity rules are quiet at exactly what the catalogue needs and fire one below it.
func TestCapacityRulesFireJustBelowTheNeed(t *testing.T) {
	const catalog = `
-- modules/catalog.yaml --
module: catalog
tools: [lookup, search, list, count]
-- inventory.yaml --
nodes:
  - {name: anchor, runs: [catalog]}
`
	// Three streams and apply's bucket; CONTROL has two consumers; the streams keep 1 GiB + 64
	// MiB + 256 MiB on disk; serve.anchor.catalog subscribes four tools, more than any other user
	// (the controller, a machine and mod.anchor.catalog: two and a pull's inbox).
	const file = 1<<30 + 64<<20 + 256<<20
	for _, c := range []struct {
		limits string
		fires  *catalogue.Rule
	}{
		{fmt.Sprintf("{max-streams: 4, max-consumers: 2, max-file: %d, max-subscriptions: 4}", file), nil},
		{"{max-streams: 3}", RuleStreamCapacity},
		{"{max-consumers: 1}", RuleConsumerCapacity},
		{fmt.Sprintf("{max-file: %d}", file-1), RuleLimitTooLow},
		{"{max-subscriptions: 3}", RuleLimitTooLow},
		{"{max-payload: 1048575}", RuleLimitTooLow}, // NODES takes 1 MiB
	} {
		t.Run(c.limits, func(t *testing.T) {
			_, findings := compileText(t, "-- mesh.yaml --\nname: novox\nlimits: "+c.limits+catalog)
			var got []string
			for _, f := range findings {
				if f.Rule != RuleCredentialMissing.ID {
					got = append(got, f.Rule+": "+f.Message)
				}
			}
			if c.fires == nil {
				if len(got) > 0 {
					t.Fatalf("limits at exactly the need fired: %v", got)
				}
				return
			}
			if len(got) != 1 || !strings.HasPrefix(got[0], c.fires.ID+": ") {
				t.Fatalf("want one %s finding, got %v", c.fires.ID, got)
			}
		})
	}

	// A stream's own limits: one subject at its cap must fit in its max-bytes.
	for _, c := range []struct {
		streams string
		fires   bool
	}{
		{"{events: {max-bytes: 6553600, max-msg-size: 655360, max-msgs-per-subject: 10}}", false},
		{"{events: {max-bytes: 6553599, max-msg-size: 655360, max-msgs-per-subject: 10}}", true},
		{"{seats: {max-bytes: 262144}}", false},
		{"{seats: {max-bytes: 262143}}", true},
	} {
		t.Run(c.streams, func(t *testing.T) {
			_, findings := compileText(t, "-- mesh.yaml --\nname: novox\nstreams: "+c.streams+catalog)
			if got := countRule(findings, RuleLimitTooLow); got != map[bool]int{false: 0, true: 1}[c.fires] {
				t.Fatalf("%d limit-too-low findings: %v", got, findings)
			}
		})
	}
}

// EVENTS holds every event subject at its cap, so it never fills: a full stream drops its oldest
// message whoever's it is. Left out, each subject's cap is derived to fit, rounded down to 1, 2 or
// 5 times a power of ten and never above the default; set, it must fit, and limit-too-low says so
// one message below. Not even one message of each fitting is limit-too-low either way.
func TestEventsHoldEverySubjectAtItsCap(t *testing.T) {
	const catalog = `
-- modules/a.yaml --
module: a
emits: [one, two]
-- modules/b.yaml --
module: b
emits: [three]
seats:
  - {name: s, scope: mesh, emits: [held]}
claims: [s]
-- modules/idle.yaml --
module: idle
emits: [never]
-- inventory.yaml --
nodes:
  - {name: anchor, runs: [a, b]}
`
	// a's two, b's one and its seat's: the idle module runs nowhere, so publishes nothing.
	subjects := []string{"mesh.mod.a.event.one", "mesh.mod.a.event.two", "mesh.mod.b.event.three", "mesh.seat.s.event.held"}
	one := EventsBytes(1, 1000, subjects)
	if one != 4*(1000+StoredOverhead)+int64(len(strings.Join(subjects, ""))) {
		t.Fatalf("one message of each subject: %d bytes", one)
	}
	events := func(p *Plan) jetstream.StreamConfig {
		return p.Streams[slices.IndexFunc(p.Streams, func(s Stream) bool { return s.Config.Name == EventsStream })].Config
	}
	for _, c := range []struct {
		streams    string
		perSubject int64
		fires      bool
	}{
		// Derived: 57 of each fit, so 50.
		{fmt.Sprintf("{events: {max-bytes: %d, max-msg-size: 1000}}", 57*one), 50, false},
		{fmt.Sprintf("{events: {max-bytes: %d, max-msg-size: 1000}}", 57*one-1), 50, false},
		{fmt.Sprintf("{events: {max-bytes: %d, max-msg-size: 1000}}", 2*one-1), 1, false},
		// Never above the default, whatever room there is.
		{"{events: {max-msg-size: 1000}}", catalogue.EventsDefaults.MaxMsgsPerSubject, false},
		// Not one of each fits.
		{fmt.Sprintf("{events: {max-bytes: %d, max-msg-size: 1000}}", one-1), 1, true},
		// Set: it must fit.
		{fmt.Sprintf("{events: {max-bytes: %d, max-msg-size: 1000, max-msgs-per-subject: 57}}", 57*one), 57, false},
		{fmt.Sprintf("{events: {max-bytes: %d, max-msg-size: 1000, max-msgs-per-subject: 57}}", 57*one-1), 57, true},
	} {
		t.Run(c.streams, func(t *testing.T) {
			p, findings := compileText(t, "-- mesh.yaml --\nname: novox\nstreams: "+c.streams+catalog)
			if got := events(p).MaxMsgsPerSubject; got != c.perSubject {
				t.Errorf("each event subject keeps %d, want %d", got, c.perSubject)
			}
			var said []string
			for _, f := range findings {
				if f.Rule == RuleLimitTooLow.ID {
					said = append(said, f.Message)
				}
			}
			if (len(said) == 1) != c.fires || len(said) > 1 {
				t.Fatalf("limit-too-low: %q, want it to fire: %v", said, c.fires)
			}
			if c.fires && !strings.Contains(said[0], "its 4 event subjects") {
				t.Errorf("the finding does not count the subjects: %s", said[0])
			}
		})
	}
	for n, want := range map[int64]int64{0: 0, 1: 1, 4: 2, 9: 5, 10: 10, 19: 10, 20: 20, 49: 20, 2730: 2000, 10000: 10000, 99999: 50000} {
		if got := roundDown125(n); got != want {
			t.Errorf("roundDown125(%d) = %d, want %d", n, got, want)
		}
	}
}
