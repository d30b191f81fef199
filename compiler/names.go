package compiler

import (
	"strconv"
	"strings"

	"github.com/meshc-dev/meshc/catalogue"
)

// Every name the mesh derives is derived here: subjects, usernames, inbox prefixes, account,
// stream and consumer names (docs/catalogue.md). A manifest never holds a subject, and lint
// compares the same derivations, so the check and the bus cannot drift apart (the mesh once had a
// subscription to `mesh.mod.mesh-build-machine.event.built` — a role's event derived into a
// module's namespace — that every name-based check passed).

// The bus users.

// ControllerUser is the control plane's username: always present, always first.
const ControllerUser = "mesh-controller"

// PlannerUser reads what `meshc plan` reads and changes nothing (controller.planner).
const PlannerUser = "mesh-planner"

// NodeUser, ModuleUserName, ServingUser, EnrolmentUser and PersonUserName are the usernames
// (docs/catalogue.md, "Users").
func NodeUser(node string) string               { return "node." + node }
func ModuleUserName(node, module string) string { return "mod." + node + "." + module }
func EnrolmentUser(node string) string          { return "enrol." + node }
func PersonUserName(person string) string       { return "person." + person }

// UserNames is the set of usernames the catalogue derives, without compiling it: the controller,
// each machine's host agent, one user per module it runs that has a manifest (and its serving user
// when the module serves tools), each enrolling machine's and each person's. What needs only the names — whether a record in credentials.yaml
// still belongs to somebody — asks this rather than a plan. TestUserNamesAreThePlansUsers holds
// it to the compiled plan's users.
func UserNames(ix *catalogue.Index) map[string]bool {
	names := map[string]bool{ControllerUser: true}
	if ix.Catalogue.Mesh != nil && ix.Catalogue.Mesh.Controller.Planner {
		names[PlannerUser] = true
	}
	inv := ix.Catalogue.Inventory
	if inv == nil {
		return names
	}
	for _, n := range inv.Nodes {
		names[NodeUser(n.Name.Value)] = true
		for _, r := range n.Runs {
			if m := ix.Modules[r.Value]; m != nil {
				names[ModuleUserName(n.Name.Value, r.Value)] = true
				if len(m.Tools) > 0 {
					names[ServingUser(n.Name.Value, r.Value)] = true
				}
			}
		}
		if n.Enrolling && n.Name.Value != "" {
			names[EnrolmentUser(n.Name.Value)] = true
		}
	}
	for _, p := range inv.People {
		names[PersonUserName(p.Name.Value)] = true
	}
	return names
}

// ServingUser is the user a module's instance on one machine serves the module's tools as, beside
// its module user: it subscribes the module's tools in the module's queue group and may answer the
// calls it receives, nothing else. A user of its own so that, with an account per principal, the
// calls live in an account where no user of the module makes a request of its own: a call that
// crossed two imports then always says so (docs/nats.md, "Who called a tool").
func ServingUser(node, module string) string { return "serve." + node + "." + module }

// AccountName is the account a machine, a module's instance, an enrolling machine or a person
// lives in when the mesh gives each principal its own: the username itself, so a tool server
// reading the caller's account in the Nats-Request-Info header reads the caller. A derived
// username holds letters, digits, '-' and '.' only, and a mesh's name holds no '.', so no derived
// account can take the mesh's name.
func AccountName(user string) string { return user }

// ModuleAccount is the account a module's tools are served from when the mesh gives each
// principal its own: one account per module holding each instance's serving user, so their queue
// subscriptions to the module's tools compete inside it and a call is served once, and every
// caller — its own module's instances too — imports the tools from it (docs/nats.md, "An account
// per instance, the tools apart"). Two tokens, where every username but the controller's and a
// machine's has three, so it is no user's name.
func ModuleAccount(module string) string { return "mod." + module }

// The subjects.

// ModuleEvent is the subject a module's event is published on.
func ModuleEvent(module, event string) string { return "mesh.mod." + module + ".event." + event }

// SeatEvent is the subject a role's (a seat's) event is published on, whoever holds the seat.
func SeatEvent(seat, event string) string { return "mesh.seat." + seat + ".event." + event }

// Tool is the subject a module's tool is served on.
func Tool(module, tool string) string { return "mesh.mod." + module + ".tool." + tool }

// ToolQueue is the queue group every instance of a module serves the module's tools in. A
// module's user may subscribe its tools only in this group (QueueGrant), so every call goes to
// one instance, whichever machines the module runs on, and the load is spread among them
// (docs/catalogue.md, "Serving a tool").
func ToolQueue(module string) string { return module }

// QueueGrant is a subscribe permission the server reads as "subject, in queue group queue only":
// the subject, a space, the queue. A plain subscription to the subject is refused, and so is one
// in another group.
func QueueGrant(subject, queue string) string { return subject + " " + queue }

// SplitQueue splits a subscribe permission into its subject and its queue group, "" for a
// permission that allows any subscription to the subject.
func SplitQueue(permission string) (subject, queue string) {
	subject, queue, _ = strings.Cut(permission, " ")
	return subject, queue
}

// Work is the subject work of one kind is submitted to a seat on.
func Work(seat, kind string) string { return "mesh.seat." + seat + ".accept." + kind }

// SeatWork is every kind of work for one seat: its work queue's subject.
func SeatWork(seat string) string { return "mesh.seat." + seat + ".accept.>" }

// Declaration is the subject the controller tells a machine what to run on.
func Declaration(node string) string { return "mesh.node." + node + ".declare" }

// Report is the subject a machine reports how applying its declaration went on.
func Report(node string) string { return "mesh.control.report." + node }

// Heartbeat is a machine's liveness signal. Never stored: a stream of heartbeats would compete
// for retention with the messages that matter.
func Heartbeat(node string) string { return "mesh.control.heartbeat." + node }

// Enrolment is the subject a machine holding an enrolment token asks to join on.
func Enrolment(node string) string { return "mesh.control.enrol." + node }

// Inbox is a user's private reply space. Each user's grant names its own, so an answer cannot
// reach the wrong asker.
func Inbox(user string) string { return InboxPrefix(user) + ".>" }

// InboxPrefix is the inbox prefix a user's client connects with (nats.go's CustomInboxPrefix,
// the NATS CLI's --inbox-prefix): the only replies its grant lets it subscribe. A client on the
// library's default prefix is refused its first subscription (docs/nats.md, "Inbox prefixes").
func InboxPrefix(user string) string { return "_INBOX." + user }

// ServiceReplies are the reply subjects the server gives a request that crossed into another
// account through an import, `_R_.<account's prefix>.<random>`: the only replies a call from
// another account carries (docs/nats.md, "Answering calls without allow_responses").
const ServiceReplies = ServiceRepliesPrefix + ">"

// ServiceRepliesPrefix begins every reply the server gives a request crossing an import; a
// client may not give one as a reply itself.
const ServiceRepliesPrefix = "_R_."

// DeliverNodes is where a machine's declaration consumer pushes to.
func DeliverNodes(node string) string { return "_DELIVER.NODES." + node }

// EnrolmentAnswers is where the controller answers an enrolling machine: the enrolment user's own
// inbox, whose address the request carries in its payload (docs/nats.md, "A stream answers the
// requests it captures").
func EnrolmentAnswers(node string) string { return Inbox(EnrolmentUser(node)) }

// The JetStream API and ack subjects a consumer's user needs (docs/nats.md, "What a consumer's user
// needs").

// PullNext is the request that pulls the next messages of a pull consumer.
func PullNext(stream, consumer string) string {
	return "$JS.API.CONSUMER.MSG.NEXT." + stream + "." + consumer
}

// ConsumerInfo is the request that reads a consumer: nats.go's jetstream client makes it before
// it consumes.
func ConsumerInfo(stream, consumer string) string {
	return "$JS.API.CONSUMER.INFO." + stream + "." + consumer
}

// Ack is every ack of one consumer's deliveries, in the form servers send today:
// `$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>`, exactly
// nine tokens. Granted by its exact length, never with a final `>`: every consumer subscribes to
// its own ack subject, so a grant that admits more tokens admits acks of consumers whose names sit
// further along the subject (docs/nats.md, "Ack subjects").
func Ack(stream, consumer string) string {
	return "$JS.ACK." + stream + "." + consumer + ".*.*.*.*.*"
}

// AckV2 is the same in the form a server with js_ack_fc_v2 sends,
// `$JS.ACK.<domain>.<account hash>.<stream>.<consumer>.<the five of Ack>[.…]`: at least eleven
// tokens, which the server's own subscription also requires. A bare `>` after the consumer
// (`$JS.ACK.*.*.S.C.>`) admitted the nine-token `$JS.ACK.S2.C2.S.C.1.1.1`, which consumer C2
// takes as its own ack: with `+NXT` it delivered C2's next message to the sender.
func AckV2(stream, consumer string) string {
	return "$JS.ACK.*.*." + stream + "." + consumer + ".*.*.*.*.>"
}

// JetStreamSubjects are every JetStream API and ack subject: what the mesh's account exports, as
// one service answered by a stream, for the pulls, consumer info and acks other accounts import.
// One export, because the server drops a message that would cross one export twice: an answer a
// pull or an ack sent back into an account cannot then cross it again into another consumer's
// pull (docs/nats.md, "An account per instance, the tools apart").
const JetStreamSubjects = "$JS.>"

// JetStreamInfo is the JetStream API's account-info request. An account without JetStream must
// import it from the account that has it, or the server answers every request of its users twice
// (docs/nats.md, "Traps").
const JetStreamInfo = "$JS.API.INFO"

// MaxControlLine is the longest protocol line (a CONNECT, a PUB and its subject and reply) the
// servers meshc configures take from a client, max_control_line: a longer one closes the
// connection at once, where under the default 4 KiB a publish the client may not make is refused
// and logged with its whole subject, each refusal as long as the subject (docs/nats.md, "Limits
// and floods"). Not lower: an operator-mode client's CONNECT carries its JWT, about 900 bytes
// for a user of the mesh and more for the system user, and 512 refused them all. Names of at
// most 63 and events, tools and kinds of at most 255 characters keep every line meshc's clients
// send with a derived subject below 700.
const MaxControlLine = 2048

// The mesh's own streams.
const (
	EventsStream  = "EVENTS"
	ControlStream = "CONTROL"
	NodesStream   = "NODES"
)

// ApplyBucket is the key-value bucket where meshc apply keeps, on the bus, what must outlive
// one run: the lock that lets one apply at a time change the bus. (A replaced consumer's resume
// point lives on its stream instead: change/resume.go.) On the bus rather than a machine, because two applies may run from
// two machines, and a killed apply's rerun may run anywhere.
const ApplyBucket = "meshc"

// ApplyBucketStream is the stream behind ApplyBucket: apply's own, never in a plan, never
// pruned, not news to a reviewer.
const ApplyBucketStream = "KV_" + ApplyBucket

// ApplyBucketSubjects are the subjects a write to ApplyBucket publishes on: a key-value put is a
// publish to $KV.<bucket>.<key>.
func ApplyBucketSubjects() string { return "$KV." + ApplyBucket + ".>" }

// PlannerStreamReads are the JetStream API's stream reads: names, list, one stream's info.
func PlannerStreamReads() []string {
	return []string{"$JS.API.STREAM.NAMES", "$JS.API.STREAM.LIST", "$JS.API.STREAM.INFO.*"}
}

// PlannerConsumerReads are its consumer reads: a stream's consumers' names and list, one's info.
func PlannerConsumerReads() []string {
	return []string{"$JS.API.CONSUMER.NAMES.*", "$JS.API.CONSUMER.LIST.*", "$JS.API.CONSUMER.INFO.*.*"}
}

// PlannerBucketReads read apply's bucket one key at a time: a direct get, or a message get where
// the bucket does not allow direct ones. No other stream's messages.
func PlannerBucketReads() []string {
	return []string{"$JS.API.DIRECT.GET." + ApplyBucketStream + ".>", "$JS.API.STREAM.MSG.GET." + ApplyBucketStream}
}

// SeatStream is a seat's work queue: the seat name upper-cased with - as _.
func SeatStream(seat string) string {
	return "SEAT_" + strings.ToUpper(strings.ReplaceAll(seat, "-", "_"))
}

// ModuleConsumer is the durable name of a module's one consumer on one machine. A durable name
// may not contain a dot, and the module's ack grant is derived from this same name, so the two
// are built in one place.
func ModuleConsumer(node, module string) string { return node + "_" + module }

// HolderConsumer is the one consumer of a seat's work queue, shared by whoever holds the seat.
const HolderConsumer = "holder"

// The controller's own consumers on CONTROL.
const (
	ReportsConsumer    = "reports"
	EnrolmentsConsumer = "enrolments"
)

// AllEvents is the consumed name for every event of every emitter: the audit logger's.
const AllEvents = "**"

// Consumed is one `consumes` (or controller `follows`) entry, resolved.
type Consumed struct {
	// Emitter is the module or seat named by the first token; empty for "**".
	Emitter string
	// Seat is true when Emitter names a seat (a role, or a seat a module declares).
	Seat bool
	// Renamed is true when Emitter was written with an old seat name; Emitter holds the new one.
	Renamed bool
	// Event is the event name after the emitter; empty when All.
	Event string
	// All is true for a final `**`: every event of Emitter, or of everyone.
	All bool
	// Subjects are the derived filter subjects.
	Subjects []string
}

// Consume derives the subjects of a consumed name: EMITTER.EVENT, EMITTER.** or **. EMITTER is a
// seat when the catalogue declares a seat by that name (or an alias leads to one) and a module
// otherwise: a seat and a module never share a name (lint's name-clash).
func Consume(ix *catalogue.Index, written string) Consumed {
	if written == AllEvents {
		return Consumed{All: true, Subjects: []string{"mesh.mod.*.event.>", "mesh.seat.*.event.>"}}
	}
	emitter, event, _ := strings.Cut(written, ".")
	c := Consumed{Emitter: emitter, Event: event}
	if seat, renamed := ix.SeatName(emitter); ix.Seats[seat] != nil {
		c.Emitter, c.Seat, c.Renamed = seat, true, renamed
	}
	if event == AllEvents {
		c.Event, c.All = "", true
		event = ">"
	}
	if c.Seat {
		c.Subjects = []string{SeatEvent(c.Emitter, event)}
	} else {
		c.Subjects = []string{ModuleEvent(c.Emitter, event)}
	}
	return c
}

// Call splits a MODULE.TOOL name.
func Call(written string) (module, tool string) {
	module, tool, _ = strings.Cut(written, ".")
	return module, tool
}

// EveryTool is what a person's `may-call: ["*"]` means.
const EveryTool = "*"

// Emitted returns every subject a catalogue's declarations publish events on: each module's own
// events and each declared seat's, mapped to a short description of who emits it.
func Emitted(ix *catalogue.Index) map[string]string {
	n := 0
	for _, m := range ix.Catalogue.Modules {
		n += len(m.Emits)
	}
	out := make(map[string]string, n)
	for _, m := range ix.Catalogue.Modules {
		if ix.Modules[m.Name.Value] != m {
			continue
		}
		for _, e := range m.Emits {
			out[ModuleEvent(m.Name.Value, e.Value)] = m.Name.Value
		}
	}
	for _, s := range ix.AllSeats() {
		for _, e := range s.Emits {
			out[SeatEvent(s.Name.Value, e.Value)] = s.Name.Value
		}
	}
	return out
}

// Operator mode's names (docs/nats.md, "Operator mode").

// OwnerTag is the tag every account JWT of a mesh carries, and CatalogueTag the one that names
// which catalogue of the mesh pushed it (mesh.yaml's id): apply changes only accounts tagged with
// this catalogue's id or the mesh's name alone, and removes only those tagged with its id — never
// another tenant's, and never another catalogue's that shares the mesh's name under one operator.
// JWT tags are lower-case.
func OwnerTag(mesh string) string { return OwnerTagPrefix + strings.ToLower(mesh) }

// CatalogueTag is the tag of mesh.yaml's id, "" for a catalogue without one.
func CatalogueTag(id string) string {
	if id == "" {
		return ""
	}
	return CatalogueTagPrefix + strings.ToLower(id)
}

// The tags' prefixes: any tag under them names some mesh or catalogue.
const (
	OwnerTagPrefix     = "meshc.mesh:"
	CatalogueTagPrefix = "meshc.catalogue:"
)

// ProbeRole is the role of the probe key's scope in every account: a user that may do nothing,
// which apply connects as to prove an account it pushed takes connections.
const ProbeRole = "meshc-probe"

// ToolHubAccount is the k-th tool hub of an operator-mode mesh (from 1): an account with no users
// through which a person who may call every tool reaches them (compiler/operator.go). No username
// starts with "tools.", and the mesh's name holds no dot, so no other account can take its name.
func ToolHubAccount(k int) string { return "tools." + strconv.Itoa(k) }
