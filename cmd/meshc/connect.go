package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/nats-io/jsm.go/natscontext"
	"github.com/nats-io/nats.go"

	"github.com/meshc-dev/meshc/apply"
	"github.com/meshc-dev/meshc/compiler"
)

// connectFlags are the connection settings of the NATS CLI (natscli v0.5.0), read the way it
// reads them, so a setup that works for `nats` works for meshc unchanged: a flag, else its
// NATS_* variable, overrides the same property of the context (--context, else NATS_CONTEXT,
// else the CLI's selected context). The context itself is read by jsm.go's natscontext, the
// package the CLI uses, so every field it honours (creds, nkey, user JWT and seed, token, TLS,
// inbox_prefix, JetStream domain and API prefix, `~` and $VARIABLES in paths) means the same here.
type connectFlags struct {
	server, user, password, token, creds, nkey, jwt, seed string
	tlsCert, tlsKey, tlsCA                                string
	tlsFirst                                              bool
	context                                               string
	timeout                                               string
	jsDomain, jsAPIPrefix                                 string
	connectionName, inboxPrefix                           string
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
	c.flags = fs
	fs.StringVar(&c.server, "server", "", "NATS server `URL`s")
	fs.StringVar(&c.server, "s", "", "NATS server `URL`s (short for --server)")
	fs.StringVar(&c.user, "user", "", "username")
	fs.StringVar(&c.password, "password", "", "password")
	fs.StringVar(&c.token, "token", "", "authentication token")
	fs.StringVar(&c.creds, "creds", "", "credentials `FILE`")
	fs.StringVar(&c.nkey, "nkey", "", "nkey seed `FILE`")
	fs.StringVar(&c.jwt, "jwt", "", "user `JWT`")
	fs.StringVar(&c.seed, "seed", "", "the user JWT's `SEED`")
	fs.StringVar(&c.tlsCert, "tlscert", "", "client certificate `FILE`")
	fs.StringVar(&c.tlsKey, "tlskey", "", "client key `FILE`")
	fs.StringVar(&c.tlsCA, "tlsca", "", "CA `FILE`")
	fs.BoolVar(&c.tlsFirst, "tlsfirst", false, "TLS before the handshake")
	fs.StringVar(&c.timeout, "timeout", "", "connect and request `DURATION`")
	fs.StringVar(&c.jsDomain, "js-domain", "", "JetStream `DOMAIN`")
	fs.StringVar(&c.jsAPIPrefix, "js-api-prefix", "", "JetStream API `PREFIX`")
	fs.StringVar(&c.inboxPrefix, "inbox-prefix", "", "inbox `PREFIX`")
	fs.StringVar(&c.connectionName, "connection-name", "", "connection `NAME`")
	fs.StringVar(&c.context, "context", "", "NATS CLI context `NAME` or file")
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
	return c.server != "" || c.context != ""
}

// connection is what resolving the settings gives: where, as whom, and everything else the
// nats client needs, plus a sentence saying so.
type connection struct {
	endpoint apply.Endpoint
	timeout  time.Duration
	// requestTimeout bounds one request: --timeout when given, else 10 s, since a cluster's
	// meta leader waits up to 4 s for stream leaders before it answers a list.
	requestTimeout time.Duration
	// source says where the settings came from, for the first line of output.
	source string
}

// describe is the line plan and apply start with: which bus, as whom, from which settings.
func (c connection) describe() string {
	as := c.endpoint.User
	if as == "" {
		as = "the user its credentials name"
	}
	return fmt.Sprintf("the bus at %s as %s%s", apply.RedactURL(c.endpoint.URL), as, c.source)
}

// resolve merges the flags, the environment and the context, as the NATS CLI does. plan, when
// given, names the catalogue's bus users: connecting as one of them, replies come to the inbox
// prefix SPEC §2 grants it, _INBOX.<user>.
func (c *connectFlags) resolve(command string, plan *compiler.Plan) (connection, error) {
	c.fromEnvironment()
	var none connection
	timeout, requestTimeout := 5*time.Second, 10*time.Second
	if c.timeout != "" {
		d, err := time.ParseDuration(c.timeout)
		if err != nil || d <= 0 {
			return none, fmt.Errorf("--timeout (or NATS_TIMEOUT) %q is not a duration such as 10s or 1m", c.timeout)
		}
		timeout, requestTimeout = d, d
	}
	overrides := []natscontext.Option{
		natscontext.WithServerURL(c.server),
		natscontext.WithCreds(expandPath(c.creds)),
		natscontext.WithNKey(expandPath(c.nkey)),
		natscontext.WithUserJWT(c.jwt),
		natscontext.WithUserSeed(c.seed),
		natscontext.WithCertificate(expandPath(c.tlsCert)),
		natscontext.WithKey(expandPath(c.tlsKey)),
		natscontext.WithCA(expandPath(c.tlsCA)),
		natscontext.WithJSDomain(c.jsDomain),
		natscontext.WithJSAPIPrefix(c.jsAPIPrefix),
		natscontext.WithInboxPrefix(c.inboxPrefix),
		natscontext.WithUser(c.user),
		natscontext.WithPassword(c.password),
		natscontext.WithToken(c.token),
	}
	if c.tlsFirst {
		overrides = append(overrides, natscontext.WithTLSHandshakeFirst())
	}

	var nctx *natscontext.Context
	var err error
	source := ""
	switch name := c.context; {
	case strings.HasSuffix(name, ".json") && fileExists(expandPath(name)):
		// A context file by its path, as the CLI takes one: meshc up writes one per user.
		nctx, err = natscontext.NewFromFile(expandPath(name), overrides...)
		source = fmt.Sprintf(" (context file %s)", name)
	case name != "":
		if err := natscontext.ValidateName(name); err != nil {
			return none, fmt.Errorf("context %q: %v; give a name as `nats context ls` lists it, or the path of a .json context file", name, err)
		}
		if !natscontext.IsKnown(name) {
			path, _ := natscontext.ContextPath(name)
			return none, fmt.Errorf("context %q not found (looked for %s); `nats context ls` lists them", name, path)
		}
		nctx, err = natscontext.New(name, true, overrides...)
		source = fmt.Sprintf(" (context %s)", name)
	default:
		// The CLI's selected context, if any, as `nats` would use it.
		nctx, err = natscontext.New("", true, overrides...)
		if selected := natscontext.SelectedContext(); selected != "" {
			source = fmt.Sprintf(" (the NATS CLI's selected context %s)", selected)
		}
	}
	if err != nil {
		return none, fmt.Errorf("reading the NATS context: %v", err)
	}
	if nctx.JSDomain() != "" && nctx.JSAPIPrefix() != "" {
		return none, fmt.Errorf("both a JetStream domain (%s) and an API prefix (%s) are set; give one: a domain is the prefix $JS.%s.API", nctx.JSDomain(), nctx.JSAPIPrefix(), nctx.JSDomain())
	}

	name := c.connectionName
	if name == "" {
		name = "meshc " + command
	}
	// The context's own settings first; meshc's fill in what it does not say.
	extra := []nats.Option{nats.Name(name), nats.Timeout(timeout)}
	inbox := nctx.InboxPrefix()
	if inbox == "" && plan != nil && nctx.User() != "" && plan.User(nctx.User()) != nil {
		extra = append(extra, nats.CustomInboxPrefix(compiler.InboxPrefix(nctx.User())))
	}
	opts, err := nctx.NATSOptions(extra...)
	if err != nil {
		return none, fmt.Errorf("the connection settings: %v", err)
	}
	api := nctx.JSAPIPrefix()
	if d := nctx.JSDomain(); d != "" {
		api = "$JS." + d + ".API"
	}
	return connection{
		endpoint:       apply.Endpoint{URL: nctx.ServerURL(), User: nctx.User(), Options: opts, APIPrefix: api},
		timeout:        timeout,
		requestTimeout: requestTimeout,
		source:         source,
	}, nil
}

// dial connects and asks JetStream once, so a refusal, a missing JetStream or a wrong domain is
// said at once rather than after the first real request times out.
func (c connection) dial() (*apply.Bus, error) {
	bus, err := apply.Connect(c.endpoint)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout+5*time.Second)
	defer cancel()
	if err := bus.CheckJetStream(ctx, c.timeout); err != nil {
		bus.Close()
		return nil, err
	}
	return bus, nil
}

// expandPath expands ~ and $VARIABLES in a path given by flag or variable, as the context's own
// paths are expanded.
func expandPath(p string) string {
	p = os.ExpandEnv(p)
	if p == "~" || strings.HasPrefix(p, "~/") {
		if u, err := user.Current(); err == nil && u.HomeDir != "" {
			return u.HomeDir + p[1:]
		}
		if h, err := os.UserHomeDir(); err == nil {
			return h + p[1:]
		}
	}
	return p
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

var errNoServer = errors.New("no server given: pass --server URL or --context NAME, or set NATS_URL or NATS_CONTEXT (meshc up runs a local bus)")
