package main

import (
	"context"
	"os"

	"github.com/nats-io/nats.go/jetstream"
)

// publishEvent announces one of the module's events on its derived subject,
// mesh.mod.<module>.event.<event>, and returns once the stream EVENTS has stored it.
func publishEvent(ctx context.Context, js jetstream.JetStream, module, event string, data []byte) error {
	_, err := js.Publish(ctx, "mesh.mod."+module+".event."+event, data)
	return err
}

// consumeEvents binds the module's one durable consumer, EVENTS/<machine>_<module>, which meshc
// apply made with a filter for every event the manifest consumes, and hands each event to handle.
func consumeEvents(ctx context.Context, js jetstream.JetStream, module string, handle func(jetstream.Msg) error) (jetstream.ConsumeContext, error) {
	consumer, err := js.Consumer(ctx, "EVENTS", os.Getenv("MESH_MACHINE")+"_"+module)
	if err != nil {
		return nil, err
	}
	return handleEach(consumer, handle)
}

// handleEach hands each message a consumer delivers to handle, and acknowledges it once handled:
// until then the consumer holds it, and one given back (Nak) when handle fails is delivered again.
func handleEach(consumer jetstream.Consumer, handle func(jetstream.Msg) error) (jetstream.ConsumeContext, error) {
	return consumer.Consume(func(m jetstream.Msg) {
		if err := handle(m); err != nil {
			m.Nak()
			return
		}
		m.Ack()
	})
}
