package main

import (
	"errors"
	"flag"
	"os"

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

const connectHelp = `Connection, as the NATS CLI reads it. For each setting the first of these wins:
the flag, its NATS_* variable, the context (--context NAME or a context file's path, else
$NATS_CONTEXT, else the context 'nats context select' chose). A CI job can give every secret
by environment: NATS_URL, NATS_USER=mesh-controller and NATS_PASSWORD are enough.
  -s, --server URL    the server or cluster, comma-separated        $NATS_URL
  --user USER         username (plan and apply: mesh-controller)     $NATS_USER
  --password PW       password                                       $NATS_PASSWORD
  --token TOKEN       an authentication token                        $NATS_TOKEN
  --creds FILE        a JWT credentials file                         $NATS_CREDS
  --nkey FILE         an nkey seed file                              $NATS_NKEY
  --jwt JWT, --seed SEED   a user JWT and its seed                   $NATS_JWT, $NATS_SEED
  --tlscert, --tlskey, --tlsca FILE   client certificate, key, CA    $NATS_CERT, $NATS_KEY, $NATS_CA
  --tlsfirst          TLS before the INFO handshake
  --timeout DURATION  connecting and each request (default 5s)       $NATS_TIMEOUT
  --js-domain DOMAIN  the JetStream domain ($JS.DOMAIN.API)
  --js-api-prefix P   the JetStream API prefix
  --inbox-prefix P    where replies come; default _INBOX.USER for a bus user of the catalogue
  --connection-name N the name the server shows for this connection
  --context NAME      a NATS CLI context, or the path of a context's .json file  $NATS_CONTEXT
`

func (c *connectFlags) register(fs *flag.FlagSet) {
	c.registerWhere(fs)
	fs.StringVar(&c.User, "user", "", "username")
	fs.StringVar(&c.Password, "password", "", "password")
	fs.StringVar(&c.Token, "token", "", "authentication token")
	fs.StringVar(&c.Creds, "creds", "", "credentials `FILE`")
	fs.StringVar(&c.NKey, "nkey", "", "nkey seed `FILE`")
	fs.StringVar(&c.JWT, "jwt", "", "user `JWT`")
	fs.StringVar(&c.Seed, "seed", "", "the user JWT's `SEED`")
	fs.StringVar(&c.JSDomain, "js-domain", "", "JetStream `DOMAIN`")
	fs.StringVar(&c.JSAPIPrefix, "js-api-prefix", "", "JetStream API `PREFIX`")
	fs.StringVar(&c.InboxPrefix, "inbox-prefix", "", "inbox `PREFIX`")
	fs.StringVar(&c.ConnectionName, "connection-name", "", "connection `NAME`")
	fs.StringVar(&c.Context, "context", "", "NATS CLI context `NAME` or file")
}

// registerWhere registers the flags that say where the bus is and how to reach it, and not who to
// be: verify connects as each principal with the credentials --credentials holds, never as one
// user.
func (c *connectFlags) registerWhere(fs *flag.FlagSet) {
	c.flags = fs
	fs.StringVar(&c.Server, "server", "", "NATS server `URL`s")
	fs.StringVar(&c.Server, "s", "", "NATS server `URL`s (short for --server)")
	fs.StringVar(&c.TLSCert, "tlscert", "", "client certificate `FILE`")
	fs.StringVar(&c.TLSKey, "tlskey", "", "client key `FILE`")
	fs.StringVar(&c.TLSCA, "tlsca", "", "CA `FILE`")
	fs.BoolVar(&c.TLSFirst, "tlsfirst", false, "TLS before the handshake")
	fs.StringVar(&c.Timeout, "timeout", "", "connect and request `DURATION`")
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
