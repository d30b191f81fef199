// Package compiler derives, from a loaded catalogue, everything the bus needs: every subject,
// every user with its permissions, every stream and every consumer. Its product is a Plan,
// which emit renders and apply asserts. It imports catalogue only.
package compiler

import (
	"github.com/nats-io/nats.go/jetstream"

	"meshc/catalogue"
)

// Plan is the compiled catalogue: what the bus must hold.
type Plan struct {
	// Account is the NATS account the users live in (mesh.yaml's name).
	Account string
	// Users in SPEC order: the controller, then each machine followed by its modules, then
	// enrolment users, then people.
	Users []User
	// Streams sorted by name.
	Streams []Stream
	// Consumers sorted by stream, then name.
	Consumers []Consumer
}

// User returns the plan's user of that name, or nil.
func (p *Plan) User(name string) *User {
	for i := range p.Users {
		if p.Users[i].Name == name {
			return &p.Users[i]
		}
	}
	return nil
}

// UserKind is what a bus user is in the mesh.
type UserKind string

const (
	KindController UserKind = "controller"
	KindNode       UserKind = "node"
	KindModule     UserKind = "module"
	KindEnrolment  UserKind = "enrolment"
	KindPerson     UserKind = "person"
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
	// because to the server an empty allow list means everything (NATS-FACTS §10).
	Publish   Permission
	Subscribe Permission
	// AllowResponses is one reply to a request actually received; only tool servers get it.
	AllowResponses bool
	// Hash is the recorded bcrypt hash, or "" when credentials.yaml has none for this user.
	Hash string
}

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
}
