// Package compilertest holds plans for tests: hand-made, with every setting meshc derives, so a
// test of diffing, rendering or applying does not depend on a catalogue's compile.
package compilertest

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
)

// MeshPlan is a plan with every setting meshc uses (docs/catalogue.md): a limits stream with MaxAge and a
// per-subject cap, work queues, a one-per-subject stream, each stream's limits as a mesh.yaml that
// sets none gets them (a work queue refusing new work when full), pull consumers with several
// filters, AckWait, no max-deliver and a longest pull, and a push consumer with a delivery
// subject and ack wait 5m.
func MeshPlan(replicas int, storage jetstream.StorageType) *compiler.Plan {
	st := func(c jetstream.StreamConfig, limits catalogue.StreamDefaults) compiler.Stream {
		c.Replicas, c.Storage = replicas, storage
		c.MaxBytes, c.MaxMsgSize = limits.MaxBytes, int32(limits.MaxMsgSize)
		if c.MaxMsgsPerSubject == 0 {
			c.MaxMsgsPerSubject = limits.MaxMsgsPerSubject
		}
		if limits.DiscardNew {
			c.Discard = jetstream.DiscardNew
		}
		return compiler.Stream{Config: c}
	}
	pull := func(stream, name string, ackWait time.Duration, maxDeliver int, filters ...string) compiler.Consumer {
		return compiler.Consumer{Stream: stream, Config: jetstream.ConsumerConfig{
			Durable: name, AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait,
			MaxDeliver: maxDeliver, FilterSubjects: filters, MaxRequestExpires: compiler.MaxPullExpires,
		}}
	}
	return &compiler.Plan{
		Account: "novox",
		Streams: []compiler.Stream{
			st(jetstream.StreamConfig{Name: "CONTROL", Subjects: []string{"mesh.control.report.*", "mesh.control.enrol.*"},
				Retention: jetstream.WorkQueuePolicy}, catalogue.ControlDefaults),
			st(jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"mesh.mod.*.event.>", "mesh.seat.*.event.>"},
				MaxAge: 720 * time.Hour, MaxMsgsPerSubject: 10000}, catalogue.EventsDefaults),
			st(jetstream.StreamConfig{Name: "NODES", Subjects: []string{"mesh.node.*.declare"}, MaxMsgsPerSubject: 1}, catalogue.NodesDefaults),
			st(jetstream.StreamConfig{Name: "SEAT_MESH_BUILD_MACHINE", Subjects: []string{"mesh.seat.mesh-build-machine.accept.>"},
				Retention: jetstream.WorkQueuePolicy}, catalogue.SeatsDefaults),
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
