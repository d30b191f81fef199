package main

import (
	"context"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// submitWork hands work of one kind to a seat, mesh.seat.<seat>.accept.<kind>, and returns once
// the seat's queue has stored it: it waits there until the seat's holder takes it.
func submitWork(ctx context.Context, js jetstream.JetStream, seat, kind string, data []byte) error {
	_, err := js.Publish(ctx, "mesh.seat."+seat+".accept."+kind, data)
	return err
}

// takeWork is the holder's side: it binds the consumer holder of the seat's queue,
// SEAT_<SEAT> (the seat's name upper-cased, - as _), and hands each piece of work to handle. Work
// acknowledged is gone from the queue; work given back is taken again.
func takeWork(ctx context.Context, js jetstream.JetStream, seat string, handle func(jetstream.Msg) error) (jetstream.ConsumeContext, error) {
	queue := "SEAT_" + strings.ToUpper(strings.ReplaceAll(seat, "-", "_"))
	consumer, err := js.Consumer(ctx, queue, "holder")
	if err != nil {
		return nil, err
	}
	return handleEach(consumer, handle)
}
