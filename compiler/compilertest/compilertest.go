// Package compilertest holds plans for tests: hand-made, with every setting meshc derives, so a
// test of diffing, rendering or applying does not depend on a catalogue's compile.
package compilertest

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/compiler"
)

// MeshPlan is a plan with every setting meshc uses (docs/catalogue.md): a limits stream with MaxAge and a
// per-subject cap, work queues, a one-per-subject stream, pull consumers with several filters,
// AckWait and no max-deliver, and a push consumer with a delivery subject and ack wait 5m.
func MeshPlan(replicas int, storage jetstream.StorageType) *compiler.Plan {
	st := func(c jetstream.StreamConfig) compiler.Stream {
		c.Replicas, c.Storage = replicas, storage
		return compiler.Stream{Config: c}
	}
	pull := func(stream, name string, ackWait time.Duration, maxDeliver int, filters ...string) compiler.Consumer {
		return compiler.Consumer{Stream: stream, Config: jetstream.ConsumerConfig{
			Durable: name, AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait,
			MaxDeliver: maxDeliver, FilterSubjects: filters,
		}}
	}
	return &compiler.Plan{
		Account: "novox",
		Streams: []compiler.Stream{
			st(jetstream.StreamConfig{Name: "CONTROL", Subjects: []string{"mesh.control.report.*", "mesh.control.enrol.*"},
				Retention: jetstream.WorkQueuePolicy}),
			st(jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"mesh.mod.*.event.>", "mesh.seat.*.event.>"},
				MaxAge: 720 * time.Hour, MaxMsgsPerSubject: 10000}),
			st(jetstream.StreamConfig{Name: "NODES", Subjects: []string{"mesh.node.*.declare"}, MaxMsgsPerSubject: 1}),
			st(jetstream.StreamConfig{Name: "SEAT_MESH_BUILD_MACHINE", Subjects: []string{"mesh.seat.mesh-build-machine.accept.>"},
				Retention: jetstream.WorkQueuePolicy}),
		},
		Consumers: []compiler.Consumer{
			pull("CONTROL", "enrolments", 0, -1, "mesh.control.enrol.*"),
			pull("CONTROL", "reports", 0, -1, "mesh.control.report.*"),
			pull("EVENTS", "anchor_builder", 0, 0, "mesh.mod.catalog.event.upgraded", "mesh.seat.mesh-build-machine.event.built"),
			pull("EVENTS", "mesh-controller", 0, 0, "mesh.seat.mesh-build-machine.event.built"),
			{Stream: "NODES", Config: jetstream.ConsumerConfig{
				Durable: "anchor", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 5 * time.Minute, MaxDeliver: -1,
				FilterSubject: "mesh.node.anchor.declare", DeliverSubject: "_DELIVER.NODES.anchor",
			}},
			pull("SEAT_MESH_BUILD_MACHINE", "holder", 10*time.Minute, 0, "mesh.seat.mesh-build-machine.accept.>"),
		},
	}
}
