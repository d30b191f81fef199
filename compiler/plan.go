// Package compiler derives, from a loaded catalogue, everything the bus needs: every subject
// (names.go), every user with its permissions and the declaration behind each grant, every
// stream and consumer, an isolated mesh's accounts with their exports and imports, and in
// operator mode each account's claims. Its product is a Plan, checked once, which emit renders
// and apply asserts. It also compares two plans as a review reads them (users and their grants'
// meanings, reads, accounts) and holds the one subject matcher. It imports catalogue only.
package compiler

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/catalogue"
)

// Plan is the compiled catalogue: what the bus must hold.
type Plan struct {
	// Account is the NATS account the users live in (mesh.yaml's name).
	Account string
	// Users in order: the controller, then each machine followed by its modules (each module's
	// user, then its serving user when it serves tools), then enrolment users, then people.
	Users []User
	// Streams sorted by name.
	Streams []Stream
	// Consumers sorted by stream, then name.
	Consumers []Consumer
	// Accounts is empty when every user lives in Account (isolation: shared-account). With
	// isolation: account-per-module it holds Account first (JetStream, the controller, and what
	// it exports), then one account per module (its instances') and one per other user, in the
	// order their first user comes in Users.
	Accounts []Account
	// Tools are the tools running modules serve, sorted by subject, each with the accounts that
	// may call it: what a tool server checks a caller against.
	Tools []ServedTool
	// Hubs are, in operator mode, the tool hubs through which an account whose users may call
	// every tool reaches them (compiler/operator.go), derived once, sorted by name.
	Hubs []Account
	// NKeys is true when users connect with nkeys (auth: nkey): each User has NKey, not Hash.
	NKeys bool
	// Operator is set when the mesh runs in operator mode (auth: operator): the recorded public
	// keys its account JWTs name. Each User has SigningKey, not Hash.
	Operator *OperatorKeys
	// Catalogue is mesh.yaml's id: which catalogue of the mesh this is, in every object's mark.
	// "" when mesh.yaml has none: the mark then names the mesh alone.
	Catalogue string

	// shared is the one account of a shared-account mesh, with its limits (MeshAccount).
	shared Account
	// hubShare is how many serving accounts a tool hub imports from, when not HubShare
	// (ShareHubs).
	hubShare int

	// checked is set by Check when the plan passes it.
	checked bool
	// bare is set for a plan compiled without its explanations (CompileBare).
	bare bool
}

// Explained reports whether the plan holds its explanations: each user's Grants and each
// consumer's Reads. A plan from CompileBare does not; explaining a permission or reviewing a
// change needs one from Compile.
func (p *Plan) Explained() bool { return !p.bare }

// User returns the plan's user of that name, or nil.
func (p *Plan) User(name string) *User {
	for i := range p.Users {
		if p.Users[i].Name == name {
			return &p.Users[i]
		}
	}
	return nil
}

// OwnerKey is the metadata key that marks a stream or consumer as this mesh's: its value is the
// mesh's name. An account holds more than the mesh — KV and object-store buckets are streams too,
// and other applications and tools add their own streams and consumers (docs/nats.md,
// "Streams") — so apply changes and prunes only what carries the mark, and never deletes
// anything else.
const OwnerKey = "meshc.mesh"

// CatalogueKey is the metadata key that says which catalogue of the mesh marked an object: its
// value is mesh.yaml's id. Two catalogues that share a mesh name (two repositories, a fork, a
// test copy) would otherwise take each other's objects for their own, and prune them.
const CatalogueKey = "meshc.catalogue"

// Ownership is what an object's mark says about it, to one plan.
type Ownership int

const (
	// Unmarked: no mark. Another application's, or made before meshc marked what it made;
	// the plan's own names are adopted only when asked (apply --adopt).
	Unmarked Ownership = iota
	// Ours: this catalogue's mark, or this mesh's name alone (a mark from before catalogues
	// had an id, upgraded on the object's next update).
	Ours
	// OtherMesh: another mesh's mark. Never changed or deleted.
	OtherMesh
	// OtherCatalogue: this mesh's name with another catalogue's id. Never changed or deleted.
	OtherCatalogue
)

// Ownership says whose an object is by its metadata.
func (p *Plan) Ownership(md map[string]string) Ownership {
	mesh, marked := md[OwnerKey]
	switch {
	case !marked:
		return Unmarked
	case mesh != p.Account:
		return OtherMesh
	}
	if id, ok := md[CatalogueKey]; ok && id != p.Catalogue {
		return OtherCatalogue
	}
	return Ours
}

// Whose says whose mark an object carries, in words, for one that is not the plan's.
func Whose(md map[string]string) string {
	if id, ok := md[CatalogueKey]; ok {
		return fmt.Sprintf("catalogue %q of mesh %q", id, md[OwnerKey])
	}
	return fmt.Sprintf("mesh %q", md[OwnerKey])
}

// Mark gives every stream and consumer of the plan the mesh's ownership mark, keeping any other
// metadata. Compile calls it; apply calls it again on what it sends, so a hand-made plan is
// marked too.
func (p *Plan) Mark() {
	// An object with no metadata of its own, nearly every one, shares one mark: Marked never
	// changes the metadata it is given, and nothing changes a plan's in place (a copy is made
	// to add to it), so one map serves them all rather than a map per consumer.
	mark := p.Marked(nil)
	marked := func(md map[string]string) map[string]string {
		if len(md) == 0 {
			return mark
		}
		return p.Marked(md)
	}
	for i := range p.Streams {
		p.Streams[i].Config.Metadata = marked(p.Streams[i].Config.Metadata)
	}
	for i := range p.Consumers {
		p.Consumers[i].Config.Metadata = marked(p.Consumers[i].Config.Metadata)
	}
}

// Marked returns metadata carrying this catalogue's mark: md itself when it has it exactly, else
// a copy with it set (md is never changed). A mark naming the mesh alone gains the catalogue.
func (p *Plan) Marked(md map[string]string) map[string]string {
	mesh, marked := md[OwnerKey]
	id, hasID := md[CatalogueKey]
	if marked && mesh == p.Account && hasID == (p.Catalogue != "") && id == p.Catalogue {
		return md
	}
	out := make(map[string]string, len(md)+2)
	for k, v := range md {
		out[k] = v
	}
	out[OwnerKey] = p.Account
	delete(out, CatalogueKey)
	if p.Catalogue != "" {
		out[CatalogueKey] = p.Catalogue
	}
	return out
}

// Owns reports whether an object's metadata carries this catalogue's mark (or this mesh's name
// alone, from before catalogues had an id).
func (p *Plan) Owns(metadata map[string]string) bool { return p.Ownership(metadata) == Ours }

// UserKind is what a bus user is in the mesh.
type UserKind string

const (
	KindController UserKind = "controller"
	// KindPlanner is mesh-planner: the JetStream API's reads, in the mesh's account.
	KindPlanner UserKind = "planner"
	KindNode    UserKind = "node"
	KindModule  UserKind = "module"
	// KindServer is a module instance's serving user: its tools, and nothing else.
	KindServer    UserKind = "server"
	KindEnrolment UserKind = "enrolment"
	KindPerson    UserKind = "person"
)

// User is one bus username and exactly what it may do. Permissions are derived on every compile,
// never stored: a stored list would be a second account of a user's authority, able to disagree
// with the declarations it came from.
type User struct {
	Name string
	Kind UserKind
	// Source is the declaration the user comes from, for findings about it.
	Source catalogue.Pos
	// Publish and Subscribe are never empty: a user with nothing to publish gets Deny [">"],
	// because to the server an empty allow list means everything (docs/nats.md, "An empty allow
	// list means everything").
	Publish   Permission
	Subscribe Permission
	// AllowResponses is one reply to a request actually received; only serving users in one
	// account get it.
	AllowResponses bool
	// Hash is the recorded bcrypt hash, or "" when credentials.yaml has none for this user (or
	// the mesh uses nkeys).
	Hash string
	// Module is the module a module user runs or a serving user serves ("" for every other
	// kind), so nothing parses it back out of the username.
	Module string
	// Grants are Publish, Subscribe and AllowResponses one declaration at a time, each with
	// where it was declared: for explaining a permission, never emitted.
	Grants Grants
	// NKey is the recorded nkey public key when the mesh uses nkeys, or "".
	NKey string
	// Account is the account the user lives in: the plan's Account, its module's, or its own.
	Account string
	// SigningKey is the recorded public key of the user's own scoped signing key in operator
	// mode, or "": its account's JWT lists it with the user's permissions as its template.
	SigningKey string

	// calls are the subjects of the tools the user's declarations name one by one (a module's
	// `calls`, a person's `may-call`), and callsEvery is a person's `may-call: ["*"]`: recorded
	// as derived, so the passes that connect callers to served tools never read them back out of
	// the user's grants.
	calls      []string
	callsEvery bool
	// jetStream is set for a user that makes JetStream API requests: the pull and info requests
	// of a consumer it reads.
	jetStream bool
}

// Credential is what the server checks the user by: its recorded hash or public key, "" when
// none is recorded.
func (u *User) Credential() string {
	switch {
	case u.NKey != "":
		return u.NKey
	case u.SigningKey != "":
		return u.SigningKey
	}
	return u.Hash
}

// HasInbox reports whether the user may receive replies in its own inbox (InboxPrefix): every
// user but a serving user, which answers the calls it receives and makes no request, so whatever
// connects as it needs no inbox prefix and has none to prove.
func (u *User) HasInbox() bool { return slices.Contains(u.Subscribe.Allow, Inbox(u.Name)) }

// Permission is an allow and a deny list of subjects, each sorted and without duplicates.
type Permission struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// Stream is one stream of the plan, in the JetStream API's own configuration type.
type Stream struct {
	Config jetstream.StreamConfig
	// Source is the declaration the stream comes from (mesh.yaml for the mesh's own, the
	// declaring manifest for a seat's work queue).
	Source catalogue.Pos
}

// Consumer is one durable consumer of the plan.
type Consumer struct {
	Stream string
	Config jetstream.ConsumerConfig
	Source catalogue.Pos
	// User is the one user that pulls or receives it, "" for a seat's holder consumer, which
	// whoever holds the seat shares.
	User string
	// Reads are what a module's (or the controller's) consumer reads, one `consumes` (or
	// `follows`) entry at a time, each with its filter subjects and what it means ("read
	// registry's image.pushed"): what a review of a new consumer says, never emitted.
	Reads []Grant
}

// ConsumerName is the name the server knows a consumer by: its durable name, or its name.
func ConsumerName(c jetstream.ConsumerConfig) string { return cmp.Or(c.Durable, c.Name) }
