package main

import (
	"context"

	"github.com/nats-io/nats.go"
)

// serveTool answers the calls of one of the module's tools, mesh.mod.<module>.tool.<tool>. It
// subscribes in the queue group named like the module: the bus grants the subject in that group
// only, so each call is answered once, by one of the module's instances.
func serveTool(nc *nats.Conn, module, tool string, answer func(request []byte) []byte) (*nats.Subscription, error) {
	return nc.QueueSubscribe("mesh.mod."+module+".tool."+tool, module, func(m *nats.Msg) {
		m.Respond(answer(m.Data))
	})
}

// callTool calls another module's tool, one its manifest lists under calls:, and returns the
// answer.
func callTool(ctx context.Context, nc *nats.Conn, module, tool string, request []byte) ([]byte, error) {
	answer, err := nc.RequestWithContext(ctx, "mesh.mod."+module+".tool."+tool, request)
	if err != nil {
		return nil, err
	}
	return answer.Data, nil
}
