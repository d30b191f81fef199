package wire

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/nats-io/jsm.go/natscontext"
	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/meshc-dev/meshc/compiler"
)

// Settings are the connection settings of the NATS CLI (natscli v0.5.0), as flags and NATS_*
// variables give them; each set one overrides the same property of the context (Context, else the
// CLI's selected context). The context itself is read by jsm.go's natscontext, the package the
// CLI uses, so every field it honours (creds, nkey, user JWT and seed, token, TLS, inbox_prefix,
// JetStream domain and API prefix, `~` and $VARIABLES in paths) means the same here.
type Settings struct {
	Server, User, Password, Token, Creds, NKey, JWT, Seed string
	TLSCert, TLSKey, TLSCA                                string
	TLSFirst                                              bool
	// Context is a context's name, or the path of a context's .json file.
	Context string
	// Timeout is a duration: connecting and each request.
	Timeout                     string
	JSDomain, JSAPIPrefix       string
	ConnectionName, InboxPrefix string
}

// Connection is what resolving the settings gives: where, as whom, and everything else the
// nats client needs, plus a sentence saying so.
type Connection struct {
	Endpoint Endpoint
	Timeout  time.Duration
	// RequestTimeout bounds one request: --timeout when given, else 10 s, since a cluster's
	// meta leader waits up to 4 s for stream leaders before it answers a list.
	RequestTimeout time.Duration
	// Source says where the settings came from, for the first line of output.
	Source string
}

// Describe is the line plan and apply start with: which bus, as whom, from which settings.
func (c Connection) Describe() string {
	as := c.Endpoint.User
	if as == "" {
		as = "the user its credentials name"
	}
	return fmt.Sprintf("the bus at %s as %s%s", RedactURL(c.Endpoint.URL), as, c.Source)
}

// Resolve merges the settings and the context, as the NATS CLI does. plan, when given, names the
// catalogue's bus users: connecting as one of them, replies come to the inbox prefix its grant
// names, _INBOX.<user> (docs/nats.md, "Inbox prefixes"). command names the connection.
func Resolve(command string, c Settings, plan *compiler.Plan) (Connection, error) {
	var none Connection
	timeout, requestTimeout := 5*time.Second, 10*time.Second
	if c.Timeout != "" {
		d, err := time.ParseDuration(c.Timeout)
		if err != nil || d <= 0 {
			return none, fmt.Errorf("--timeout (or NATS_TIMEOUT) %q is not a duration such as 10s or 1m", c.Timeout)
		}
		timeout, requestTimeout = d, d
	}
	overrides := []natscontext.Option{
		natscontext.WithServerURL(c.Server),
		natscontext.WithCreds(expandPath(c.Creds)),
		natscontext.WithNKey(expandPath(c.NKey)),
		natscontext.WithUserJWT(c.JWT),
		natscontext.WithUserSeed(c.Seed),
		natscontext.WithCertificate(expandPath(c.TLSCert)),
		natscontext.WithKey(expandPath(c.TLSKey)),
		natscontext.WithCA(expandPath(c.TLSCA)),
		natscontext.WithJSDomain(c.JSDomain),
		natscontext.WithJSAPIPrefix(c.JSAPIPrefix),
		natscontext.WithInboxPrefix(c.InboxPrefix),
		natscontext.WithUser(c.User),
		natscontext.WithPassword(c.Password),
		natscontext.WithToken(c.Token),
	}
	if c.TLSFirst {
		overrides = append(overrides, natscontext.WithTLSHandshakeFirst())
	}

	var nctx *natscontext.Context
	var err error
	source := ""
	switch name := c.Context; {
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

	name := c.ConnectionName
	if name == "" {
		name = "meshc " + command
	}
	// The context's own settings first; meshc's fill in what it does not say.
	extra := []nats.Option{nats.Name(name), nats.Timeout(timeout)}
	user := nctx.User()
	if user == "" {
		// In operator mode the user is named by its JWT (meshc mint writes the name in it).
		user = jwtName(nctx.UserJWT(), nctx.Creds())
	}
	if user == "" && plan != nil && nctx.NKey() != "" {
		// With auth: nkey nothing names the user but its key: the catalogue's user whose recorded
		// public key it is. Without this, a CI job applying with --nkey alone had to give
		// --inbox-prefix _INBOX.mesh-controller too.
		user = nkeyUser(nctx.NKey(), plan)
	}
	inbox := nctx.InboxPrefix()
	if inbox == "" && plan != nil && user != "" && plan.User(user) != nil {
		extra = append(extra, nats.CustomInboxPrefix(compiler.InboxPrefix(user)))
	}
	opts, err := nctx.NATSOptions(extra...)
	if err != nil {
		return none, fmt.Errorf("the connection settings: %v", err)
	}
	api := nctx.JSAPIPrefix()
	if d := nctx.JSDomain(); d != "" {
		api = "$JS." + d + ".API"
	}
	return Connection{
		Endpoint:       Endpoint{URL: nctx.ServerURL(), User: user, Options: opts, APIPrefix: api},
		Timeout:        timeout,
		RequestTimeout: requestTimeout,
		Source:         source,
	}, nil
}

// Dial connects and asks JetStream once, so a refusal, a missing JetStream or a wrong domain is
// said at once rather than after the first real request times out.
func (c Connection) Dial() (*Bus, error) {
	bus, err := Connect(c.Endpoint)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), CheckBudget+c.Timeout+5*time.Second)
	defer cancel()
	if err := bus.CheckJetStream(ctx, c.Timeout); err != nil {
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

// nkeyUser is the bus user of plan whose recorded public key is that of the seed in the file,
// "" when the file holds no seed or the key is nobody's.
func nkeyUser(seedFile string, plan *compiler.Plan) string {
	data, err := os.ReadFile(expandPath(seedFile))
	if err != nil {
		return ""
	}
	kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(data))))
	if err != nil {
		return ""
	}
	public, err := kp.PublicKey()
	if err != nil {
		return ""
	}
	for _, u := range plan.Users {
		if u.NKey != "" && u.NKey == public {
			return u.Name
		}
	}
	return ""
}

// jwtName is the name a user JWT gives, from the JWT itself or a credentials file, "" when there
// is none to read.
func jwtName(token, creds string) string {
	if token == "" && creds != "" {
		data, err := os.ReadFile(expandPath(creds))
		if err != nil {
			return ""
		}
		if token, err = jwt.ParseDecoratedJWT(data); err != nil {
			return ""
		}
	}
	if token == "" {
		return ""
	}
	uc, err := jwt.DecodeUserClaims(token)
	if err != nil {
		return ""
	}
	return uc.Name
}
