package main

import (
	"context"
	"os"

	"github.com/nats-io/nats.go"
)

// connectServing connects as the user the module's tools are served as on this machine,
// serve.<machine>.<module>, with a credential of its own in NATS_SERVE_PASSWORD, NATS_SERVE_NKEY
// or NATS_SERVE_CREDS: a second connection, which only a module that serves tools opens. The bus
// lets it subscribe the module's tools and answer the calls, nothing else; it has no inbox, so it
// makes no request (a tool call, a publish awaiting its ack) of its own.
func connectServing(module string) (*nats.Conn, error) {
	return dial("serve."+os.Getenv("MESH_MACHINE")+"."+module, "NATS_SERVE_")
}

// serveTool answers the calls of one of the module's tools, mesh.mod.<module>.tool.<tool>, on the
// serving connection. It subscribes in the queue group named like the module: the bus grants the
// subject in that group only, so each call is answered once, by one of the module's instances.
func serveTool(serving *nats.Conn, module, tool string, answer func(request []byte) []byte) (*nats.Subscription, error) {
	return serving.QueueSubscribe("mesh.mod."+module+".tool."+tool, module, func(m *nats.Msg) {
		m.Respond(answer(m.Data))
	})
}

// callTool calls a tool its manifest lists under calls:, on the module's own connection, and
// returns the answer.
func callTool(ctx context.Context, nc *nats.Conn, module, tool string, request []byte) ([]byte, error) {
	answer, err := nc.RequestWithContext(ctx, "mesh.mod."+module+".tool."+tool, request)
	if err != nil {
		return nil, err
	}
	return answer.Data, nil
}
