// Package natsserver starts an embedded nats-server, the one way meshc and its tests start one:
// from a configuration file as `nats-server -c` reads it, or from options; waiting until it takes
// connections; and saying why, in the server's own words, when it cannot start.
package natsserver

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// FromConfig reads a configuration file as `nats-server -c` does and starts the server. signals
// leaves the server's own signal handling on (SIGHUP reloads), which only a test of reloading by
// signal wants: an embedded server otherwise shares its signals with the program around it.
func FromConfig(ctx context.Context, path string, signals bool, ready time.Duration) (*server.Server, error) {
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		return nil, fmt.Errorf("the server configuration %s was refused: %w", path, err)
	}
	opts.NoSigs = !signals
	return Start(ctx, opts, ready)
}

// Start starts a server with the given options and waits until it takes connections. When it
// cannot start (a port in use, a store it cannot write) the error is the server's own reason,
// not a bare time-out. Ending ctx (Ctrl-C) stops the wait, and the server.
func Start(ctx context.Context, opts *server.Options, ready time.Duration) (*server.Server, error) {
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("starting the server: %w", err)
	}
	logs := &errorLog{}
	srv.SetLoggerV2(logs, false, false, false)
	go srv.Start()
	deadline := time.Now().Add(ready)
	// Asked in short steps, so an interrupt is heard while a large store is being recovered.
	for !srv.ReadyForConnections(100 * time.Millisecond) {
		stop := func(err error) (*server.Server, error) {
			srv.Shutdown()
			srv.WaitForShutdown()
			return nil, err
		}
		switch {
		case ctx.Err() != nil:
			return stop(fmt.Errorf("interrupted while the embedded server started: %w", context.Cause(ctx)))
		case time.Now().After(deadline) && logs.String() != "":
			return stop(fmt.Errorf("the embedded server did not start in %s: %s", ready, logs.String()))
		case time.Now().After(deadline):
			return stop(fmt.Errorf("the embedded server did not become ready in %s", ready))
		}
	}
	return srv, nil
}

// errorLog keeps the server's errors (its reason for not starting) and drops the rest: the
// bus's chatter is not meshc's output.
type errorLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *errorLog) add(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) < 5 {
		l.lines = append(l.lines, fmt.Sprintf(format, v...))
	}
}

func (l *errorLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "; ")
}

func (l *errorLog) Noticef(string, ...any)    {}
func (l *errorLog) Warnf(string, ...any)      {}
func (l *errorLog) Debugf(string, ...any)     {}
func (l *errorLog) Tracef(string, ...any)     {}
func (l *errorLog) Errorf(f string, v ...any) { l.add(f, v...) }
func (l *errorLog) Fatalf(f string, v ...any) { l.add(f, v...) }
