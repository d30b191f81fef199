package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/compiler"
)

// DefaultAPIPrefix is where the JetStream API of the connected account answers. A JetStream
// domain moves it to $JS.<domain>.API.
const DefaultAPIPrefix = "$JS.API"

// Endpoint says where and how to reach the bus. The nats options carry the credentials; User
// names who they are, for messages (empty when a creds file or an nkey says it instead).
type Endpoint struct {
	URL     string
	User    string
	Options []nats.Option
	// APIPrefix is the JetStream API prefix; empty is DefaultAPIPrefix.
	APIPrefix string
}

// Bus is a connection to the bus that knows whom it connected as, and ends everything it carries
// at the first refusal: a Permissions Violation is final, and waiting it out as if the server were
// down once cost a minute per command and then blamed the cluster (docs/nats.md, "Denials arrive
// asynchronously").
type Bus struct {
	Conn *nats.Conn
	// Server is where it connected, with any credentials in the URL redacted: safe to print.
	Server string
	// User is whom it connected as, "" when the credentials do not say.
	User string
	// APIPrefix is the JetStream API prefix requests go to.
	APIPrefix string
	// Version is the nats-server release the connection was made to, as its INFO named it.
	Version string

	once    sync.Once
	refused chan struct{}
	refusal *Refusal
}

// Connect connects to the bus and says in the mesh's words why it could not: refused credentials
// and a server that is not there need different fixes.
func Connect(e Endpoint) (*Bus, error) {
	b := &Bus{Server: RedactURL(e.URL), User: e.User, APIPrefix: e.APIPrefix, refused: make(chan struct{})}
	if b.APIPrefix == "" {
		b.APIPrefix = DefaultAPIPrefix
	}
	opts := append([]nats.Option{
		nats.Name("meshc"),
		nats.Timeout(5 * time.Second),
		// A cluster node restarting mid-apply is survived by moving to another; the retries in
		// apply cover the requests lost meanwhile.
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
	}, e.Options...)
	// Last, so nothing replaces it: the violation is the only word of a refusal, since nats.go
	// reports a refused request as a timeout.
	opts = append(opts, nats.ErrorHandler(func(nc *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) {
			b.refuse(refusalOf(err, nc))
		}
	}))
	nc, err := nats.Connect(e.URL, opts...)
	if err != nil {
		return nil, DialError(b.Server, b.User, err)
	}
	// Before anything is asked: an older server takes what it does not know and ignores it.
	b.Version = nc.ConnectedServerVersion()
	if err := CheckServerVersion(b.Server, b.Version); err != nil {
		nc.Close()
		return nil, err
	}
	b.Conn = nc
	return b, nil
}

// Dial connects with nats options alone, for callers that need a plain connection (a module's
// user proving a flow). The user for messages is read from the options.
func Dial(url string, opts ...nats.Option) (*nats.Conn, error) {
	o := nats.GetDefaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	b, err := Connect(Endpoint{URL: url, User: o.User, Options: opts})
	if err != nil {
		return nil, err
	}
	return b.Conn, nil
}

func DialError(server, user string, err error) error {
	as := "these credentials"
	if user != "" {
		as = "user " + user
	}
	switch {
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked):
		return fmt.Errorf("connect to %s: %w: the server refused %s; plan and apply connect as mesh-controller with the password minted for it (meshc mint mesh-controller), and the server must have loaded the current user list", server, err, as)
	case errors.Is(err, nats.ErrNoServers):
		return fmt.Errorf("connect to %s: %w: no NATS server answers there; check the address and that the server is running (meshc up starts one)", server, err)
	}
	return fmt.Errorf("connect to %s: %s", server, redactIn(err.Error()))
}

// Close closes the connection.
func (b *Bus) Close() { b.Conn.Close() }

func (b *Bus) refuse(r *Refusal) {
	b.once.Do(func() {
		b.refusal = r
		close(b.refused)
	})
}

// Refused returns the first refusal the server sent this connection, or nil.
func (b *Bus) Refused() *Refusal {
	select {
	case <-b.refused:
		return b.refusal
	default:
		return nil
	}
}

// Watch returns a context that ends, with the refusal as its cause, when the server refuses this
// connection anything: whatever runs under it stops at once rather than timing out.
func (b *Bus) Watch(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		select {
		case <-b.refused:
			cancel(b.refusal)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// RequestWithContext is one request that ends at once when the server refuses the connection
// anything, and then returns the refusal rather than a timeout.
func (b *Bus) RequestWithContext(ctx context.Context, subject string, data []byte) (*nats.Msg, error) {
	ctx, cancel := b.Watch(ctx)
	defer cancel()
	msg, err := b.Conn.RequestWithContext(ctx, subject, data)
	if err != nil {
		if r := b.Refused(); r != nil {
			return nil, r
		}
	}
	return msg, err
}

// JetStream is the JetStream API of the connected account, at the endpoint's prefix.
func (b *Bus) JetStream() (jetstream.JetStream, error) {
	if b.APIPrefix == DefaultAPIPrefix {
		return jetstream.New(b.Conn)
	}
	return jetstream.NewWithAPIPrefix(b.Conn, b.APIPrefix)
}

// CheckJetStream asks the account's JetStream for its information, so that a user without
// the JetStream API, an inbox prefix the user is not granted, or a server without JetStream is
// said within seconds, before anything else is asked. timeout bounds one attempt. A cluster
// electing a meta leader answers 10008 or nothing at all, and is asked again, with the backoff
// of every other request, for CheckBudget (docs/nats.md, "Retries and what is transient").
func (b *Bus) CheckJetStream(ctx context.Context, timeout time.Duration) error {
	subject := b.APIPrefix + ".INFO"
	// "No responders" is seen for a moment while a server restarts; for longer, it is a server
	// (or an account) without JetStream, said without a minute of retries.
	// A server that says in its INFO it runs no JetStream is waited for a second only: what
	// could still answer is a JetStream peer in its cluster, coming back (its peers answer for
	// it: apply's TestAServerWithoutJetStreamInAJetStreamClusterIsAnswered).
	wait := timeout
	if js, _ := b.Conn.ConnectedServerJetStream(); !js {
		wait = min(wait, time.Second)
	}
	noJetStreamAfter := time.Now().Add(wait)
	var final error
	err := Retry(ctx, CheckBudget, func(ctx context.Context) error {
		rctx, cancel := context.WithTimeout(ctx, min(timeout, 5*time.Second))
		msg, err := b.RequestWithContext(rctx, subject, nil)
		cancel()
		var r *Refusal
		switch {
		case errors.As(err, &r):
			final = err
			return nil
		case errors.Is(err, nats.ErrNoResponders) && time.Now().After(noJetStreamAfter):
			final = b.noJetStream(subject)
			return nil
		case err != nil:
			return err
		}
		var info struct {
			Error *jetstream.APIError `json:"error"`
		}
		if jerr := json.Unmarshal(msg.Data, &info); jerr == nil && info.Error != nil {
			return info.Error
		}
		return nil
	})
	switch {
	case final != nil:
		return final
	case err == nil:
		return nil
	case errors.Is(err, nats.ErrNoResponders):
		return b.noJetStream(subject)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		return fmt.Errorf("%s at %s did not answer, asked again for %s: a cluster without a meta leader answers nothing, so check that a majority of its servers is up; with a JetStream domain, check --js-domain", subject, b.Server, CheckBudget)
	}
	var ae *jetstream.APIError
	if errors.As(err, &ae) {
		return fmt.Errorf("asking %s at %s: %w", subject, b.Server, Explain(err))
	}
	return fmt.Errorf("asking %s: %w", subject, err)
}

// CheckBudget is how long the first JetStream check is asked again on the transient failures:
// the about a minute the README promises.
var CheckBudget = 60 * time.Second

// noJetStream says why nothing answers the JetStream API.
func (b *Bus) noJetStream(subject string) error {
	if b.APIPrefix != DefaultAPIPrefix {
		return fmt.Errorf("nothing answers %s at %s: the server has no JetStream at that prefix; check the JetStream domain or API prefix (--js-domain, --js-api-prefix, the context's jetstream_domain), or that the server runs JetStream", subject, b.Server)
	}
	return fmt.Errorf("nothing answers %s at %s: the server runs without JetStream, or this account has none (the server needs jetstream enabled, and the account `jetstream: enabled`)", subject, b.Server)
}

// Refusal is the server's Permissions Violation: final, never retried.
type Refusal struct {
	// User is whom the connection was made as, "" when unknown.
	User string
	// Publish is true for a refused publish, false for a refused subscription.
	Publish bool
	// Subject is the subject refused.
	Subject string
	// Inbox is the inbox prefix the connection used: where its replies come.
	Inbox string
	// Text is the server's own words.
	Text string
}

var violation = regexp.MustCompile(`(?i)for (publish|subscription) to "([^"]*)"`)

func refusalOf(err error, nc *nats.Conn) *Refusal {
	r := &Refusal{User: nc.Opts.User, Inbox: nc.Opts.InboxPrefix, Text: err.Error()}
	if r.Inbox == "" {
		r.Inbox = "_INBOX"
	}
	if m := violation.FindStringSubmatch(err.Error()); m != nil {
		r.Publish = strings.EqualFold(m[1], "publish")
		r.Subject = m[2]
	}
	return r
}

// Error says who was refused what, which grant is missing, and what to do.
func (r *Refusal) Error() string {
	who := r.User
	if who == "" {
		who = "the user these credentials name"
	}
	switch {
	case r.Subject == "":
		return fmt.Sprintf("the bus refused %s: %s", who, r.Text)
	case !r.Publish && strings.HasPrefix(r.Subject, r.Inbox+"."):
		prefix := r.Inbox
		fix := "connect with --inbox-prefix naming an inbox the user may subscribe"
		if r.User != "" {
			fix = fmt.Sprintf("a bus user of the catalogue is granted _INBOX.%s.>: connect with --inbox-prefix _INBOX.%s (or the context's inbox_prefix)", r.User, r.User)
		}
		return fmt.Sprintf("the bus refused %s a subscription to %q: replies come to the inbox prefix %s, and %s lacks the grant subscribe %q; %s",
			who, r.Subject, prefix, who, prefix+".>", fix)
	case r.User == compiler.ControllerUser && r.Publish && strings.HasPrefix(r.Subject, "$JS.") &&
		!strings.HasPrefix(r.Subject, DefaultAPIPrefix+".") && !strings.HasPrefix(r.Subject, "$JS.ACK."):
		// A domain the server runs is mapped onto $JS.API before permissions are checked; one it
		// does not run (or a custom API prefix) reaches the check as written.
		return fmt.Sprintf("the bus refused %s publishing to %q: %s lacks the grant publish %q; the server runs no JetStream domain that maps this prefix onto $JS.API: check --js-domain and --js-api-prefix (or the context's jetstream_domain)",
			who, r.Subject, who, r.Subject)
	case r.User == compiler.ControllerUser:
		// The catalogue grants the controller what meshc asks of the bus: a refusal means the
		// server runs an accounts file older than this meshc (each grant it gained since is
		// one the old file lacks).
		return fmt.Sprintf("the bus refused %s %s %q: %s lacks the grant %s %q; the server's accounts file is not the one this catalogue composes (deliver it: meshc apply --accounts PATH --reload PID)",
			who, r.verb(), r.Subject, who, r.action(), r.Subject)
	case r.User == compiler.PlannerUser:
		// The planner is granted what plan reads and nothing else, on purpose.
		return fmt.Sprintf("the bus refused %s %s %q: %s is granted what `meshc plan` reads and no more: connect as mesh-controller to apply; a plan refused this runs on a server whose accounts file is not the one this catalogue composes (deliver it as mesh-controller: meshc apply --accounts PATH --reload PID)",
			who, r.verb(), r.Subject, who)
	case r.Publish && strings.HasPrefix(r.Subject, "$JS."):
		return fmt.Sprintf("the bus refused %s publishing to %q: %s lacks the grant publish %q; the catalogue grants the JetStream API ($JS.API.>) to mesh-controller alone (and plan's reads of it to mesh-planner, with controller.planner): connect as mesh-controller to apply",
			who, r.Subject, who, r.Subject)
	}
	return fmt.Sprintf("the bus refused %s %s %q: %s lacks the grant %s %q; plan and apply connect as mesh-controller, the user the catalogue grants what they ask",
		who, r.verb(), r.Subject, who, r.action(), r.Subject)
}

func (r *Refusal) verb() string {
	if r.Publish {
		return "publishing to"
	}
	return "a subscription to"
}

func (r *Refusal) action() string {
	if r.Publish {
		return "publish"
	}
	return "subscribe"
}

// RedactURL hides the credentials a server URL may carry (user:password@ or token@), in each
// URL of a comma-separated list: the URL is printed in messages and CI logs.
func RedactURL(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		u, err := url.Parse(strings.TrimSpace(p))
		if err != nil || u.User == nil {
			continue
		}
		u.User = url.User("xxxxx")
		parts[i] = u.String()
	}
	return strings.Join(parts, ",")
}

// userinfo is the credentials part of a URL inside a longer text.
var userinfo = regexp.MustCompile(`(://)[^/@\s"]+@`)

// redactIn hides URL credentials inside a message from the client library.
func redactIn(s string) string { return userinfo.ReplaceAllString(s, "${1}xxxxx@") }

// Identity says which bus this is, as the server tells it: "cluster NAME" for a cluster (any of
// its servers answers for it), else "server NAME" for a server given a name, else "server at
// HOST:PORT" (an unnamed server takes a new id at every start, which names nothing). A saved
// plan records it and is applied to no other bus.
func (b *Bus) Identity() string {
	nc := b.Conn
	if c := nc.ConnectedClusterName(); c != "" {
		return "cluster " + c
	}
	if name := nc.ConnectedServerName(); name != "" && name != nc.ConnectedServerId() {
		return "server " + name
	}
	if u, err := url.Parse(nc.ConnectedUrl()); err == nil {
		return "server at " + u.Host
	}
	return ""
}
