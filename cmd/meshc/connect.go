package main

import (
	"errors"
	"flag"
	"os"
	"strconv"

	"github.com/meshc-dev/meshc/apply/wire"
	"github.com/meshc-dev/meshc/compiler"
)

// connectFlags are the connection settings of the NATS CLI (natscli v0.5.0), read the way it
// reads them, so a setup that works for `nats` works for meshc unchanged: a flag, else its
// NATS_* variable, overrides the same property of the context (--context, else NATS_CONTEXT,
// else the CLI's selected context). The context itself is read by jsm.go's natscontext, the
// package the CLI uses, so every field it honours (creds, nkey, user JWT and seed, token, TLS,
// inbox_prefix, JetStream domain and API prefix, `~` and $VARIABLES in paths) means the same here.
type connectFlags struct {
	wire.Settings
	// flags is where they were registered: the environment fills them through it.
	flags *flag.FlagSet
}

// The variables the NATS CLI reads, one per flag. NATS_CONTEXT picks the context.
var connectEnv = []struct{ flag, env string }{
	{"server", "NATS_URL"}, {"user", "NATS_USER"}, {"password", "NATS_PASSWORD"},
	{"token", "NATS_TOKEN"}, {"creds", "NATS_CREDS"}, {"nkey", "NATS_NKEY"},
	{"jwt", "NATS_JWT"}, {"seed", "NATS_SEED"}, {"tlscert", "NATS_CERT"},
	{"tlskey", "NATS_KEY"}, {"tlsca", "NATS_CA"}, {"timeout", "NATS_TIMEOUT"},
	{"context", "NATS_CONTEXT"},
}

// connectIntro heads the connection flags in a command's help: how each setting is read, and
// for a command that connects as one user (not verify, which connects as each principal) the
// context that may give them all.
func connectIntro(fs *flag.FlagSet) string {
	if f := fs.Lookup("user"); f == nil || !isConnect(f) {
		return "Connection: where the bus is and how to reach it. For each setting the flag wins, else its\nNATS_* variable.\n"
	}
	return `Connection, as the NATS CLI reads it. For each setting the first of these wins: the flag,
its NATS_* variable, the context (--context NAME or a context file's path, else $NATS_CONTEXT,
else the context 'nats context select' chose). A CI job can give every secret by environment:
NATS_URL, NATS_USER=mesh-controller and NATS_PASSWORD are enough.
`
}

// register declares every connection flag on fs: where the bus is, how to reach it, and who to
// be. Each is declared here and nowhere else; help lists them from fs.
func (c *connectFlags) register(fs *flag.FlagSet) {
	c.registerWhere(fs)
	connectVar(fs, &c.User, "user", "the `USER` to connect as (plan and apply: mesh-controller)")
	connectVar(fs, &c.Password, "password", "the user's `PASSWORD`")
	connectVar(fs, &c.Token, "token", "an authentication `TOKEN`")
	connectVar(fs, &c.Creds, "creds", "a JWT credentials `FILE`")
	connectVar(fs, &c.NKey, "nkey", "an nkey seed `FILE`")
	connectVar(fs, &c.JWT, "jwt", "a user `JWT`, with --seed")
	connectVar(fs, &c.Seed, "seed", "the user JWT's `SEED`")
	connectVar(fs, &c.JSDomain, "js-domain", "the JetStream `DOMAIN` ($JS.DOMAIN.API)")
	connectVar(fs, &c.JSAPIPrefix, "js-api-prefix", "the JetStream API's subject `PREFIX`")
	connectVar(fs, &c.InboxPrefix, "inbox-prefix", "where replies come: a subject `PREFIX` (default _INBOX.USER for a bus user of the catalogue)")
	connectVar(fs, &c.ConnectionName, "connection-name", "the `NAME` the server shows for this connection")
	connectVar(fs, &c.Context, "context", "a NATS CLI context's `NAME`, or the path of a context's .json file")
}

// registerWhere declares the flags that say where the bus is and how to reach it, and not who to
// be: verify connects as each principal with the credentials --credentials holds, never as one
// user.
func (c *connectFlags) registerWhere(fs *flag.FlagSet) {
	c.flags = fs
	connectVar(fs, &c.Server, "server", "the server's `URL`, or a cluster's, comma-separated")
	alias(fs, "s", "server")
	connectVar(fs, &c.TLSCert, "tlscert", "a client certificate `FILE`")
	connectVar(fs, &c.TLSKey, "tlskey", "the client certificate's key `FILE`")
	connectVar(fs, &c.TLSCA, "tlsca", "the `FILE` of the CAs to trust the server by")
	fs.Var(connValue{boolValue{&c.TLSFirst}}, "tlsfirst", "TLS before the INFO handshake")
	connectVar(fs, &c.Timeout, "timeout", "how long connecting, and each request, may take: a `DURATION`, 5s when none is given")
}

// connectVar declares one connection flag, marked as one (connValue) so that help lists it with
// the connection and names its variable.
func connectVar(fs *flag.FlagSet, p *string, name, usage string) {
	fs.Var(connValue{stringValue{p}}, name, usage)
}

// A connValue is a connection flag's value: help lists the flags holding one apart, under
// connectIntro, each with its NATS_* variable.
type connValue struct{ flag.Value }

// IsBoolFlag lets a switch (--tlsfirst) be given without a value.
func (v connValue) IsBoolFlag() bool {
	b, ok := v.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

type stringValue struct{ p *string }

func (v stringValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}
func (v stringValue) Set(s string) error { *v.p = s; return nil }

type boolValue struct{ p *bool }

func (v boolValue) String() string {
	if v.p == nil || !*v.p {
		return "false"
	}
	return "true"
}
func (v boolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("parse error")
	}
	*v.p = b
	return nil
}
func (v boolValue) IsBoolFlag() bool { return true }

// isConnect reports whether f is a connection flag, declared by connectFlags: not a flag of the
// command's own named like one (export's --server is a document's, not a bus's).
func isConnect(f *flag.Flag) bool {
	_, ok := f.Value.(connValue)
	return ok
}

// connectEnvOf returns the NATS_* variable a connection flag is read from, if any.
func connectEnvOf(f *flag.Flag) string {
	for _, e := range connectEnv {
		if e.flag == f.Name && isConnect(f) {
			return e.env
		}
	}
	return ""
}

// fromEnvironment fills each setting no flag gave from its NATS_* variable, through the flag
// itself, so connectEnv is the one table of which variable feeds which flag.
func (c *connectFlags) fromEnvironment() {
	for _, e := range connectEnv {
		if f := c.flags.Lookup(e.flag); f != nil && f.Value.String() == "" {
			f.Value.Set(os.Getenv(e.env))
		}
	}
}

// explicit reports whether a server was asked for by name: a flag or a variable. The CLI's
// selected context alone does not turn `meshc plan` from the golden file to a live bus: a plan
// in a pull request must not depend on what a laptop last selected. (apply, which has nothing
// else to compare with, does use it, as `nats` would.)
func (c *connectFlags) explicit() bool {
	c.fromEnvironment()
	return c.Server != "" || c.Context != ""
}

// resolve merges the flags, the environment and the context, as the NATS CLI does.
func (c *connectFlags) resolve(command string, plan *compiler.Plan) (wire.Connection, error) {
	c.fromEnvironment()
	return wire.Resolve(command, c.Settings, plan)
}

var errNoServer = errors.New("no server given: pass --server URL or --context NAME, or set NATS_URL or NATS_CONTEXT (meshc up runs a local bus)")
