package compiler

import (
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/catalogue"
)

// What bounds a principal (docs/catalogue.md, "Limits and their defaults"; docs/nats.md,
// "Limits and floods"): each stream's own limits bound what anyone stores in it (compile.go,
// streams); each account's limits bound what its users hold on the server — connections
// together, subscriptions and payload per connection — and the mesh's account's JetStream limits
// bound its streams and consumers. The server's configuration file has no limits per user: per
// connection and per account is what it offers, so an account of its own (a module's, shared by
// its instances) is what makes a limit one principal's.

// The capacity rules: a limit the catalogue's own objects do not fit in.
var (
	RuleStreamCapacity = &catalogue.Rule{ID: "stream-capacity", Severity: catalogue.Error, Firm: true,
		Summary: "more streams than limits.max-streams lets the mesh's account hold",
		Why:     "The server refuses the stream past the account's limit (10027) at apply, after the streams before it were made; said here, before anything touches a bus."}
	RuleConsumerCapacity = &catalogue.Rule{ID: "consumer-capacity", Severity: catalogue.Error, Firm: true,
		Summary: "a stream with more consumers than limits.max-consumers lets it hold",
		Why:     "The server applies the account's max-consumers to each stream and refuses the consumer past it (10026) at apply, and a stream asking for more than the account allows is refused whole."}
	RuleLimitTooLow = &catalogue.Rule{ID: "limit-too-low", Severity: catalogue.Error,
		Summary: "a limit in mesh.yaml below what the catalogue's own objects need: a stream's max-bytes below one subject's messages at their cap, the account's storage below its streams', a payload below a stream's largest message, subscriptions below a user's own",
		Why:     "A limit that cannot hold what the catalogue declares fails far from mesh.yaml: apply refused for storage, a module unable to subscribe its tools, or one busy subject pushing every other out of a stream."}
)

// AccountLimits bound what an account's users hold on the server: the `limits` block of the
// account in accounts.conf (and an account's limits in operator mode). Zero means not set.
type AccountLimits struct {
	// Connections is how many connections the account's users may hold together: connections
	// per user times its users.
	Connections int64
	// Subscriptions and Payload bound each connection in the account (the server applies an
	// account's max_subscriptions and max_payload to every client connection in it).
	Subscriptions int64
	Payload       int64
	// NoLeafnodes is set on a principal's account: no leafnode connection may bind to it, since
	// one would bring subscriptions no connection limit counts.
	NoLeafnodes bool
}

// JetStreamLimits bound what the account holding JetStream may hold: the `jetstream` block of
// the mesh's account. Zero means not set.
type JetStreamLimits struct {
	// MaxStreams counts the account's streams; MaxConsumers the consumers of each one (the
	// server applies the account's limit per stream, server/consumer.go).
	MaxStreams, MaxConsumers int64
	// MaxFile and MaxMemory are bytes; -1 is no account limit: each stream's max_bytes, which the
	// server reserves when it makes the stream, bounds the account then.
	MaxFile, MaxMemory int64
}

// limits derives every account's limits from mesh.yaml's, generically over the plan's accounts
// (one account in shared-account mode), and says where a limit set in mesh.yaml cannot hold what
// the catalogue declares. Linear in users and streams.
func (c *compilation) limits() {
	mesh := c.ix.Catalogue.Mesh
	l := mesh.Limits
	p := c.plan
	perUser := orDefault(l.ConnectionsPerUser, catalogue.DefaultConnectionsPerUser)
	conn := AccountLimits{
		Subscriptions: orDefault(l.MaxSubscriptions, catalogue.DefaultMaxSubscriptions),
		Payload:       orDefault(l.MaxPayload, catalogue.DefaultMaxPayload),
	}
	js := c.jetStreamLimits(l)
	if len(p.Accounts) == 0 {
		p.shared = Account{Name: p.Account, Kind: AccountMesh, JetStream: true, Users: make([]string, len(p.Users))}
		for i, u := range p.Users {
			p.shared.Users[i] = u.Name
		}
	}
	for _, a := range p.allAccounts() {
		a.Limits = conn
		a.Limits.Connections = perUser * int64(len(a.Users))
		if a.JetStream {
			a.JetStreamLimits = js
		} else {
			a.Limits.NoLeafnodes = true
		}
	}
	c.limitsTooLow(conn)
}

// allAccounts is every account of the plan, the shared one when there is one account.
func (p *Plan) allAccounts() []*Account {
	if len(p.Accounts) == 0 {
		return []*Account{&p.shared}
	}
	out := make([]*Account, len(p.Accounts))
	for i := range p.Accounts {
		out[i] = &p.Accounts[i]
	}
	return out
}

// MeshAccount is the mesh's own account: JetStream, mesh-controller, and in shared-account mode
// every user. Its Limits and JetStreamLimits are what accounts.conf gives it.
func (p *Plan) MeshAccount() *Account {
	if len(p.Accounts) > 0 {
		return &p.Accounts[0]
	}
	if !p.shared.JetStream {
		// A plan not from the compiler (read back from plan.json, or made by a test): the mesh's
		// account with no limits derived. A new one, never stored: renderers read a plan at once.
		return &Account{Name: p.Account, Kind: AccountMesh, JetStream: true}
	}
	return &p.shared
}

// jetStreamLimits derives the mesh's account's JetStream limits, and says where mesh.yaml sets
// one below what the plan needs.
func (c *compilation) jetStreamLimits(l catalogue.Limits) JetStreamLimits {
	p := c.plan
	at := orPos(l.Pos, catalogue.Pos{File: c.ix.Catalogue.Mesh.File})
	// apply's own bucket (its lock and resume points) is a stream of the account too.
	streams := int64(len(p.Streams) + 1)
	js := JetStreamLimits{MaxStreams: orDefault(l.MaxStreams, streams+catalogue.DefaultRoomForOtherStreams), MaxFile: orDefault(l.MaxFile, -1), MaxMemory: orDefault(l.MaxMemory, -1)}
	if js.MaxStreams < streams {
		c.findings = append(c.findings, RuleStreamCapacity.At(at, "limits.max-streams is %d, but the mesh's account needs %d streams (%d of the plan's and apply's bucket): apply would be refused every stream past the limit; raise it to at least %d, or leave it out",
			js.MaxStreams, streams, len(p.Streams), streams))
	}

	// The account's max-consumers replaces the server's default of 1,000 per stream, so the
	// default is the most any stream asks for.
	js.MaxConsumers = ServerDefaultMaxConsumers
	for _, s := range p.Streams {
		js.MaxConsumers = max(js.MaxConsumers, int64(s.Config.MaxConsumers))
	}
	if l.MaxConsumers > 0 {
		js.MaxConsumers = l.MaxConsumers
		count := map[string]int64{}
		for _, k := range p.Consumers {
			count[k.Stream]++
		}
		for _, s := range p.Streams {
			if n := max(count[s.Config.Name], int64(s.Config.MaxConsumers)); n > js.MaxConsumers {
				c.findings = append(c.findings, RuleConsumerCapacity.At(at, "stream %s has %d consumers, but limits.max-consumers lets each stream of the mesh's account hold %d: apply would be refused past it; raise limits.max-consumers to at least %d, or leave it out",
					s.Config.Name, count[s.Config.Name], js.MaxConsumers, n))
			}
		}
	}

	var file, memory int64
	for _, s := range p.Streams {
		// Without tiers the server counts a replicated stream once per replica against the
		// account (server/jetstream.go, accountReservation).
		need := s.Config.MaxBytes * int64(max(s.Config.Replicas, 1))
		if s.Config.Storage == jetstream.MemoryStorage {
			memory += need
		} else {
			file += need
		}
	}
	for _, x := range []struct {
		key         string
		limit, need int64
	}{{"max-file", js.MaxFile, file}, {"max-memory", js.MaxMemory, memory}} {
		if x.limit > 0 && x.limit < x.need {
			c.findings = append(c.findings, RuleLimitTooLow.At(at, "limits.%s is %s, but the mesh's streams may keep %s there (each stream's max-bytes, times its replicas), and the server reserves it when it makes them: apply would be refused with 10047; raise limits.%s to at least %d, or lower the streams' max-bytes",
				x.key, catalogue.Bytes(x.limit), catalogue.Bytes(x.need), x.key, x.need))
		}
	}
	return js
}

// eventsTooLow says when EVENTS cannot hold every event subject at its cap: it would fill, and a
// full stream drops its oldest message whoever's it is, so one emitter within its caps would push
// out another's unread events (docs/nats.md, "Limits and floods"). With max-msgs-per-subject left
// out the cap is derived to fit (eventsPerSubject), and this fires only when not even one message
// of each subject does. With no event published yet, one subject at its cap must fit, as for
// every stream.
func (c *compilation) eventsTooLow(at catalogue.Pos, settings catalogue.StreamSettings, maxBytes, size int64) {
	subjects := c.eventSubjects
	perSubject := settings.MaxMsgsPerSubject
	if perSubject == 0 {
		perSubject = eventsPerSubject(maxBytes, size, subjects)
	}
	need := EventsBytes(perSubject, size, subjects)
	if need <= maxBytes {
		return
	}
	one := EventsBytes(1, size, subjects)
	fix := fmt.Sprintf("raise max-bytes to at least %d, or lower max-msg-size", need)
	if settings.MaxMsgsPerSubject > 0 && maxBytes >= one {
		fix = fmt.Sprintf("raise max-bytes to at least %d, lower max-msgs-per-subject to %d, or leave it out and meshc derives the most that fits", need, maxBytes/one)
	}
	c.findings = append(c.findings, RuleLimitTooLow.At(at, "streams.events keeps at most %s, but its %d event subjects at %d messages each of up to %s need %s: a full stream drops its oldest event whoever emitted it, so one emitter within its caps would push out another's unread events; %s",
		catalogue.Bytes(maxBytes), len(subjects), perSubject, catalogue.Bytes(size), catalogue.Bytes(need), fix))
}

// limitsTooLow says where a stream's limits or a connection's cannot hold what the catalogue's
// own objects need.
func (c *compilation) limitsTooLow(conn AccountLimits) {
	mesh := c.ix.Catalogue.Mesh
	meshPos := catalogue.Pos{File: mesh.File}
	s := mesh.Streams
	for _, g := range []struct {
		key      string
		settings catalogue.StreamSettings
		def      catalogue.StreamDefaults
	}{{"events", s.Events, catalogue.EventsDefaults}, {"control", s.Control, catalogue.ControlDefaults}, {"nodes", s.Nodes, catalogue.NodesDefaults}, {"seats", s.Seats, catalogue.SeatsDefaults}} {
		at := orPos(g.settings.Pos, meshPos)
		maxBytes := orDefault(g.settings.MaxBytes, g.def.MaxBytes)
		size := orDefault(g.settings.MaxMsgSize, g.def.MaxMsgSize)
		perSubject := max(orDefault(g.settings.MaxMsgsPerSubject, g.def.MaxMsgsPerSubject), 1)
		if g.key == "nodes" {
			perSubject = 1
		}
		if g.key == "events" && len(c.eventSubjects) > 0 {
			c.eventsTooLow(at, g.settings, maxBytes, size)
		} else if need := size * perSubject; maxBytes < need {
			what := fmt.Sprintf("one subject's %d messages of up to %s need %s", perSubject, catalogue.Bytes(size), catalogue.Bytes(need))
			if perSubject == 1 {
				what = fmt.Sprintf("one message of up to %s does not fit", catalogue.Bytes(size))
			}
			c.findings = append(c.findings, RuleLimitTooLow.At(at, "streams.%s keeps at most %s, but %s: one busy subject would push every other subject's messages out; raise max-bytes to at least %d, or lower max-msg-size or max-msgs-per-subject",
				g.key, catalogue.Bytes(maxBytes), what, need))
		}
		if size > conn.Payload {
			c.findings = append(c.findings, RuleLimitTooLow.At(at, "streams.%s takes messages of up to %s, but no connection may publish more than %s (limits.max-payload): raise limits.max-payload to at least %d, or lower max-msg-size",
				g.key, catalogue.Bytes(size), catalogue.Bytes(conn.Payload), size))
		}
	}
	for _, u := range c.plan.Users {
		// Its own subscriptions, and the one a pull in flight takes on its inbox (a serving
		// user makes no request: it has no inbox).
		need := int64(len(u.Subscribe.Allow) + 1)
		if u.Kind == KindServer {
			need--
		}
		if need > conn.Subscriptions {
			c.findings = append(c.findings, RuleLimitTooLow.At(u.Source, "bus user %s subscribes %d subjects%s, but limits.max-subscriptions lets a connection hold %d: it could not subscribe them all; raise limits.max-subscriptions to at least %d",
				u.Name, len(u.Subscribe.Allow), map[bool]string{true: " and a pull's inbox"}[u.Kind != KindServer], conn.Subscriptions, need))
		}
	}
}
