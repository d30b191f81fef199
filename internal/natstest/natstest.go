// Package natstest starts real nats-servers in the test process — loopback, a free port, a
// store of their own, stopped when the test ends — so every claim a test makes about NATS is the
// server's answer, not a mock's, and `go test ./...` needs nothing installed.
package natstest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/internal/natsserver"
)

// JetStream starts a server with JetStream on 127.0.0.1 and a temporary store. edit, when given,
// adjusts the options first (credentials, limits).
func JetStream(t testing.TB, edit ...func(*server.Options)) *server.Server {
	t.Helper()
	opts := &server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true,
	}
	for _, e := range edit {
		e(opts)
	}
	return Start(t, opts)
}

// FromConfig starts a server from a configuration file, as nats-server -c does: the file is
// checked the way the server checks it, and a reload re-reads it. signals leaves the server's
// own signal handling on (SIGHUP reloads), which a test of reloading by signal needs.
func FromConfig(t testing.TB, path string, signals bool) *server.Server {
	t.Helper()
	s, err := natsserver.FromConfig(context.Background(), path, signals, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

// Start starts a server with the given options and waits until it takes connections, the way
// meshc starts its own (internal/natsserver).
func Start(t testing.TB, opts *server.Options) *server.Server {
	t.Helper()
	s, err := natsserver.Start(context.Background(), opts, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

// Connect connects to url as a client that reconnects on its own (a test may restart the
// server) and returns the connection and its JetStream API, both closed when the test ends.
func Connect(t testing.TB, url string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}
