// Package catalogue loads a mesh's catalogue — mesh.yaml, modules/**/*.yaml, inventory.yaml and
// credentials.yaml — into one model, strictly, with the position of every value.
//
// It judges structure only: unknown keys, wrong types, unreadable files. Whether a value is a
// good name, or agrees with the rest of the catalogue, is package lint's business, because one
// bad value gets one finding from the most specific rule, and only lint sees every rule.
//
// It imports no other meshc package but small helpers under internal/: everything else reads
// this model.
package catalogue

import "time"

// Text is a scalar value from a catalogue file, with where it was written.
type Text struct {
	Value string
	Pos   Pos
}

func (t Text) String() string { return t.Value }

// Catalogue is everything meshc reads, as loaded.
type Catalogue struct {
	// Dir is the catalogue's directory as given on the command line.
	Dir string
	// Mesh is mesh.yaml. Never nil after a successful Load.
	Mesh *Mesh
	// Modules are the manifests, in path order.
	Modules []*Module
	// Inventory is inventory.yaml; nil when the catalogue has none.
	Inventory *Inventory
	// Credentials is credentials.yaml; nil when the catalogue has none (and then no user is told
	// its hash is missing: one finding says the file is: docs/rules.md, "credential-missing").
	Credentials *Credentials
	// Keys is keys.yaml, the public keys of a mesh with auth: operator; nil when there is none.
	Keys *Keys
	// Ignores are the `# meshc:ignore RULE reason` comments of every file, in path order.
	Ignores []Ignore
	// Files are the SHA-256 of every file the loader read (mesh.yaml, the manifests,
	// inventory.yaml, credentials.yaml, keys.yaml), by path in the catalogue, as it read them:
	// what a saved plan records, so applying it later names each file that moved.
	Files map[string]string
}

// Ignore is one `# meshc:ignore RULE reason` comment. On a line of its own it silences the
// finding of RULE on the next line that holds YAML; after a value on the same line, the finding
// on that line.
type Ignore struct {
	// Pos is where the comment's # is.
	Pos Pos
	// Rule is the rule id as written; Reason the rest of the comment, "" when none was given.
	Rule   string
	Reason string
	// Line is the line whose finding it silences.
	Line int
}

// Mesh is mesh.yaml: the mesh itself.
type Mesh struct {
	File string
	// Name is the NATS account the users live in.
	Name Text
	// ID says which catalogue of the mesh this is: every stream and consumer apply writes is
	// marked with it, so two catalogues that share a name never take each other's objects.
	ID         Text
	Roles      []*Seat
	Controller Controller
	// Aliases are seat renames, old to new, in file order.
	Aliases     []Alias
	SharedNames []Text
	Streams     Streams
	// Isolation is IsolationShared or IsolationPerModule; empty means IsolationPerModule.
	Isolation Text
	// Auth is AuthPassword, AuthNKey or AuthOperator; empty means AuthPassword.
	Auth Text
	// Approvals are breaks a change makes on purpose, each with its reason: kept in the
	// repository, so the approval is reviewed with the change and stays in its history.
	Approvals []Approval
	// Lint is how this catalogue wants lint's rules: a rule turned off, or at another severity.
	Lint Lint
	// Limits bound what each bus user and the mesh's account may hold on the server.
	Limits Limits
}

// Limits are mesh.yaml's limits: what each bus user's connections and the mesh's account may
// hold. Zero means the derived default (docs/catalogue.md, "Limits and their defaults").
type Limits struct {
	Pos Pos
	// ConnectionsPerUser is how many connections each bus user may hold at once.
	ConnectionsPerUser int64
	// MaxSubscriptions and MaxPayload bound each connection.
	MaxSubscriptions int64
	MaxPayload       int64
	// MaxStreams, MaxConsumers, MaxFile and MaxMemory bound the mesh's account's JetStream.
	MaxStreams   int64
	MaxConsumers int64
	MaxFile      int64
	MaxMemory    int64
}

// Lint is mesh.yaml's lint: settings.
type Lint struct {
	// Rules sets rules' severities by id, in file order: off, info, warning or error.
	Rules []RuleSetting
}

// RuleSetting is one row of lint.rules: a rule id and what the catalogue wants it to be.
type RuleSetting struct {
	Rule, Severity Text
}

// Approval is one intentional break: the breaking rule (replay, retention, widening,
// contract), what it is about — a consumer STREAM/name, a stream, a bus user, an event or tool
// MODULE.NAME, a seat, or work SEAT.KIND — the before and after it was given for, as the
// break's finding spells them, and why it is wanted. It approves that break alone.
type Approval struct {
	Pos      Pos
	Rule     Text
	On       Text
	From, To Text
	Reason   Text
}

// The values of mesh.yaml's isolation and auth.
const (
	// IsolationShared puts every bus user in the mesh's one account.
	IsolationShared = "shared-account"
	// IsolationPerModule gives every principal but the controller an account of its own, each
	// module instance too, and serves a module's tools from an account of the module's: the
	// default. (The name is kept from when a module's instances shared one.)
	IsolationPerModule = "account-per-module"
	// AuthPassword: each user connects with a name and a password, recorded as a bcrypt hash.
	AuthPassword = "password"
	// AuthNKey: each user connects by signing with an nkey seed, recorded as its public key.
	AuthNKey = "nkey"
	// AuthOperator: accounts are JWTs signed by the operator's key and pushed to the servers'
	// resolver; each user connects with a JWT signed by a scoped key of its account, recorded
	// as that key's public half, and its permissions live in the account (docs/nats.md,
	// "Operator mode").
	AuthOperator = "operator"
)

// PerModule reports whether the mesh gives every module and every other principal an account of
// its own: unless mesh.yaml says shared-account.
func (m *Mesh) PerModule() bool { return m.Isolation.Value != IsolationShared }

// NKeys reports whether the mesh's users connect with nkeys.
func (m *Mesh) NKeys() bool { return m.Auth.Value == AuthNKey }

// Operator reports whether the mesh runs in operator mode: accounts pushed as JWTs.
func (m *Mesh) Operator() bool { return m.Auth.Value == AuthOperator }

// Controller is the control plane's own side of the mesh: it files no manifest, so which roles
// it submits work to and which events it follows have to be stated.
type Controller struct {
	Submits []Text
	Follows []Text
	// Planner asks for mesh-planner, a bus user that reads what `meshc plan` reads and can
	// change nothing: a pull request's plan job then holds no password that can write the bus.
	Planner bool
}

// Alias is one seat rename: a manifest written against Old means New.
type Alias struct {
	Old, New Text
}

// Streams holds the settings of the mesh's streams. Their subjects are derived, never written.
type Streams struct {
	Events, Control, Nodes, Seats StreamSettings
}

// StreamSettings are the knobs a mesh may turn on one of its streams. Zero means the mesh's
// default for that stream (docs/catalogue.md, "Limits and their defaults"), or for Replicas 1 and for MaxAge none.
type StreamSettings struct {
	Pos               Pos
	Replicas          int
	MaxAge            time.Duration
	MaxBytes          int64
	MaxMsgSize        int64
	MaxMsgsPerSubject int64
	// Storage is "file" or "memory"; empty means file.
	Storage Text
	// AckWait applies to the consumers on this stream.
	AckWait time.Duration
}

// Seat is a role something holds: declared by a module, or by the mesh itself (a role).
type Seat struct {
	Name Text
	// Scope is "mesh" (one holder per mesh) or "node" (one holder per machine).
	Scope Text
	// Delivers is the interface its holder must provide; empty when it promises none.
	Delivers Text
	// Accepts are the kinds of work that may be submitted to it.
	Accepts []Text
	// Emits are the events the seat announces, whoever holds it.
	Emits []Text
	// Declarer is the module that declared the seat, or nil for a role in mesh.yaml.
	Declarer *Module
}

// Role reports whether the seat is one of the mesh's own, declared in mesh.yaml.
func (s *Seat) Role() bool { return s.Declarer == nil }

// Marker reports whether the seat promises nothing: it only says which module is, for
// instance, this machine's packet filter. Valid, and common among node-scoped seats.
func (s *Seat) Marker() bool {
	return s.Delivers.Value == "" && len(s.Accepts) == 0 && len(s.Emits) == 0
}

// Module is one manifest.
type Module struct {
	File        string
	Name        Text
	Description Text
	Provides    []Text
	Requires    []Text
	// Emits are local event names: never a subject, never prefixed with the module.
	Emits []Text
	// Consumes are EMITTER.EVENT names, EMITTER a module or a seat, with a final ** allowed.
	Consumes []Text
	Tools    []Text
	// Calls are MODULE.TOOL names.
	Calls  []Text
	Seats  []*Seat
	Claims []Text
	Uses   []Text
	// Files are where the mesh writes files for this module, by kind, in file order.
	Files []FileRequest
}

// FileRequest is one entry of a module's `files`: a kind of file the mesh writes, and where.
type FileRequest struct {
	Kind Text
	Path Text
}

// Inventory is inventory.yaml: the records of machines and people.
type Inventory struct {
	File   string
	Nodes  []*Node
	People []*Person
}

// Node is a machine and what it runs.
type Node struct {
	Name Text
	Runs []Text
	// Enrolling is true while the machine holds a live enrolment token.
	Enrolling bool
}

// Person is somebody who may call tools.
type Person struct {
	Name Text
	// MayCall are MODULE.TOOL names, or "*" for every tool.
	MayCall []Text
}

// Credentials is credentials.yaml: recorded bcrypt hashes by bus username.
type Credentials struct {
	File string
	// Hashes maps a username to its recorded hash.
	Hashes map[string]Text
	// Users are the usernames in file order, for positions.
	Users []Text
}

// Hash returns the recorded hash for a user, and whether there is one.
func (c *Credentials) Hash(user string) (string, bool) {
	if c == nil {
		return "", false
	}
	h, ok := c.Hashes[user]
	return h.Value, ok
}
