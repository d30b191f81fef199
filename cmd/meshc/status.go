package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/meshc-dev/meshc/internal/output"
	"github.com/meshc-dev/meshc/status"
)

var statusCommand = command{
	name:    "status",
	summary: "say what the live bus holds per machine and module: connected, consumers behind, objects as planned",
	usage: `Usage: meshc status [DIR] [--format text|json] [--monitor URL] [connection flags]
`,
	help: `Says what the live bus holds, per machine and module of the catalogue in DIR (default: the
current directory): whether each principal is connected (its connections, their uptime and
messages in and out), each consumer's pending messages, those awaiting an ack, waiting pulls and
redeliveries (a consumer behind says how far), and whether each stream and consumer matches the
plan ("matches", "missing", or "differs:" and the fields meshc apply would change). It reads
as the connection's user, mesh-controller, with its own grants; who is connected comes from the
server's monitoring endpoint, which no grant of the controller's reaches.

`,
	exits: `Exit status:
  0  read
  1  the catalogue has errors
  2  meshc could not run: a bad flag, DIR is not a catalogue, the bus or the monitoring
     endpoint cannot be reached
`,
	run: runStatus,
}

func runStatus(inv *invocation, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	formatName := choice(fs, "format", "text", `text: machine by machine; json: {"bus", "connections", "machines": [{"name", "agent", "modules": [{"user", "module", "connected", "connections", "consumers": [{"stream", "name", "pending", "ack_pending", "waiting", "redelivered", "plan"}]}]}], "others", "streams"}`, output.Names(status.Formats...)...)
	monitor := fs.String("monitor", "", "the server's monitoring endpoint's `URL` (nats-server -m 8222): who is connected; without it, connections are said to be unknown")
	var conn connectFlags
	conn.register(fs)
	rest, exit, done := parseArgs(fs, args, inv)
	if done {
		return exit
	}
	format, err := output.Parse(*formatName, status.Formats...)
	if err != nil {
		fmt.Fprintf(stderr, "meshc status: --format: %v\n", err)
		return exitCantRun
	}
	dir, exit, ok := catalogueArg(fs, rest, stderr)
	if !ok {
		return exit
	}
	plan, code := compileCatalogue("status", dir, stderr)
	if plan == nil {
		return code
	}
	if !conn.explicit() {
		fmt.Fprintf(stderr, "meshc status: %v\n", errNoServer)
		return exitCantRun
	}
	bus, c, exit, ok := connectLive("status", &conn, plan, stderr)
	if !ok {
		return exit
	}
	defer bus.Close()
	ctx, cancel := bus.Watch(context.Background())
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, max(c.RequestTimeout, 10*time.Second)*3)
	defer cancelTimeout()
	var connz status.Connz
	if *monitor != "" {
		connz = status.FromMonitor(*monitor)
	}
	report, err := status.Read(ctx, bus, plan, connz)
	if err != nil {
		fmt.Fprintf(stderr, "meshc status: %v\n", err)
		return exitCantRun
	}
	if err := status.Write(stdout, format, report); err != nil {
		fmt.Fprintf(stderr, "meshc status: writing %s: %v\n", format, err)
		return exitCantRun
	}
	return exitOK
}
