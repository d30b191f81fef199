package catalogue

import (
	"fmt"
	"math"

	"go.yaml.in/yaml/v3"
)

// The field tables below are the catalogue format (docs/catalogue.md): a key not in a table is an
// unknown key, with the nearest one as a hint. Each row is a key, its shape and what it means; the
// loader decodes with them, and `meshc schema` and docs/catalogue.md are written from them.

func (d *decoder) module(doc *yaml.Node, m *Module) { d.mapping(doc, moduleTable(m)) }

func moduleTable(m *Module) *table {
	return &table{what: "a module manifest", doc: "A module manifest: one module, what it offers the mesh and what it needs from it. One file per module under modules/.",
		required: []string{"module"},
		fields: []field{
			{"module", named(&m.Name, NameGrammar), "The module's name, unique in the catalogue: lower-case letters, digits and -, at most 63 characters, not starting mesh- or node-. It names the module's bus users (mod.<machine>.<module>) and its subjects (mesh.mod.<module>.…)."},
			{"description", text(&m.Description), "What the module is, in a line, for people reading the catalogue."},
			{"provides", once(texts(&m.Provides)), "Interfaces the module provides (an interface is a word, such as oci-build)."},
			{"requires", once(texts(&m.Requires)), "Interfaces the module needs: a module that provides each must run on some machine."},
			{"emits", once(nameds(&m.Emits, EventGrammar)), "The events the module announces, as local names (built, image.pushed): never a subject, never prefixed with the module. Each is published on mesh.mod.<module>.event.<event>."},
			{"consumes", once(texts(&m.Consumes)), "Events the module consumes, as EMITTER.EVENT: EMITTER is a module or a seat, and a final ** takes every event of one emitter (photos.**), or of all (**)."},
			{"tools", once(nameds(&m.Tools, TokenGrammar)), "Request/reply tools the module serves, each one word; served on mesh.mod.<module>.tool.<tool>."},
			{"calls", once(texts(&m.Calls)), "Tools the module may call, as MODULE.TOOL."},
			{"seats", listOf(func() (*table, func()) {
				s := &Seat{Declarer: m}
				return seatTable(s, "a seat"), func() {
					if s.named() {
						m.Seats = append(m.Seats, s)
					}
				}
			}), "Seats the module declares: jobs some module holds, to which work is sent and whose events are announced by the seat rather than its holder."},
			{"claims", once(nameds(&m.Claims, NameGrammar)), "Seats the module holds. A mesh-scoped seat has one holder in the mesh; a node-scoped one, one per machine."},
			{"uses", once(nameds(&m.Uses, NameGrammar)), "Seats the module submits work to."},
			{"files", pairs(func(k, v Text) { m.Files = append(m.Files, FileRequest{Kind: k, Path: v}) }, "file kinds", "paths"),
				"Files the mesh writes for this module, kind: path. The kinds are the mesh's (bus-users is the bus's user list, for the holder of mesh-broker); lint checks them."},
		},
		check: func(d *decoder, n *yaml.Node, seen map[string]*yaml.Node) {
			if seen["module"] == nil {
				d.failFile("this manifest names no module: add `module: <name>` (lower-case letters, digits and -)")
			}
		},
	}
}

func (s *Seat) named() bool { return s.Name.Pos != Pos{} }

// seatTable is one seat, declared by a module (what: "a seat") or as a role in mesh.yaml ("a
// role"). A seat without a name is kept by nobody: nothing could refer to it.
func seatTable(s *Seat, what string) *table {
	return &table{what: what, label: what + "'s ", doc: "A seat: a job some module holds. Work is submitted to the seat and its events are announced by the seat, so nobody needs to know which module holds it today.",
		required: []string{"name", "scope"},
		fields: []field{
			{"name", named(&s.Name, NameGrammar), "The seat's name: lower-case letters, digits and -. Only mesh.yaml's roles may take mesh-* and node-* names."},
			{"scope", textIn(&s.Scope, "mesh", "node"), "mesh: one holder in the whole mesh; node: one holder per machine."},
			{"delivers", text(&s.Delivers), "The interface the seat's holder must provide. A seat with no delivers, accepts or emits is a marker: it only says which module holds it."},
			{"accepts", once(nameds(&s.Accepts, TokenGrammar)), "Kinds of work that may be submitted to the seat, each one word; submitted on mesh.seat.<seat>.accept.<kind> and queued in the stream SEAT_<SEAT> until a holder takes it."},
			{"emits", once(nameds(&s.Emits, EventGrammar)), "Events the seat announces, whoever holds it, as local names; published on mesh.seat.<seat>.event.<event>."},
		},
		check: func(d *decoder, n *yaml.Node, seen map[string]*yaml.Node) {
			switch {
			case seen["name"] == nil:
				d.fail(n, "%s needs a name: add `name: <seat>`", what)
			case s.named() && seen["scope"] == nil:
				*d.findings = append(*d.findings, RuleYAML.At(s.Name.Pos,
					"seat %q has no scope: add `scope: mesh` (one holder in the mesh) or `scope: node` (one per machine)", Excerpt(s.Name.Value)))
			}
		},
	}
}

func (d *decoder) mesh(doc *yaml.Node, m *Mesh) { d.mapping(doc, meshTable(m)) }

func meshTable(m *Mesh) *table {
	return &table{what: "mesh.yaml", doc: "mesh.yaml: the mesh itself — its name, its own roles, the controller's side, seat renames, stream settings and approved breaks. One per catalogue.",
		required: []string{"name"},
		fields: []field{
			{"name", text(&m.Name), "The mesh's name: the NATS account every bus user of the mesh lives in."},
			{"id", text(&m.ID), "Which catalogue of the mesh this is, minted once (`uuidgen` prints one) and never changed: every stream and consumer meshc apply writes is marked with it, and apply never changes or prunes what another catalogue marked, even one that shares the mesh's name."},
			{"roles", listOf(func() (*table, func()) {
				s := &Seat{}
				return seatTable(s, "a role"), func() {
					if s.named() {
						m.Roles = append(m.Roles, s)
					}
				}
			}), "The mesh's own seats, with the same fields as a module's seat. Roles may take mesh-* and node-* names; modules may not."},
			{"controller", mapping(controllerTable(&m.Controller)), "The control plane's side of the bus: it files no manifest, so what it submits work to and which events it follows are stated here."},
			{"aliases", pairs(func(k, v Text) { m.Aliases = append(m.Aliases, Alias{Old: k, New: v}) }, "old seat names", "new ones"),
				"Seat renames, old: new. A manifest written against the old name still resolves, with a warning that gives the fix."},
			{"shared-names", texts(&m.SharedNames), "Seats allowed to share a name with the interface they deliver (older roles such as git)."},
			{"approve", listOf(func() (*table, func()) {
				a := &Approval{}
				return approvalTable(a), func() {
					if a.Rule.Pos != (Pos{}) && a.On.Pos != (Pos{}) && a.Reason.Pos != (Pos{}) {
						m.Approvals = append(m.Approvals, *a)
					}
				}
			}), "Breaks a change makes on purpose, each with its reason: `meshc plan/lint --against` reports an approved break as info instead of an error."},
			{"streams", mapping(streamsTable(&m.Streams)), "Settings of the mesh's streams. Their subjects are derived by the mesh and never written here."},
			{"lint", mapping(lintTable(&m.Lint)), "How this catalogue wants lint's rules: one turned off, or at another severity."},
			{"limits", mapping(limitsTable(&m.Limits)), "What each bus user's connections and the mesh's account may hold on the server. Every limit has a default derived from the catalogue; set one only to change it."},
			{"isolation", oneOf(&m.Isolation, IsolationShared, IsolationPerModule), "account-per-module (the default): the mesh's account keeps JetStream and mesh-controller, every other user gets an account of its own (each module instance too), and a module's tools are served from one account of the module's (so each tool call is served once), with exports and imports derived from the grants, so no requester can aim an answer at another principal's subjects. shared-account: every bus user lives in the mesh's one account, which loads and reloads faster, and in which a caller chooses where any answer goes (lint's forgeable-events)."},
			{"auth", oneOf(&m.Auth, AuthPassword, AuthNKey, AuthOperator), "password (the default): users connect with a name and a password, recorded as a bcrypt hash. nkey: users sign with an nkey seed, recorded as its public key; a reload re-checks connected clients far faster. operator: every account is a JWT signed by the operator's key and pushed to the servers over the bus, with no accounts file and no reload; each user connects with credentials signed by a key of its own, recorded as its public half, and its permissions live in its account."},
		},
		check: func(d *decoder, n *yaml.Node, seen map[string]*yaml.Node) {
			if seen["name"] == nil {
				d.failFile("mesh.yaml names no mesh: add `name: <mesh>`; it becomes the NATS account its users live in")
			}
		},
	}
}

func controllerTable(c *Controller) *table {
	return &table{what: "controller", label: "controller.", doc: "The control plane's side of the bus.",
		fields: []field{
			{"submits", texts(&c.Submits), "Roles the controller submits work to (a rebuild after an upgrade, say)."},
			{"follows", texts(&c.Follows), "Events the controller consumes, as EMITTER.EVENT like a module's consumes."},
			{"planner", boolean(&c.Planner), "Whether the mesh has mesh-planner, a bus user that reads what `meshc plan` reads (streams, consumers, apply's records) and can change nothing: the user a pull request's plan job connects as, so it holds no password that writes the bus."},
		},
	}
}

func approvalTable(a *Approval) *table {
	return &table{what: "an approval", label: "an approval's ", doc: "One break made on purpose, with its reason.",
		required: []string{"rule", "on", "reason"},
		fields: []field{
			{"rule", oneOf(&a.Rule, "replay", "retention", "widening", "credential", "contract"), "The breaking rule approved: replay, retention, widening, credential or contract."},
			{"on", text(&a.On), "What the break is about: a consumer STREAM/name, a stream, a bus user, an event or tool MODULE.NAME, a seat, or work SEAT.KIND."},
			{"from", text(&a.From), "What the break changes from, as its finding spells it (retention: `max-age 720h`); left out when the break has no before."},
			{"to", text(&a.To), "What the break changes to, as its finding spells it (retention: `max-age 24h`; replay: the new consumer STREAM/name; widening: what the user may now do); left out when the break has no after (contract: what was offered is gone)."},
			{"reason", text(&a.Reason), "Why the break is wanted, kept in the repository so it is reviewed with the change."},
		},
		check: func(d *decoder, n *yaml.Node, seen map[string]*yaml.Node) {
			a.Pos = d.pos(n)
			for _, k := range []string{"rule", "on", "reason"} {
				if seen[k] == nil {
					d.fail(n, "an approval needs %s: write `{rule: replay|retention|widening|contract, on: <what breaks>, from: <before>, to: <after>, reason: <why it is wanted>}`, as the break's finding gives it", k)
					return
				}
			}
		},
	}
}

func lintTable(l *Lint) *table {
	return &table{what: "lint", label: "lint.", doc: "How this catalogue wants lint's rules.",
		fields: []field{
			{"rules", choices(func(k, v Text) { l.Rules = append(l.Rules, RuleSetting{Rule: k, Severity: v}) }, "rule ids", "off", "info", "warning", "error"),
				"Rule id: off, info, warning or error (`meshc lint --list` names the rules). A rule whose finding means the plan would be wrong (yaml, name, stream-overlap, …) cannot be lowered; a breaking rule is approved in approve: instead."},
		},
	}
}

func streamsTable(s *Streams) *table {
	return &table{what: "streams", label: "streams.", doc: "Settings of the mesh's streams.",
		fields: []field{
			{"events", mapping(streamTable(&s.Events, "events")), "EVENTS: every module's and role's events (mesh.mod.*.event.>, mesh.seat.*.event.>), kept by limits."},
			{"control", mapping(streamTable(&s.Control, "control")), "CONTROL: machines' reports and enrolment requests (mesh.control.report.*, mesh.control.enrol.*), a work queue the controller takes each from once."},
			{"nodes", mapping(streamTable(&s.Nodes, "nodes")), "NODES: the newest declaration of each machine (mesh.node.*.declare), one message per subject."},
			{"seats", mapping(streamTable(&s.Seats, "seats")), "Every SEAT_<SEAT> stream: one work queue per seat that accepts work (mesh.seat.<seat>.accept.>)."},
		},
	}
}

func streamTable(s *StreamSettings, name string) *table {
	what := "streams." + name
	return &table{what: what, label: what + ".", at: &s.Pos, doc: "The knobs a mesh may turn on one of its streams; a knob left out is the stream's default (docs/catalogue.md, \"Limits and their defaults\").",
		fields: []field{
			{"replicas", whole(&s.Replicas, 1, 5), "How many servers keep a copy, 1 to 5 (JetStream's limit); 1 when left out."},
			{"max-age", duration(&s.MaxAge), "How long a message is kept, in the NATS CLI's units (90s, 10m, 720h, 7d, 2w, 1y); no limit when left out."},
			{"max-bytes", whole(&s.MaxBytes, 1, 0), "The most bytes the stream keeps; when it is full the oldest messages go first, except that a seat's queue refuses new work instead. The server reserves it on its disk when it makes the stream."},
			{"max-msg-size", whole(&s.MaxMsgSize, 1, math.MaxInt32), "The largest message the stream takes, in bytes; a larger one is refused to its publisher."},
			{"max-msgs-per-subject", whole(&s.MaxMsgsPerSubject, 1, 0), "The most messages kept per subject, so one busy emitter cannot push everyone else's out (NODES always keeps one: a machine's newest declaration). On events, left out, it is derived so that every event subject at its cap fits in max-bytes; set, it must (limit-too-low)."},
			{"storage", oneOf(&s.Storage, "file", "memory"), "file (the default) or memory."},
			{"ack-wait", duration(&s.AckWait), "How long a consumer of this stream may hold a message before it is delivered again: a build takes minutes, not the default 30 seconds."},
		},
	}
}

func limitsTable(l *Limits) *table {
	return &table{what: "limits", label: "limits.", at: &l.Pos, doc: "What each bus user's connections and the mesh's account may hold on the server; a limit left out is derived from the catalogue (docs/catalogue.md, \"Limits and their defaults\").",
		fields: []field{
			{"connections-per-user", whole(&l.ConnectionsPerUser, 1, 0), fmt.Sprintf("How many connections each bus user may hold at once, %d when left out: an account may hold this many for each of its users.", DefaultConnectionsPerUser)},
			{"max-subscriptions", whole(&l.MaxSubscriptions, 1, 0), fmt.Sprintf("How many subscriptions one connection may hold, %d when left out.", DefaultMaxSubscriptions)},
			{"max-payload", whole(&l.MaxPayload, 1, maxPayload), fmt.Sprintf("The largest message one connection may publish, in bytes, %s when left out; a larger one closes the connection.", Bytes(DefaultMaxPayload))},
			{"max-streams", whole(&l.MaxStreams, 1, 0), fmt.Sprintf("How many streams the mesh's account may hold: its own and apply's bucket, and %d more for streams meshc does not manage when left out.", DefaultRoomForOtherStreams)},
			{"max-consumers", whole(&l.MaxConsumers, 1, 0), "How many consumers each stream of the mesh's account may hold (the server applies the account's limit to each stream): the most any stream needs, at least the server's 1000, when left out."},
			{"max-file", whole(&l.MaxFile, 1, 0), "How many bytes the mesh's account may keep on disk; no account limit when left out, as each stream's max-bytes bounds it. Must hold every file stream's max-bytes, times its replicas."},
			{"max-memory", whole(&l.MaxMemory, 1, 0), "How many bytes the mesh's account may keep in memory; no account limit when left out. Must hold every memory stream's max-bytes, times its replicas."},
		},
	}
}

// maxPayload is the largest payload an account may allow: the server keeps it in 32 bits, and
// warns above 8 MiB on its own payload limit (server/const.go).
const maxPayload = 64 << 20

func (d *decoder) inventory(doc *yaml.Node, inv *Inventory) { d.mapping(doc, inventoryTable(inv)) }

func inventoryTable(inv *Inventory) *table {
	return &table{what: "inventory.yaml", doc: "inventory.yaml: the records — which machines exist, what each runs, and who may call tools. Optional.",
		fields: []field{
			{"nodes", listOf(func() (*table, func()) {
				n := &Node{}
				return nodeTable(n), func() {
					if n.Name.Pos != (Pos{}) {
						inv.Nodes = append(inv.Nodes, n)
					}
				}
			}), "The machines. Each has a bus user node.<machine>, and each module it runs a user mod.<machine>.<module>."},
			{"people", listOf(func() (*table, func()) {
				p := &Person{}
				return personTable(p), func() {
					if p.Name.Pos != (Pos{}) {
						inv.People = append(inv.People, p)
					}
				}
			}), "People who may call tools, each a bus user person.<name>: tools only, no events, no work."},
		},
	}
}

func nodeTable(n *Node) *table {
	return &table{what: "a node", label: "a node's ", doc: "A machine and what it runs.",
		required: []string{"name"},
		fields: []field{
			{"name", named(&n.Name, NameGrammar), "The machine's name: lower-case letters, digits and -."},
			{"runs", nameds(&n.Runs, NameGrammar), "The modules the machine runs, by name."},
			{"enrolling", boolean(&n.Enrolling), "true while the machine holds a live enrolment token: it gets a user enrol.<machine> that may only ask to join."},
		},
		check: func(d *decoder, y *yaml.Node, seen map[string]*yaml.Node) {
			if seen["name"] == nil {
				d.fail(y, "a node needs a name: add `name: <machine>`")
			}
		},
	}
}

func personTable(p *Person) *table {
	return &table{what: "a person", label: "a person's ", doc: "Somebody who may call tools.",
		required: []string{"name"},
		fields: []field{
			{"name", named(&p.Name, NameGrammar), "The person's name: lower-case letters, digits and -."},
			{"may-call", texts(&p.MayCall), "Tools the person may call, as MODULE.TOOL, or \"*\" for every tool of every module."},
		},
		check: func(d *decoder, y *yaml.Node, seen map[string]*yaml.Node) {
			if seen["name"] == nil {
				d.fail(y, "a person needs a name: add `name: <person>`")
			}
		},
	}
}

func (d *decoder) credentials(doc *yaml.Node, c *Credentials) {
	doc = d.resolve(doc)
	if isNull(doc) {
		return
	}
	if doc.Kind != yaml.MappingNode {
		d.fail(doc, "credentials.yaml must be a flat mapping of usernames to bcrypt hashes, not %s", describe(doc))
		return
	}
	// `meshc mint` edits this file line by line (CredentialsEdit) and refuses what it cannot edit
	// faithfully; said here too, so lint reports it before anyone needs to mint.
	const unmintable = "; meshc mint edits credentials.yaml line by line and refuses this: write one `user: \"hash\"` per line"
	if doc.Style&yaml.FlowStyle != 0 {
		d.fail(doc, "credentials.yaml is written as a flow mapping ({...})%s", unmintable)
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if k, v := doc.Content[i], doc.Content[i+1]; k.Anchor != "" || v.Anchor != "" || k.Kind == yaml.AliasNode || v.Kind == yaml.AliasNode {
			d.fail(k, "an anchor or alias (&name, *name) in credentials.yaml%s", unmintable)
		} else if v.Kind == yaml.ScalarNode && v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
			d.fail(v, "a hash written over several lines (| or >)%s", unmintable)
		}
		user, ok := d.text(doc.Content[i], "a username")
		if !ok {
			continue
		}
		hash, ok := d.text(doc.Content[i+1], "the hash of "+user.Value)
		if !ok {
			continue
		}
		if first, dup := c.Hashes[user.Value]; dup {
			d.fail(doc.Content[i], "%s has two recorded hashes (the first at line %d); keep the newer one",
				user.Value, first.Pos.Line)
			continue
		}
		c.Hashes[user.Value] = hash
		c.Users = append(c.Users, user)
	}
}
