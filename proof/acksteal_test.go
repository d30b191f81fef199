package proof

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestNoPrincipalStealsAnotherConsumersMessagesThroughAnAck attacks every ack grant the compiler
// derives with its whole match set. Every consumer subscribes to its v1 ack form
// `$JS.ACK.<S>.<C>.*.*.*.*.*`; a newer-form grant ending in a bare `>` (`$JS.ACK.*.*.<S1>.<C1>.>`)
// also admits the 9-token `$JS.ACK.<S2>.<C2>.<S1>.<C1>.1.1.1`, which consumer C2 takes as an ack
// of its own. With the body `+NXT {"batch":1}` and a reply in the sender's inbox, C2 delivers its
// next message to the sender: another module's events, a seat's work, the controller's reports
// and enrolments — read by principals never granted them, with no violation raised (docs/nats.md,
// "Ack subjects").
//
// Every principal that owns a consumer tries it against every pull consumer it does not own, in
// both ack forms and both isolations; a principal with no consumer tries it too. Each attempt must
// be the server's Permissions Violation, nothing may arrive at the thief, and the victim's
// consumer must not have delivered anything.
func TestNoPrincipalStealsAnotherConsumersMessagesThroughAnAck(t *testing.T) {
	t.Parallel()
	for _, isolation := range inLoop(isolations) {
		for _, flags := range []string{"", "feature_flags {\n  js_ack_fc_v2: true\n}\n"} {
			name := isolation + "/v1 acks"
			if flags != "" {
				name = isolation + "/js_ack_fc_v2"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				proveNoAckSteal(t, startBus(t, "testdata/proof.txtar", flags, isolation))
			})
		}
	}
}

// consumerRef names one consumer of the proof's bus.
type consumerRef struct{ stream, consumer string }

func proveNoAckSteal(t *testing.T, b *bus) {
	// Something waits on every pull consumer, so a steal would deliver it.
	controller := b.connect(t, "mesh-controller")
	upgraded := b.connect(t, "mod.anchor.catalog").publishesAndIsStored(t, "mesh.mod.catalog.event.upgraded", "EVENTS")
	builder := b.connect(t, "mod.laptop.builder")
	built := builder.publishesAndIsStored(t, "mesh.seat.mesh-build-machine.event.built", "EVENTS")
	push := builder.publishesAndIsStored(t, "mesh.seat.image-store.accept.push", "SEAT_IMAGE_STORE")
	build := controller.publishesAndIsStored(t, "mesh.seat.mesh-build-machine.accept.build", "SEAT_MESH_BUILD_MACHINE")
	report := b.connect(t, "node.anchor").publishesAndIsStored(t, "mesh.control.report.anchor", "CONTROL")
	request, _ := json.Marshal(map[string]string{"answer": "_INBOX.enrol.laptop.x"})
	b.connect(t, "enrol.laptop").publishesAndIsStoredWith(t, "mesh.control.enrol.laptop", "CONTROL", string(request))

	victims := []consumerRef{
		{"EVENTS", "laptop_notifier"},         // a module's events
		{"EVENTS", "anchor_catalog"},          // a module's events
		{"EVENTS", "mesh-controller"},         // the controller's followed events
		{"SEAT_IMAGE_STORE", "holder"},        // a module-declared seat's work
		{"SEAT_MESH_BUILD_MACHINE", "holder"}, // a role's work
		{"CONTROL", "reports"},                // the control plane's reports
		{"CONTROL", "enrolments"},             // the control plane's enrolments
	}
	thieves := []struct {
		user string
		own  []consumerRef // the consumers whose ack grants the user holds
	}{
		{"mod.anchor.catalog", []consumerRef{{"EVENTS", "anchor_catalog"}}},
		{"mod.anchor.registry", []consumerRef{{"SEAT_IMAGE_STORE", "holder"}}},
		{"mod.laptop.builder", []consumerRef{{"SEAT_MESH_BUILD_MACHINE", "holder"}}},
		{"mod.laptop.notifier", []consumerRef{{"EVENTS", "laptop_notifier"}}},
		{"node.anchor", []consumerRef{{"NODES", "anchor"}}},
		// No consumer of their own: the attempt names a consumer they might pretend to own.
		{"person.alice", []consumerRef{{"EVENTS", "laptop_notifier"}}},
		{"enrol.laptop", []consumerRef{{"CONTROL", "enrolments"}}},
	}
	for _, thief := range thieves {
		t.Run(thief.user, func(t *testing.T) {
			c := b.connect(t, thief.user)
			inbox := c.nc.NewInbox()
			stolen := c.subscribes(t, inbox)
			for _, own := range thief.own {
				for _, v := range victims {
					if v == own {
						continue
					}
					before := controller.consumerInfo(t, v.stream, v.consumer)
					// The v1 ack of victim v, carrying the thief's own stream and consumer where a
					// v2 ack carries its domain and account hash.
					subject := fmt.Sprintf("$JS.ACK.%s.%s.%s.%s.1.1.1", v.stream, v.consumer, own.stream, own.consumer)
					if err := c.nc.PublishRequest(subject, inbox, []byte(`+NXT {"batch":1}`)); err != nil {
						t.Fatal(err)
					}
					c.refused(t, "Publish", subject)
					after := controller.consumerInfo(t, v.stream, v.consumer)
					if after.Delivered.Consumer != before.Delivered.Consumer || after.NumAckPending != before.NumAckPending {
						t.Fatalf("%s steered %s/%s through %s: delivered %d → %d, awaiting ack %d → %d",
							thief.user, v.stream, v.consumer, subject,
							before.Delivered.Consumer, after.Delivered.Consumer, before.NumAckPending, after.NumAckPending)
					}
				}
			}
			receivesNothing(t, stolen)
		})
	}
	// The consumers still deliver to their owners: the attack left nothing parked.
	t.Run("every victim still delivers to its owner", func(t *testing.T) {
		b.connect(t, "mod.laptop.builder").pullsAndAcksTwice(t, "SEAT_MESH_BUILD_MACHINE", "holder", build)
		b.connect(t, "mod.anchor.registry").pullsAndAcksTwice(t, "SEAT_IMAGE_STORE", "holder", push)
		b.connect(t, "mod.laptop.notifier").pullsAndAcksTwice(t, "EVENTS", "laptop_notifier", upgraded)
		b.connect(t, "mod.anchor.catalog").pullsAndAcksTwice(t, "EVENTS", "anchor_catalog", built)
		controller.pullsAndAcksTwice(t, "EVENTS", "mesh-controller", built)
		controller.pullsAndAcksTwice(t, "CONTROL", "reports", report)
		controller.pullsAndAcksTwice(t, "CONTROL", "enrolments", string(request))
	})
}
