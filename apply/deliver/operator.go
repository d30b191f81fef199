package deliver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/meshc-dev/meshc/apply/wire"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"golang.org/x/sync/errgroup"

	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/operator"
)

// Operator mode's delivery (docs/nats.md, "Operator mode"): the accounts are JWTs pushed to the
// servers' resolver over the bus as the system user, each applied by the server without a
// reload, and the resolver can be asked what it holds. Every server of a cluster answers every
// resolver request, so each is a request with many answers, gathered until every server known
// has answered or the wait is over.

// The resolver's subjects: operator's, where the system user's grants are written from them.
const (
	claimsUpdate = operator.ClaimsUpdate
	claimsList   = operator.ClaimsList
	claimsDelete = operator.ClaimsDelete
	claimsPack   = operator.ClaimsPack
	serverIDs    = operator.ServerIDs
	serverRaftz  = operator.ServerRaftz
)

var (
	claimsLookup = operator.ClaimsLookup
	accountInfo  = operator.AccountInfo
	accountJsz   = operator.AccountJsz
)

// Resolver is the servers' account resolver, reached as the system user.
type Resolver struct {
	nc *nats.Conn
	// Servers are the names of the servers that answered when it was reached.
	Servers []string
	// Down are the servers of the cluster that did not answer: JetStream's meta group knows
	// them, and they are down or cut off. A push does not reach them until they catch up.
	Down []string
	// Known: the servers that should answer are known — a single server, or a cluster whose
	// JetStream meta group names its members — so an empty Down means every one answered.
	Known bool
	// Wait bounds each request: how long the servers that have not answered are waited for.
	Wait time.Duration
}

// serverInfo is who answered: every system answer carries it.
type serverInfo struct {
	Name    string `json:"name"`
	ID      string `json:"id"`
	Cluster string `json:"cluster"`
}

// NewResolver asks every server for its name, so a request later knows how many answers to wait
// for, and the JetStream meta group for the cluster's members, so a server that does not answer
// now is known to be down. Both are the narrowest requests that say it (IDZ names a server and
// nothing else; RAFTZ of the meta group names its peers), not a server's statistics.
func NewResolver(ctx context.Context, nc *nats.Conn, wait time.Duration) (*Resolver, error) {
	if wait <= 0 {
		wait = 5 * time.Second
	}
	r := &Resolver{nc: nc, Wait: wait}
	var answers []*nats.Msg
	// Asked again while nobody answers: a connection moving to another server (the one it had is
	// down) loses what it sent meanwhile.
	for deadline := time.Now().Add(wait); len(answers) == 0 && time.Now().Before(deadline); {
		var err error
		if answers, err = r.gather(ctx, serverIDs, nil, 0, min(wait, 2*time.Second)); err != nil {
			return nil, err
		}
	}
	for _, a := range answers {
		var id serverInfo
		if json.Unmarshal(a.Data, &id) == nil && id.Name != "" && !slices.Contains(r.Servers, id.Name) {
			r.Servers = append(r.Servers, id.Name)
		}
	}
	if len(r.Servers) == 0 {
		return nil, fmt.Errorf("no server answered %s: connect as the system user (its credentials from `meshc operator init`, in $%s or --system-creds), and the servers must run in operator mode with that system account",
			serverIDs, operator.SystemCredsVar)
	}
	slices.Sort(r.Servers)
	if err := r.members(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// members reads the cluster's members from the JetStream meta group each server reports: the
// servers named there that did not answer are Down. A single server outside any cluster knows
// every member: itself.
func (r *Resolver) members(ctx context.Context) error {
	answers, err := r.gather(ctx, serverRaftz, []byte(`{"group":"_meta_"}`), len(r.Servers), r.Wait)
	if err != nil {
		return err
	}
	known := map[string]bool{}
	clustered, metaSeen := false, false
	for _, a := range answers {
		var m struct {
			Server serverInfo `json:"server"`
			Data   map[string]map[string]struct {
				Peers map[string]struct {
					Name string `json:"name"`
				} `json:"peers"`
			} `json:"data"`
		}
		if json.Unmarshal(a.Data, &m) != nil {
			continue
		}
		clustered = clustered || m.Server.Cluster != ""
		for _, groups := range m.Data {
			if g, ok := groups["_meta_"]; ok {
				metaSeen = true
				known[m.Server.Name] = true
				for _, p := range g.Peers {
					known[p.Name] = true
				}
			}
		}
	}
	for name := range known {
		if name != "" && !slices.Contains(r.Servers, name) {
			r.Down = append(r.Down, name)
		}
	}
	slices.Sort(r.Down)
	// A cluster without JetStream has no meta group to say who its members are.
	r.Known = metaSeen || (!clustered && len(answers) == 1 && len(r.Servers) == 1)
	return nil
}

// gather sends a request and collects answers until want have come (0: until none has come for a
// moment after the first), or wait is over.
func (r *Resolver) gather(ctx context.Context, subject string, data []byte, want int, wait time.Duration) ([]*nats.Msg, error) {
	inbox := r.nc.NewRespInbox()
	sub, err := r.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	if err := r.nc.PublishRequest(subject, inbox, data); err != nil {
		return nil, err
	}
	var out []*nats.Msg
	deadline := time.Now().Add(wait)
	for want == 0 || len(out) < want {
		next := time.Until(deadline)
		if want == 0 && len(out) > 0 {
			next = min(next, 250*time.Millisecond)
		}
		if next <= 0 {
			break
		}
		wctx, cancel := context.WithTimeout(ctx, next)
		m, err := sub.NextMsgWithContext(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return out, context.Cause(ctx)
			}
			break
		}
		out = append(out, m)
	}
	return out, nil
}

// List returns the accounts the servers' resolvers hold, each with how many servers hold it.
func (r *Resolver) List(ctx context.Context) (map[string]int, error) {
	answers, err := r.gather(ctx, claimsList, nil, len(r.Servers), r.Wait)
	if err != nil {
		return nil, err
	}
	if len(answers) == 0 {
		return nil, fmt.Errorf("no server answered %s: is the resolver a full one (resolver { type: full }, as `meshc operator init` writes it)?", claimsList)
	}
	held := map[string]int{}
	for _, a := range answers {
		var m struct {
			Data []string `json:"data"`
		}
		if err := json.Unmarshal(a.Data, &m); err != nil {
			return nil, fmt.Errorf("%s answered %q: %v", claimsList, a.Data, err)
		}
		for _, k := range m.Data {
			held[k]++
		}
	}
	return held, nil
}

// Pack reads every JWT one server's resolver holds, by account key, in one request: the pack
// exchange servers catch up with, asked with a hash that matches nothing. One server answers, a
// message per JWT and an empty one to end. One lookup per account instead took 20 s for 18,000
// accounts with 10,000 clients connected (BENCHMARKS.md).
func (r *Resolver) Pack(ctx context.Context) (map[string]string, error) {
	inbox := r.nc.NewRespInbox()
	sub, err := r.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	sub.SetPendingLimits(-1, -1)
	if err := r.nc.PublishRequest(claimsPack, inbox, make([]byte, 32)); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for {
		wctx, cancel := context.WithTimeout(ctx, r.Wait)
		m, err := sub.NextMsgWithContext(wctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("reading what the resolver holds (%s): %w", claimsPack, err)
		}
		if len(m.Data) == 0 {
			return out, nil
		}
		for _, line := range strings.Split(string(m.Data), "\n") {
			if key, token, ok := strings.Cut(line, "|"); ok {
				out[key] = token
			}
		}
	}
}

// Lookup returns the JWT each server that answered holds for an account ("" for one that holds
// none).
func (r *Resolver) Lookup(ctx context.Context, account string) ([]string, error) {
	answers, err := r.gather(ctx, claimsLookup(account), nil, len(r.Servers), r.Wait)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(answers))
	for i, a := range answers {
		out[i] = string(a.Data)
	}
	return out, nil
}

// updateAnswer is the resolver's answer to a push or a delete.
type updateAnswer struct {
	Server serverInfo `json:"server"`
	Data   *struct {
		Message string `json:"message"`
	} `json:"data"`
	Error *struct {
		Description string `json:"description"`
	} `json:"error"`
}

// Push sends an account's JWT to every server and returns the servers that stored it. A server
// that refused it is an error; one that did not answer (down) is not: it catches up from the
// others within one resolver interval of coming back, which only a newer issue time and another
// id make it do (operator.EncodeAccount).
func (r *Resolver) Push(ctx context.Context, name, token string) ([]string, error) {
	return r.update(ctx, claimsUpdate, "pushing account "+name, []byte(token))
}

func (r *Resolver) update(ctx context.Context, subject, what string, data []byte) ([]string, error) {
	answers, err := r.gather(ctx, subject, data, len(r.Servers), r.Wait)
	if err != nil {
		return nil, err
	}
	var stored []string
	var refused []string
	for _, a := range answers {
		var u updateAnswer
		if err := json.Unmarshal(a.Data, &u); err != nil {
			return nil, fmt.Errorf("%s: the resolver answered %q", what, a.Data)
		}
		if u.Error != nil {
			refused = append(refused, fmt.Sprintf("%s: %s", u.Server.Name, u.Error.Description))
			continue
		}
		stored = append(stored, u.Server.Name)
	}
	if len(refused) > 0 {
		slices.Sort(refused)
		return stored, fmt.Errorf("%s: refused by %s", what, strings.Join(refused, "; "))
	}
	if len(stored) == 0 {
		return nil, fmt.Errorf("%s: no server answered within %s: check the servers are up and trust this operator, or give a busy cluster more time (--timeout)", what, r.Wait)
	}
	slices.Sort(stored)
	return stored, nil
}

// PushOptions are what pushing needs beyond the claims.
type PushOptions struct {
	// Signer is the operator's signing key. A dry run needs none: SigningKey says whose
	// signature what is held must carry.
	Signer     nkeys.KeyPair
	SigningKey string
	// Dial connects to the bus with the endpoint's settings and extra options: the probes.
	Dial func(extra ...nats.Option) (*nats.Conn, error)
	// Concurrency is how many lookups, pushes and probes are in flight. Default 16: the server
	// applies pushes on one subscription, so more gains nothing (docs/nats.md, "Operator mode
	// at scale").
	Concurrency int
	// Progress, when set, hears of each account pushed.
	Progress func(done, total int, name string)
}

// heldAccount is the newest version of an account any server holds, and the token it came in.
type heldAccount struct {
	token  string
	claims *jwt.AccountClaims
}

// held reads every JWT the servers' resolvers hold: one server's whole store in one request
// (Pack), then, for an account some server lacks or holds otherwise, each server's own (Lookup),
// keeping the newest. A version newer than any held is what a push must issue.
func (r *Resolver) held(ctx context.Context, concurrency int) (map[string]heldAccount, error) {
	listed, err := r.List(ctx)
	if err != nil {
		return nil, err
	}
	packed, err := r.Pack(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]heldAccount{}
	var mu sync.Mutex
	keep := func(key, token string) {
		ac, err := jwt.DecodeAccountClaims(token)
		if err != nil || ac.Subject != key {
			return // not an account JWT meshc can read: left out, as a tenant's would be
		}
		mu.Lock()
		defer mu.Unlock()
		if was, ok := out[key]; !ok || ac.IssuedAt > was.claims.IssuedAt {
			out[key] = heldAccount{token: token, claims: ac}
		}
	}
	for key, token := range packed {
		keep(key, token)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(concurrency, 1))
	for key, n := range listed {
		if n == len(r.Servers) && packed[key] != "" {
			continue
		}
		g.Go(func() error {
			answers, err := r.Lookup(gctx, key)
			for _, token := range answers {
				if token != "" {
					keep(key, token)
				}
			}
			return err
		})
	}
	return out, g.Wait()
}

// RevokedTag marks an account meshc revoked (change.RevokedTag).
const RevokedTag = change.RevokedTag

// levels groups the accounts to push so each comes after those it imports from (a cycle is
// broken where PushOrder broke it): the accounts of one level can be pushed at once.
func levels(claims []compiler.AccountClaims, todo []int) [][]int {
	index := map[string]int{}
	for i, a := range claims {
		index[a.Name] = i
	}
	level := make([]int, len(claims))
	for i, a := range claims { // claims are in push order: an exporter's level is known first
		for _, from := range a.From {
			if j, ok := index[from]; ok && j < i {
				level[i] = max(level[i], level[j]+1)
			}
		}
	}
	var out [][]int
	for _, i := range todo {
		for len(out) <= level[i] {
			out = append(out, nil)
		}
		out[level[i]] = append(out[level[i]], i)
	}
	return slices.DeleteFunc(out, func(l []int) bool { return len(l) == 0 })
}

// probeAll proves each pushed account works: "jwt updated" says only that a server stored the
// JWT (an account signed by a key the servers do not trust, or an import the exporter does not
// offer, is stored all the same and dead; docs/nats.md, "Operator mode").
func probeAll(ctx context.Context, r *Resolver, claims []compiler.AccountClaims, todo []int, opts PushOptions) error {
	probe, err := operator.ProbeKey(opts.Signer)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Concurrency)
	for _, i := range todo {
		g.Go(func() error { return probeAccount(gctx, r, claims[i], probe, opts) })
	}
	return g.Wait()
}

// probeAccount connects as a user of the account signed by the probe key (a user that may do
// nothing), which makes the server build the account and trust its issuer, then asks the server
// for the account as it runs it: the version pushed, every import resolved, JetStream where the
// account has it.
func probeAccount(ctx context.Context, r *Resolver, a compiler.AccountClaims, probe nkeys.KeyPair, opts PushOptions) error {
	key := a.Claims.Subject
	token, kp, err := operator.IssueUser(probe, compiler.ProbeRole, key)
	if err != nil {
		return err
	}
	// The probe builds the account, and a server builds one account at a time, each after a scan
	// of every account built before it (docs/nats.md, "Operator mode at scale"): on a large fresh
	// bus a probe waits its turn for longer than a request does.
	wait := max(r.Wait, time.Minute)
	var nc *nats.Conn
	for deadline := time.Now().Add(wait); ; time.Sleep(100 * time.Millisecond) {
		nc, err = opts.Dial(nats.Name("meshc probe"), nats.NoReconnect(), nats.Timeout(wait), operator.UserOption(token, kp))
		if errors.Is(err, nats.ErrAuthorization) || err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		// A server busy building accounts can fail a handshake (a timeout, a PING before the
		// PONG): said only if it goes on.
	}
	if err != nil {
		return fmt.Errorf("account %s was pushed, but a user of it cannot connect (%v): the servers do not take it; check that their configuration trusts the operator keys.yaml records", a.Name, err)
	}
	defer nc.Close()
	if err := nc.FlushTimeout(r.Wait); err != nil {
		return fmt.Errorf("account %s: its probe user's connection: %v", a.Name, err)
	}
	want, err := compiler.Canonical(a.Claims)
	if err != nil {
		return err
	}
	var last string
	for deadline := time.Now().Add(r.Wait); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		answers, err := r.gather(ctx, accountInfo(key), nil, len(r.Servers), r.Wait)
		if err != nil {
			return err
		}
		for _, m := range answers {
			var info struct {
				Data *struct {
					Jwt       string `json:"jwt"`
					JetStream bool   `json:"jetstream_enabled"`
					Imports   []struct {
						Subject string `json:"subject"`
						Account string `json:"account"`
						Invalid bool   `json:"invalid"`
					} `json:"imports"`
				} `json:"data"`
			}
			if json.Unmarshal(m.Data, &info) != nil || info.Data == nil {
				continue // a server the probe did not connect to has not built the account
			}
			ac, err := jwt.DecodeAccountClaims(info.Data.Jwt)
			if err != nil {
				continue
			}
			if got, _ := compiler.Canonical(ac); !bytes.Equal(got, want) {
				last = "the server still runs an older version"
				continue
			}
			// An import the exporter does not offer is not even listed: the server logs it and
			// leaves it out. So every import of the claims must be there, and valid.
			running := map[string]bool{}
			for _, i := range info.Data.Imports {
				if !i.Invalid {
					running[i.Subject+" "+i.Account] = true
				}
			}
			var dead []string
			for _, i := range a.Claims.Imports {
				if !running[string(i.Subject)+" "+i.Account] {
					dead = append(dead, fmt.Sprintf("%s from %s", i.Subject, i.Name))
				}
			}
			switch {
			case len(dead) > 0:
				last = fmt.Sprintf("imports the server could not resolve: %s", strings.Join(dead, ", "))
			case info.Data.JetStream != a.Claims.Limits.IsJSEnabled():
				last = fmt.Sprintf("JetStream is %v where the claims say %v", info.Data.JetStream, a.Claims.Limits.IsJSEnabled())
			default:
				return nil
			}
		}
	}
	if last == "" {
		last = "no server said how it runs the account"
	}
	return fmt.Errorf("account %s was pushed and takes connections, but does not work as derived: %s; push the accounts it imports from (meshc apply pushes them all) and apply again", a.Name, last)
}

// Pusher delivers one mesh's accounts in operator mode: the servers' resolver reached as the
// system user, and the claims the plan derives. Read says what the resolver holds, as the change
// model's principals; Deliver pushes what the change set creates and updates, exporters first,
// each proven by a probe; Remove revokes and deletes what the catalogue dropped, last.
type Pusher struct {
	Resolver *Resolver
	nc       *nats.Conn
	plan     *compiler.Plan
	// claims are the plan's accounts in push order (an account after those it imports from).
	claims []compiler.AccountClaims
	want   *change.Principals
	opts   PushOptions
	// held is what the last Read found, by account key; issued the issue time of each version
	// pushed since, by account key.
	held   map[string]heldAccount
	last   *change.Principals
	issued map[string]int64
	// MeshNew: the servers held no account under the mesh's key when the pusher opened.
	MeshNew bool
}

// NewPusher connects as the system user with the endpoint's settings (its servers, TLS and
// timeouts; system names the system user's credentials, in place of the endpoint's user) and
// asks every server for itself. signer may be nil for a pusher that only reads.
func NewPusher(ctx context.Context, e wire.Endpoint, system nats.Option, plan *compiler.Plan, signer nkeys.KeyPair, wait time.Duration) (*Pusher, error) {
	dial := func(extra ...nats.Option) (*nats.Conn, error) {
		return nats.Connect(e.URL, append(slices.Clone(e.Options), extra...)...)
	}
	nc, err := dial(nats.Name("meshc push"), system)
	if errors.Is(err, nats.ErrAuthorization) {
		return nil, fmt.Errorf("connect to %s: %w: the servers refused the system user; its credentials must be the system.creds `meshc operator init` wrote for the operator the servers trust ($%s or --system-creds)", wire.RedactURL(e.URL), err, operator.SystemCredsVar)
	}
	if err != nil {
		return nil, wire.DialError(wire.RedactURL(e.URL), "the system user", err)
	}
	p, err := PusherOn(ctx, nc, plan, PushOptions{Signer: signer, Dial: dial}, wait)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return p, nil
}

// PusherOn is a Pusher on a connection already made as the system user (meshc up's, a test's).
func PusherOn(ctx context.Context, nc *nats.Conn, plan *compiler.Plan, opts PushOptions, wait time.Duration) (*Pusher, error) {
	claims, err := plan.Claims()
	if err != nil {
		return nil, err
	}
	if err := compiler.CheckSizes(claims); err != nil {
		return nil, err
	}
	want := change.WantedOf(plan, claims)
	if opts.Concurrency <= 0 {
		opts.Concurrency = 16
	}
	opts.SigningKey = plan.Operator.SigningKey
	r, err := NewResolver(ctx, nc, wait)
	if err != nil {
		return nil, err
	}
	return &Pusher{Resolver: r, nc: nc, plan: plan, claims: compiler.PushOrder(claims), want: want, opts: opts}, nil
}

// Close closes the system user's connection.
func (p *Pusher) Close() { p.nc.Close() }

// Wanted is what the catalogue derives of the users and accounts.
func (p *Pusher) Wanted() *change.Principals { return p.want }

// Read says what the servers' resolver holds of this mesh's users and accounts, as principals:
// every account JWT any server holds (accounts of other tenants too, so a key the catalogue
// records that another's account holds is refused), with its tags, issue time and, for those the
// catalogue dropped, the JetStream streams it holds. js, when set, is the mesh account's
// JetStream, where apply records the issue time of what it pushed: a version held issued before
// it was put back by someone else.
func (p *Pusher) Read(ctx context.Context, js jetstream.JetStream) (*change.Principals, error) {
	held, err := p.Resolver.held(ctx, p.opts.Concurrency)
	if err != nil {
		return nil, err
	}
	p.held = held
	claims := make([]*jwt.AccountClaims, 0, len(held))
	for _, h := range held {
		claims = append(claims, h.claims)
	}
	ps := change.FromClaims(claims, p.plan, "the servers' resolver")
	owned := map[string]bool{}
	for _, a := range ps.Accounts {
		if a.Ownership == change.TaggedOurs || a.Ownership == change.TaggedMesh {
			owned[a.Key] = true
		}
	}
	// Another tenant's users are not this mesh's to compare: only the users of its accounts.
	ps.Users = slices.DeleteFunc(ps.Users, func(u change.Principal) bool { return !owned[u.Key] })
	var pushed map[string]int64
	if js != nil {
		if pushed, err = readPushed(ctx, js); err != nil {
			return nil, err
		}
	}
	wanted := map[string]bool{}
	for _, w := range p.want.Accounts {
		wanted[w.Key] = true
	}
	for i := range ps.Accounts {
		a := &ps.Accounts[i]
		h := held[a.Key].claims
		a.Pushed = pushed[a.Key]
		// The streams of an account meshc would revoke, or whose name the mesh's account has
		// under another key: said, and such an account is never deleted.
		if owned[a.Key] && !wanted[a.Key] && h.Limits.IsJSEnabled() {
			if a.Streams, err = p.streamsOf(ctx, a.Key); err != nil {
				return nil, err
			}
		}
	}
	ps.Servers, ps.Down, ps.ServersKnown = p.Resolver.Servers, p.Resolver.Down, p.Resolver.Known
	p.last = ps
	return ps, nil
}

// streamsOf asks every server which JetStream streams an account holds.
func (p *Pusher) streamsOf(ctx context.Context, key string) ([]string, error) {
	answers, err := p.Resolver.gather(ctx, accountJsz(key), []byte(`{"streams":true}`), len(p.Resolver.Servers), p.Resolver.Wait)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, a := range answers {
		// The account's detail (JszAccount): an error answer for a server that has not built it.
		var m struct {
			Data *struct {
				Streams []struct {
					Name string `json:"name"`
				} `json:"stream_detail"`
			} `json:"data"`
		}
		if json.Unmarshal(a.Data, &m) != nil || m.Data == nil {
			continue
		}
		for _, s := range m.Data.Streams {
			if !slices.Contains(out, s.Name) {
				out = append(out, s.Name)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// Bootstrap pushes the mesh's own account alone when the servers hold no account under its key:
// mesh-controller lives in it, and so does the lock every other write waits for, so this is the
// one push made before the lock (and a dry run makes none). It refuses, pushing nothing, when the
// servers hold the mesh's account under another key: JetStream keeps every stream under the old
// one.
func (p *Pusher) Bootstrap(ctx context.Context, dryRun bool) error {
	held, err := p.Read(ctx, nil)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(p.claims, func(a compiler.AccountClaims) bool { return a.Name == p.plan.Account })
	mesh := p.claims[i]
	if _, ok := p.held[mesh.Claims.Subject]; ok {
		return nil
	}
	for _, c := range change.DiffPrincipals(held, p.want, p.plan.Account) {
		if c.Kind == change.KindAccount && c.Principal == p.plan.Account && c.Refused != "" {
			return wire.Refused{Err: fmt.Errorf("%w, nothing was changed:\n  - %s", wire.ErrRefused, c.Refused)}
		}
	}
	p.MeshNew = true
	if dryRun {
		return nil
	}
	if _, err := p.push(ctx, []int{i}); err != nil {
		return err
	}
	return nil
}

// Delivered is what a delivery did: the names of what it pushed, revoked and deleted (accounts)
// or wrote and reloaded (an accounts file), and the servers that did not answer.
type Delivered struct {
	Pushed, Revoked, Deleted []string
	// Missing are the servers known that did not take every push: they catch up from the others
	// within one resolver interval of coming back.
	Missing []string
	// Written: the accounts file's bytes changed and were written; Reloads the server made
	// (0 when it already served the file, 2 when accounts were added); Path where it was written;
	// Server: a server was asked to serve it (--reload, meshc up's own).
	Written bool
	Reloads int
	Path    string
	Server  bool
	// Why are the reasons each reload was made, in order.
	Why []string
	// MeshNew: the servers held no account under the mesh's key before this delivery.
	MeshNew bool
}

// pushes are the accounts a change set pushes: each created or updated, and each holding a user
// created, changed or removed (a user's grants are a scope in its account's JWT).
func (p *Pusher) pushes(cs change.Changes) []int {
	keys := map[string]bool{}
	for _, c := range cs.Principals {
		switch {
		case c.Action == change.NoOp, c.Refused != "", c.Revokes:
		case c.Kind == change.KindAccount && c.Action != change.Delete:
			keys[c.Key] = true
		case c.Kind == change.KindUser:
			// The account it is in now, and the one it was in (a user moved, or removed).
			if w := p.want.User(c.Principal); w != nil {
				keys[w.Key] = true
			}
			if p.last != nil {
				if h := p.last.User(c.Principal); h != nil {
					keys[h.Key] = true
				}
			}
		}
	}
	var todo []int
	for i, a := range p.claims {
		if keys[a.Claims.Subject] {
			todo = append(todo, i)
		}
	}
	return todo
}

// Deliver pushes every account the change set creates or updates, exporters before importers,
// each level proven by a probe before the next, after fence says the lock still holds; then
// records on the bus (js) the issue time of each version pushed.
func (p *Pusher) Deliver(ctx context.Context, cs change.Changes, fence func(context.Context) error, js jetstream.JetStream) (Delivered, error) {
	if err := check(ctx, fence); err != nil {
		return Delivered{}, err
	}
	did, err := p.push(ctx, p.pushes(cs))
	if err != nil {
		return did, err
	}
	if js != nil && len(did.Pushed) > 0 {
		if err := check(ctx, fence); err != nil {
			return did, err
		}
		if err := recordPushed(ctx, js, p.issued); err != nil {
			return did, err
		}
	}
	return did, nil
}

// push pushes the accounts at those indices of the claims, in levels, each proven.
func (p *Pusher) push(ctx context.Context, todo []int) (Delivered, error) {
	var did Delivered
	missing := map[string]bool{}
	var mu sync.Mutex
	done := 0
	if p.issued == nil {
		p.issued = map[string]int64{}
	}
	for _, level := range levels(p.claims, todo) {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(p.opts.Concurrency)
		for _, i := range level {
			g.Go(func() error {
				a := p.claims[i]
				var held int64
				if h, ok := p.held[a.Claims.Subject]; ok {
					held = h.claims.IssuedAt
				}
				token, iat, err := operator.EncodeAccountAt(a.Claims, p.opts.Signer, held)
				if err != nil {
					return err
				}
				stored, err := p.Resolver.Push(gctx, a.Name, token)
				if err != nil {
					return err
				}
				mu.Lock()
				defer mu.Unlock()
				p.issued[a.Claims.Subject] = iat
				for _, s := range p.Resolver.Servers {
					if !slices.Contains(stored, s) {
						missing[s] = true
					}
				}
				done++
				if p.opts.Progress != nil {
					p.opts.Progress(done, len(todo), a.Name)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return did, err
		}
		// Proven level by level: a probe builds its account, and an account built while an
		// account it imports from is still being built can come up without that import (seen
		// once in the tests: $JS.API.INFO from the mesh's account, left out until the next push).
		if err := probeAll(ctx, p.Resolver, p.claims, level, p.opts); err != nil {
			return did, err
		}
	}
	for _, i := range todo {
		did.Pushed = append(did.Pushed, p.claims[i].Name)
	}
	if len(todo) > 0 {
		for _, s := range p.Resolver.Down {
			missing[s] = true
		}
	}
	did.Missing = slices.Sorted(maps.Keys(missing))
	return did, nil
}

// Remove revokes every account the change set revokes — a version newer than any held, with no
// signing keys (no user can connect, and those connected are closed), no connections, no exports
// and no imports, its JetStream left as it was — and then deletes those it deletes: last, after
// the streams, as --prune's deletes are.
func (p *Pusher) Remove(ctx context.Context, cs change.Changes, fence func(context.Context) error) (Delivered, error) {
	var did Delivered
	var drop []string
	for _, c := range cs.Principals {
		if c.Kind != change.KindAccount || c.Refused != "" {
			continue
		}
		h, ok := p.held[c.Key]
		if !ok {
			continue
		}
		if c.Revokes {
			if err := check(ctx, fence); err != nil {
				return did, err
			}
			token, err := operator.EncodeAccount(Revoking(h.claims), p.opts.Signer, h.claims.IssuedAt)
			if err != nil {
				return did, err
			}
			if _, err := p.Resolver.Push(ctx, c.Principal, token); err != nil {
				return did, err
			}
			did.Revoked = append(did.Revoked, c.Principal)
		}
		if c.Action == change.Delete {
			drop = append(drop, c.Key)
			did.Deleted = append(did.Deleted, c.Principal)
		}
	}
	if len(drop) == 0 {
		return did, nil
	}
	if err := check(ctx, fence); err != nil {
		return did, err
	}
	slices.Sort(drop)
	request, err := operator.DeleteRequest(p.opts.Signer, drop)
	if err != nil {
		return did, err
	}
	if _, err := p.Resolver.update(ctx, claimsDelete, fmt.Sprintf("deleting %d account(s) the catalogue no longer has", len(drop)), []byte(request)); err != nil {
		return did, fmt.Errorf("%w; a server needs allow_delete: true in its resolver block to delete (as `meshc operator init` writes it); the accounts stay revoked", err)
	}
	return did, nil
}

// PushClaims pushes every account of claims, exporters first, each proven by a probe, to a
// resolver that holds none of them (a throwaway bus: meshc verify's): no read, no diff, nothing
// removed.
func PushClaims(ctx context.Context, r *Resolver, claims []compiler.AccountClaims, opts PushOptions) (Delivered, error) {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 16
	}
	p := &Pusher{Resolver: r, claims: compiler.PushOrder(claims), opts: opts}
	all := make([]int, len(p.claims))
	for i := range all {
		all[i] = i
	}
	return p.push(ctx, all)
}

// Converge makes the resolver hold exactly the catalogue's accounts with no lock and no streams
// to wait for (meshc up's development bus, a benchmark): Read, the diff, Deliver and Remove. A
// change no flag permits is its error, and nothing is pushed.
func (p *Pusher) Converge(ctx context.Context) (Delivered, error) {
	held, err := p.Read(ctx, nil)
	if err != nil {
		return Delivered{}, err
	}
	meshNew := !slices.ContainsFunc(held.Accounts, func(a change.Principal) bool { return a.Key == p.plan.Operator.Accounts[p.plan.Account] })
	cs := change.Changes{Principals: change.DiffPrincipals(held, p.want, p.plan.Account)}
	if r := cs.Refusals(); len(r) > 0 {
		return Delivered{}, wire.Refused{Err: fmt.Errorf("%w, nothing was changed:\n  - %s", wire.ErrRefused, strings.Join(r, "\n  - "))}
	}
	did, err := p.Deliver(ctx, cs, nil, nil)
	did.MeshNew = meshNew
	if err != nil {
		return did, err
	}
	removed, err := p.Remove(ctx, cs, nil)
	did.Revoked, did.Deleted = removed.Revoked, removed.Deleted
	return did, err
}

// Revoking is an account's revoking version: what a server that missed the removal takes from the
// others when it returns, since the newest version wins their exchange (docs/nats.md, "Removing
// an account").
func Revoking(held *jwt.AccountClaims) *jwt.AccountClaims {
	rc := *held
	rc.SigningKeys = jwt.SigningKeys{}
	rc.Exports, rc.Imports = nil, nil
	rc.Limits.Conn, rc.Limits.LeafNodeConn = 0, 0
	rc.DefaultPermissions = jwt.Permissions{Pub: jwt.Permission{Deny: []string{">"}}, Sub: jwt.Permission{Deny: []string{">"}}}
	rc.Tags = append(slices.Clone(held.Tags), RevokedTag)
	return &rc
}

func check(ctx context.Context, fence func(context.Context) error) error {
	if fence == nil {
		return nil
	}
	return fence(ctx)
}

// OpenPusher reads operator mode's secrets — the operator's signing key (none for a dry run) and
// the system user's credentials, each from its file or else its environment variable — and
// connects as the system user with the connection's settings.
func OpenPusher(ctx context.Context, c wire.Connection, plan *compiler.Plan, keyPath, credsPath string, dryRun bool) (*Pusher, error) {
	var signer nkeys.KeyPair
	var err error
	if !dryRun {
		if signer, err = operator.SigningKey(keyPath, plan.Operator); err != nil {
			return nil, err
		}
	}
	system, err := operator.SystemUser(credsPath)
	if err != nil {
		return nil, err
	}
	return NewPusher(ctx, c.Endpoint, system, plan, signer, c.RequestTimeout)
}

// StartsEmpty refuses to create the mesh's streams on a bus that holds none of the plan's streams
// and where meshc never applied (no state bucket) unless newBus says the bus is new: a bus that
// ran from an accounts file keeps its streams in a directory named after the account's name, and
// in operator mode the server looks under its key (docs/nats.md, "Moving a bus to operator
// mode"). Creating them would start the mesh empty beside its history.
func StartsEmpty(live *change.State, plan *compiler.Plan, newBus bool) error {
	if plan.Operator == nil || newBus {
		return nil
	}
	for _, s := range live.Streams {
		if s.Name == compiler.ApplyBucketStream || slices.ContainsFunc(plan.Streams, func(p compiler.Stream) bool { return p.Config.Name == s.Name }) {
			return nil
		}
	}
	key := plan.Operator.Accounts[plan.Account]
	return fmt.Errorf("the mesh's account %s holds no stream, and meshc never applied to it: if the bus ran from an accounts file, its streams are in STORE/jetstream/%s on each server, "+
		"and in operator mode the server keeps them in STORE/jetstream/%s. On one server: stop it, move the one directory to the other (mv STORE/jetstream/%s STORE/jetstream/%s), start it and apply again. "+
		"On a cluster, whose meta group records each stream under the account's name, moving directories does not carry them: back each stream up while the bus still runs from the file (nats stream backup), and once switched restore it as mesh-controller (nats stream restore) before applying. "+
		"If this bus is new, apply with --new-bus to create the streams",
		plan.Account, plan.Account, key, plan.Account, key)
}
