package apply

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
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

// The resolver's subjects (nats-server's own).
const (
	claimsUpdate = "$SYS.REQ.CLAIMS.UPDATE"
	claimsList   = "$SYS.REQ.CLAIMS.LIST"
	claimsDelete = "$SYS.REQ.CLAIMS.DELETE"
	claimsPack   = "$SYS.REQ.CLAIMS.PACK"
	serverPing   = "$SYS.REQ.SERVER.PING"
)

func claimsLookup(account string) string { return "$SYS.REQ.ACCOUNT." + account + ".CLAIMS.LOOKUP" }
func accountInfo(account string) string  { return "$SYS.REQ.ACCOUNT." + account + ".INFO" }

// Resolver is the servers' account resolver, reached as the system user.
type Resolver struct {
	nc *nats.Conn
	// Servers are the names of the servers that answered when it was reached.
	Servers []string
	// Down are the servers of the cluster that did not answer: JetStream's meta group knows
	// them, and they are down or cut off. A push does not reach them until they catch up.
	Down []string
	// Wait bounds each request: how long the servers that have not answered are waited for.
	Wait time.Duration
}

// serverInfo is who answered: every system answer carries it.
type serverInfo struct {
	Name string `json:"name"`
	ID   string `json:"id"`
}

// NewResolver asks every server for itself, so a request later knows how many answers to wait
// for. A server that does not answer now (down) is not waited for later either.
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
		if answers, err = r.gather(ctx, serverPing, nil, 0, min(wait, 2*time.Second)); err != nil {
			return nil, err
		}
	}
	known := map[string]bool{}
	for _, a := range answers {
		var m struct {
			Server serverInfo `json:"server"`
			Stats  struct {
				JetStream *struct {
					Meta *struct {
						Replicas []struct {
							Name string `json:"name"`
						} `json:"replicas"`
					} `json:"meta"`
				} `json:"jetstream"`
			} `json:"statsz"`
		}
		if json.Unmarshal(a.Data, &m) == nil {
			r.Servers = append(r.Servers, m.Server.Name)
			if js := m.Stats.JetStream; js != nil && js.Meta != nil {
				for _, p := range js.Meta.Replicas {
					known[p.Name] = true
				}
			}
		}
	}
	for name := range known {
		if !slices.Contains(r.Servers, name) {
			r.Down = append(r.Down, name)
		}
	}
	slices.Sort(r.Down)
	if len(r.Servers) == 0 {
		return nil, fmt.Errorf("no server answered %s: connect as the system user (its credentials from `meshc operator init`, in $%s or --system-creds), and the servers must run in operator mode with that system account",
			serverPing, operator.SystemCredsVar)
	}
	slices.Sort(r.Servers)
	return r, nil
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

// Held is what the resolver holds for one account: the newest version any server has, and
// whether every server that answered holds exactly what the catalogue derives.
type Held struct {
	// Current: every answer is the catalogue's claims, signed by the operator's signing key.
	Current bool
	// IssuedAt is the newest issue time held, 0 for none: a new version is issued after it.
	IssuedAt int64
	// Tagged: a version held carries the mesh's tag (compiler.OwnerTag).
	Tagged bool
	// Exists: some server holds it.
	Exists bool
}

// heldOf compares what the servers hold for an account with its claims (nil: only reads it).
func heldOf(answers []string, want []byte, signer string, tag string) (Held, error) {
	h := Held{Current: len(answers) > 0}
	for _, token := range answers {
		if token == "" {
			h.Current = false
			continue
		}
		ac, err := jwt.DecodeAccountClaims(token)
		if err != nil {
			h.Current = false
			continue
		}
		h.Exists = true
		h.IssuedAt = max(h.IssuedAt, ac.IssuedAt)
		h.Tagged = h.Tagged || ac.Tags.Contains(tag)
		got, err := compiler.Canonical(ac)
		if err != nil {
			return h, err
		}
		if want == nil || ac.Issuer != signer || !bytes.Equal(got, want) {
			h.Current = false
		}
	}
	return h, nil
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
	// DryRun compares and says what would be pushed, pushing nothing.
	DryRun bool
	// Progress, when set, hears of each account pushed.
	Progress func(done, total int, name string)
	// keepOthers leaves alone the mesh's accounts the claims do not name (a push of some).
	keepOthers bool
}

// Pushed is what a push did.
type Pushed struct {
	// Pushed, Unchanged and Deleted are account names (Deleted: keys, the catalogue no longer
	// naming them).
	Pushed, Unchanged, Deleted []string
	// MeshNew: the resolver held no mesh account before this push. A bus that ran from an
	// accounts file keeps its streams under the account's name, not its key (docs/nats.md,
	// "Moving a bus to operator mode").
	MeshNew bool
	// Servers are the servers that answered; Missing those known that did not take every push.
	Servers, Missing []string
}

// PushAccounts makes the resolver hold exactly the mesh's accounts: it asks what each server
// holds, pushes the accounts that differ (exporters before importers), proves each pushed account
// works by connecting a user of it and asking the server whether its imports resolved, and
// deletes the accounts of this mesh the catalogue no longer has. It needs no file on the
// server's host and no signal: the server applies each push as it comes.
func PushAccounts(ctx context.Context, r *Resolver, mesh string, claims []compiler.AccountClaims, opts PushOptions) (Pushed, error) {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 16
	}
	var out Pushed
	out.Servers = r.Servers
	if err := compiler.CheckSizes(claims); err != nil {
		return out, err
	}
	signer := opts.SigningKey
	if opts.Signer != nil {
		var err error
		if signer, err = opts.Signer.PublicKey(); err != nil {
			return out, err
		}
	}
	tag := compiler.OwnerTag(mesh)
	listed, err := r.List(ctx)
	if err != nil {
		return out, err
	}

	// What the resolver holds: every JWT of one server in one read, and which accounts every
	// server holds. An account that differs there, or that a server lacks, is then asked of every
	// server (a lookup each answers), for the newest issue time any holds.
	claims = compiler.PushOrder(claims)
	packed, err := r.Pack(ctx)
	if err != nil {
		return out, err
	}
	state := make([]Held, len(claims))
	canonical := make([][]byte, len(claims))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Concurrency)
	for i, a := range claims {
		if canonical[i], err = compiler.Canonical(a.Claims); err != nil {
			return out, err
		}
		key := a.Claims.Subject
		if state[i], err = heldOf([]string{packed[key]}, canonical[i], signer, tag); err != nil {
			return out, err
		}
		if state[i].Current && listed[key] == len(r.Servers) {
			continue
		}
		g.Go(func() error {
			answers, err := r.Lookup(gctx, key)
			if err != nil {
				return err
			}
			h, err := heldOf(answers, canonical[i], signer, tag)
			state[i] = Held{Current: false, IssuedAt: max(h.IssuedAt, state[i].IssuedAt), Tagged: h.Tagged, Exists: h.Exists || state[i].Exists}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return out, err
	}
	for i, a := range claims {
		if a.Name == mesh && !state[i].Exists {
			out.MeshNew = true
		}
	}

	// Pushed in levels: an account after every account it imports from.
	var todo []int
	for i := range claims {
		if state[i].Current {
			out.Unchanged = append(out.Unchanged, claims[i].Name)
		} else {
			todo = append(todo, i)
		}
	}
	if !opts.DryRun {
		missing := map[string]bool{}
		var mu sync.Mutex
		done := 0
		for _, level := range levels(claims, todo) {
			g, gctx := errgroup.WithContext(ctx)
			g.SetLimit(opts.Concurrency)
			for _, i := range level {
				g.Go(func() error {
					token, err := operator.EncodeAccount(claims[i].Claims, opts.Signer, state[i].IssuedAt)
					if err != nil {
						return err
					}
					stored, err := r.Push(gctx, claims[i].Name, token)
					if err != nil {
						return err
					}
					mu.Lock()
					for _, s := range r.Servers {
						if !slices.Contains(stored, s) {
							missing[s] = true
						}
					}
					done++
					if opts.Progress != nil {
						opts.Progress(done, len(todo), claims[i].Name)
					}
					mu.Unlock()
					return nil
				})
			}
			if err := g.Wait(); err != nil {
				return out, err
			}
			// Proven level by level: a probe builds its account, and an account built while an
			// account it imports from is still being built can come up without that import
			// (seen once in the tests: $JS.API.INFO from the mesh's account, left out until the next
			// push).
			if err := probeAll(ctx, r, claims, level, opts); err != nil {
				return out, err
			}
		}
		for _, s := range r.Down {
			missing[s] = true
		}
		for s := range missing {
			out.Missing = append(out.Missing, s)
		}
		slices.Sort(out.Missing)
	}
	for _, i := range todo {
		out.Pushed = append(out.Pushed, claims[i].Name)
	}

	// The mesh's accounts the catalogue dropped: only those carrying its tag, never another's.
	wanted := map[string]bool{}
	for _, a := range claims {
		wanted[a.Claims.Subject] = true
	}
	var drop []string
	for key := range listed {
		if wanted[key] || opts.keepOthers {
			continue
		}
		answers := []string{packed[key]}
		if packed[key] == "" {
			if answers, err = r.Lookup(ctx, key); err != nil {
				return out, err
			}
		}
		h, err := heldOf(answers, nil, signer, tag)
		if err != nil {
			return out, err
		}
		if h.Tagged {
			drop = append(drop, key)
		}
	}
	slices.Sort(drop)
	out.Deleted = drop
	if len(drop) > 0 && !opts.DryRun {
		request, err := operator.DeleteRequest(opts.Signer, drop)
		if err != nil {
			return out, err
		}
		if _, err := r.update(ctx, claimsDelete, fmt.Sprintf("deleting %d account(s) the catalogue no longer has", len(drop)), []byte(request)); err != nil {
			return out, fmt.Errorf("%w; a server needs allow_delete: true in its resolver block to delete (as `meshc operator init` writes it)", err)
		}
	}
	return out, nil
}

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

// Pusher pushes one mesh's accounts from a command: the resolver reached as the system user, and
// the claims the plan derives.
type Pusher struct {
	Resolver *Resolver
	nc       *nats.Conn
	mesh     string
	claims   []compiler.AccountClaims
	opts     PushOptions
	// first is what pushing the mesh's account on opening did (OpenDelivery).
	first Pushed
}

// NewPusher connects as the system user with the endpoint's settings (its servers, TLS and
// timeouts; system names the system user's credentials, in place of the endpoint's user) and
// asks every server for itself. signer may be nil for a pusher that only reads (Status).
func NewPusher(ctx context.Context, e Endpoint, system nats.Option, plan *compiler.Plan, signer nkeys.KeyPair, wait time.Duration) (*Pusher, error) {
	claims, err := plan.Claims()
	if err != nil {
		return nil, err
	}
	if err := compiler.CheckSizes(claims); err != nil {
		return nil, err
	}
	dial := func(extra ...nats.Option) (*nats.Conn, error) {
		return nats.Connect(e.URL, append(slices.Clone(e.Options), extra...)...)
	}
	nc, err := dial(nats.Name("meshc push"), system)
	if errors.Is(err, nats.ErrAuthorization) {
		return nil, fmt.Errorf("connect to %s: %w: the servers refused the system user; its credentials must be the system.creds `meshc operator init` wrote for the operator the servers trust ($%s or --system-creds)", RedactURL(e.URL), err, operator.SystemCredsVar)
	}
	if err != nil {
		return nil, dialError(RedactURL(e.URL), "the system user", err)
	}
	r, err := NewResolver(ctx, nc, wait)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &Pusher{Resolver: r, nc: nc, mesh: plan.Account, claims: claims,
		opts: PushOptions{Signer: signer, SigningKey: plan.Operator.SigningKey, Dial: dial}}, nil
}

// Close closes the system user's connection.
func (p *Pusher) Close() { p.nc.Close() }

// Mesh pushes the mesh's own account alone, when the resolver does not hold it as derived: the
// controller lives there, and so does the lock apply takes before it pushes the rest.
func (p *Pusher) Mesh(ctx context.Context) (Pushed, error) {
	opts := p.opts
	opts.keepOthers = true
	i := slices.IndexFunc(p.claims, func(a compiler.AccountClaims) bool { return a.Name == p.mesh })
	return PushAccounts(ctx, p.Resolver, p.mesh, p.claims[i:i+1], opts)
}

// All makes the resolver hold exactly the mesh's accounts (PushAccounts).
func (p *Pusher) All(ctx context.Context, progress func(done, total int, name string)) (Pushed, error) {
	opts := p.opts
	opts.Progress = progress
	return PushAccounts(ctx, p.Resolver, p.mesh, p.claims, opts)
}

// Status is what the resolver holds of the mesh against what the catalogue derives, pushing
// nothing: the accounts a push would send (Pushed) and delete, and those already current. It is
// operator mode's delivery status for plan and apply --dry-run.
func (p *Pusher) Status(ctx context.Context) (Pushed, error) {
	opts := p.opts
	opts.DryRun = true
	return PushAccounts(ctx, p.Resolver, p.mesh, p.claims, opts)
}

// After is what two pushes did, first then p: an account the first pushed is pushed, not
// unchanged.
func (p Pushed) After(first Pushed) Pushed {
	for _, name := range first.Pushed {
		if !slices.Contains(p.Pushed, name) {
			p.Pushed = append(p.Pushed, name)
		}
		p.Unchanged = slices.DeleteFunc(p.Unchanged, func(u string) bool { return u == name })
	}
	for _, s := range first.Missing {
		if !slices.Contains(p.Missing, s) {
			p.Missing = append(p.Missing, s)
		}
	}
	p.MeshNew = p.MeshNew || first.MeshNew
	return p
}

// Say is what a push did, in a sentence.
func (p Pushed) Say(dryRun bool) string {
	verb, deleted := "pushed", "deleted"
	if dryRun {
		verb, deleted = "would push", "would delete"
	}
	s := fmt.Sprintf("%s %d account(s), %d unchanged", verb, len(p.Pushed), len(p.Unchanged))
	if len(p.Pushed) > 0 && len(p.Pushed) <= 5 {
		s += " (" + strings.Join(p.Pushed, ", ") + ")"
	}
	if len(p.Deleted) > 0 {
		s += fmt.Sprintf("; %s %d the catalogue no longer has", deleted, len(p.Deleted))
	}
	if !dryRun && len(p.Pushed) > 0 {
		s += "; each proven by a user of it connecting"
	}
	if len(p.Missing) > 0 {
		s += fmt.Sprintf("; %s did not answer and catch(es) up from the others within one resolver interval of coming back", strings.Join(p.Missing, ", "))
	}
	return s
}

// OpenPusher reads operator mode's secrets — the operator's signing key (none for a dry run) and
// the system user's credentials, each from its file or else its environment variable — and
// connects as the system user with the connection's settings.
func OpenPusher(ctx context.Context, c Connection, plan *compiler.Plan, keyPath, credsPath string, dryRun bool) (*Pusher, error) {
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

// OpenDelivery is OpenPusher, then the mesh's own account pushed when the resolver does not hold
// it as derived: mesh-controller lives in it, and the lock apply takes before it pushes the rest
// (Deliver) lives in its JetStream. A dry run pushes nothing.
func OpenDelivery(ctx context.Context, c Connection, plan *compiler.Plan, keyPath, credsPath string, dryRun bool) (*Pusher, error) {
	p, err := OpenPusher(ctx, c, plan, keyPath, credsPath, dryRun)
	if err != nil {
		return nil, err
	}
	if !dryRun {
		if p.first, err = p.Mesh(ctx); err != nil {
			p.Close()
			return nil, err
		}
	}
	return p, nil
}

// Deliver pushes every account (a dry run: says what it would push), checking fence first when
// set (the push is a write under apply's lock), and says what it did, the mesh's account pushed
// on opening included.
func (p *Pusher) Deliver(ctx context.Context, fence func(context.Context) error, dryRun bool) (string, error) {
	if dryRun {
		did, err := p.Status(ctx)
		return did.Say(true), err
	}
	if fence != nil {
		if err := fence(ctx); err != nil {
			return "", err
		}
	}
	did, err := p.All(ctx, nil)
	return did.After(p.first).Say(false), err
}

// StartsEmpty is the package's StartsEmpty for what this pusher pushed on opening.
func (p *Pusher) StartsEmpty(live *change.State, plan *compiler.Plan) error {
	return StartsEmpty(p.first, live, plan)
}

// StartsEmpty refuses to create the mesh's streams when the resolver never held the mesh's account
// before this apply (first is what pushing it did) and the bus holds none of the plan's streams:
// a bus that ran from an accounts file keeps its streams in a directory named after the account's
// name, and in operator mode the server looks under its key (docs/nats.md, "Moving a bus to
// operator mode"). Creating them would start the mesh empty beside its history.
func StartsEmpty(first Pushed, live *change.State, plan *compiler.Plan) error {
	if !first.MeshNew {
		return nil
	}
	for _, s := range live.Streams {
		if slices.ContainsFunc(plan.Streams, func(p compiler.Stream) bool { return p.Config.Name == s.Name }) {
			return nil
		}
	}
	key := plan.Operator.Accounts[plan.Account]
	return fmt.Errorf("the mesh's account %s is new to these servers and holds no stream: if the bus ran from an accounts file, its streams are in STORE/jetstream/%s on each server, "+
		"and in operator mode the server keeps them in STORE/jetstream/%s. On one server: stop it, move the one directory to the other (mv STORE/jetstream/%s STORE/jetstream/%s), start it and apply again. "+
		"On a cluster, whose meta group records each stream under the account's name, moving directories does not carry them: back each stream up while the bus still runs from the file (nats stream backup), and once switched restore it as mesh-controller (nats stream restore) before applying. "+
		"If this bus is new, apply with --new-bus to create the streams",
		plan.Account, plan.Account, key, plan.Account, key)
}
