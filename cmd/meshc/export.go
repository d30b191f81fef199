package main

import (
	"bufio"
	"flag"
	"fmt"

	"github.com/meshc-dev/meshc/asyncapi"
	"github.com/meshc-dev/meshc/catalogue"
)

var exportCommand = command{
	name:    "export",
	summary: "write the catalogue as another tool's document: an AsyncAPI 3.0 one",
	usage: `Usage: meshc export asyncapi [DIR] [--module MODULE] [--server HOST:PORT] [--version V]
`,
	help: `Writes the catalogue in DIR (default: the current directory) on stdout as another tool's
document. One format so far:

  asyncapi   an AsyncAPI 3.0 document, JSON: a server for the bus; a channel per derived
             subject — each module's and seat's events, each tool and its reply, each seat's
             kinds of work — with its address, the manifest's description, the JetStream
             stream it lands in and the durable consumers that read it (x-meshc-stream,
             x-meshc-consumers: AsyncAPI's NATS binding has a queue group and nothing else);
             and every module's operations: send its events, receive what it consumes,
             serve its tools in its queue group (the NATS binding's queue), call the tools it
             calls, submit and take seat work; the controller's too.

The same catalogue gives the same bytes. EventCatalog's AsyncAPI generator reads one document
per service: write one per module with --module and name each in its configuration.

`,
	exits: `Exit status:
  0  written
  1  the catalogue has errors
  2  meshc could not run: a bad flag, an unknown format or module, DIR is not a catalogue
`,
	run:  runExport,
	args: []string{"asyncapi"},
}

func runExport(inv *invocation, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	module := fs.String("module", "", "that `MODULE`'s operations alone, and the channels they use")
	server := fs.String("server", "", "the bus's address in servers, `HOST:PORT` (default localhost:4222)")
	version := fs.String("version", "", "the document's info.version, `V` (default 0.0.0): a release's, from CI")
	rest, exit, done := parseArgs(fs, args, inv)
	if done {
		return exit
	}
	if len(rest) == 0 || rest[0] != "asyncapi" {
		fmt.Fprintln(stderr, "meshc export: name a format: asyncapi")
		return exitCantRun
	}
	dir, exit, ok := catalogueArg(fs, rest[1:], stderr)
	if !ok {
		return exit
	}
	c, plan, code := compileLoaded("export", dir, stderr)
	if plan == nil {
		return code
	}
	w := bufio.NewWriter(stdout)
	if err := asyncapi.Write(w, catalogue.NewIndex(c), plan, asyncapi.Options{Module: *module, Server: *server, Version: *version}); err != nil {
		fmt.Fprintf(stderr, "meshc export: %v\n", err)
		return exitCantRun
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintf(stderr, "meshc export: %v\n", err)
		return exitCantRun
	}
	return exitOK
}
