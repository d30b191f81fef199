// Package up runs a catalogue's bus on this machine: an embedded nats-server with JetStream on
// 127.0.0.1, configured from a state directory holding development credentials, the accounts
// file meshc composes and the server's own half that includes it (in operator mode, a
// development operator and the account JWTs pushed to its resolver), with the plan applied as
// mesh-controller. `meshc up`, the permission proof, the benchmarks and the command's tests all
// start a bus through Start, so what the proof proves is what `up` runs.
package up

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/meshc-dev/meshc/apply"
	"github.com/meshc-dev/meshc/apply/deliver"
	"github.com/meshc-dev/meshc/apply/wire"
	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/internal/atomicfile"
	"github.com/meshc-dev/meshc/internal/natsserver"
)

// Options say where and how the bus runs.
type Options struct {
	// State is the state directory: the JetStream store, the server's configuration, the
	// accounts file and the development credentials. Required.
	State string
	// Port is the client port; 0 takes a free one.
	Port int
	// ServerConf is added to the server's own configuration: a test's feature flags, a
	// JetStream domain.
	ServerConf string
	// Ready bounds the server's start. Default 10 s.
	Ready time.Duration
	// NKeys runs a mesh with auth: nkey on development nkeys rather than development passwords:
	// the accounts file lists each user's public key, as the mesh's real one does (the
	// permission proof runs every mode so). Without it a local bus runs on passwords whatever
	// the mesh's auth, since the nkey seeds are their holders'.
	NKeys bool
}

// Bus is a running local bus.
type Bus struct {
	Server *server.Server
	// URL is where clients connect.
	URL   string
	State string
	conf  string
	plan  *compiler.Plan
	dev   map[string]devCredential
	// nkeys: the users connect with their development nkeys (Options.NKeys).
	nkeys bool
	// op is the development operator of a mesh with auth: operator, nil for any other.
	op *devOperator
	// Pushed is what the last push to the resolver did, in operator mode.
	Pushed deliver.Delivered
	// delivered is the accounts file last delivered to the server, recorded on the bus by Apply.
	delivered []byte
}

// Start runs plan on a new embedded server: it mints a development password for every user that
// has none in the state directory, composes the accounts file with their hashes, writes the
// server's own configuration including it, starts the server, and applies the plan as
// mesh-controller with the grants the catalogue gives it. It returns the bus and what the apply
// changed. Ending ctx (Ctrl-C) stops it at any step.
//
// A mesh with auth: operator runs on a development operator instead (operator.go): the server
// trusts it and keeps a resolver, and the accounts are pushed to it before the plan is applied.
func Start(ctx context.Context, plan *compiler.Plan, opts Options) (*Bus, change.Changes, error) {
	if opts.Ready <= 0 {
		opts.Ready = 10 * time.Second
	}
	b := &Bus{State: opts.State, plan: plan, nkeys: opts.NKeys && plan.NKeys}
	var err error
	if err := CheckCanStart(opts.State, opts.Port); err != nil {
		return nil, change.Changes{}, err
	}
	include := emit.AccountsFile
	if plan.Operator != nil {
		if b.op, err = Interruptible(ctx, func() (*devOperator, error) { return developmentOperator(opts.State, plan) }); err != nil {
			return nil, change.Changes{}, err
		}
		if _, err := moveStore(opts.State, plan.Account, b.op.keys.Accounts[plan.Account]); err != nil {
			return nil, change.Changes{}, err
		}
		if err := b.op.writeOperatorConf(opts.State); err != nil {
			return nil, change.Changes{}, err
		}
		include = operatorConfFile
	} else {
		if b.dev, err = Interruptible(ctx, func() (map[string]devCredential, error) { return developmentCredentials(opts.State, plan, b.nkeys) }); err != nil {
			return nil, change.Changes{}, err
		}
		if _, err := b.deliverAccounts(ctx, nil); err != nil {
			return nil, change.Changes{}, err
		}
	}
	if b.conf, err = writeServerConf(opts.State, opts.Port, opts.ServerConf, include); err != nil {
		return nil, change.Changes{}, err
	}
	if b.Server, err = natsserver.FromConfig(ctx, b.conf, false, opts.Ready); err != nil {
		return nil, change.Changes{}, err
	}
	b.URL = b.Server.ClientURL()
	if b.op != nil {
		if b.Pushed, err = Interruptible(ctx, func() (deliver.Delivered, error) { return b.push(ctx) }); err != nil {
			b.Stop()
			return nil, change.Changes{}, fmt.Errorf("pushing the accounts: %w", err)
		}
	}
	changes, err := Interruptible(ctx, func() (change.Changes, error) { return b.Apply(ctx) })
	if err != nil {
		b.Stop()
		return nil, change.Changes{}, err
	}
	return b, changes, nil
}

// Stop shuts the server down and waits until it has.
func (b *Bus) Stop() {
	b.Server.Shutdown()
	b.Server.WaitForShutdown()
}

// Plan is the plan the bus runs.
func (b *Bus) Plan() *compiler.Plan { return b.plan }

// LocalPlan is the plan as the bus holds it: in operator mode, with the development operator's
// keys, by which the server names accounts (a tool server's check of its callers needs them).
func (b *Bus) LocalPlan() *compiler.Plan {
	if b.op == nil {
		return b.plan
	}
	return b.op.localPlan(b.plan)
}

// Password is a user's development password ("" in operator mode: users connect with JWTs).
func (b *Bus) Password(user string) string { return b.dev[user].Password }

// AccountKey is the development key of an account in operator mode, for a test that forges
// credentials.
func (b *Bus) AccountKey(account string) string { return b.op.keys.Accounts[account] }

// UserSigner is a user's development signing key in operator mode, for a test that forges
// credentials.
func (b *Bus) UserSigner(user string) nkeys.KeyPair {
	kp, _ := nkeys.FromSeed([]byte(b.op.keys.Users[user]))
	return kp
}

// As is the option that connects as a bus user: its development password (its development nkey
// with Options.NKeys), or in operator mode a JWT signed by its development signing key.
func (b *Bus) As(user string) nats.Option {
	if b.nkeys {
		kp, err := nkeys.FromSeed([]byte(b.dev[user].Seed))
		if err != nil {
			return func(*nats.Options) error { return fmt.Errorf("no development nkey for %s: %w", user, err) }
		}
		public, _ := kp.PublicKey()
		return nats.Nkey(public, kp.Sign)
	}
	if b.op == nil {
		return nats.UserInfo(user, b.Password(user))
	}
	opt, err := b.op.userOption(b.plan, user)
	if err != nil {
		return func(*nats.Options) error { return err }
	}
	return opt
}

// Connect connects as a bus user with its development credentials and the inbox prefix its
// grant names, as every mesh client does.
func (b *Bus) Connect(user string, opts ...nats.Option) (*nats.Conn, error) {
	return wire.Dial(b.URL, append([]nats.Option{
		b.As(user),
		nats.CustomInboxPrefix(compiler.InboxPrefix(user)),
	}, opts...)...)
}

// Controller is how mesh-controller reaches the bus: its development credentials, and the inbox
// prefix its grant names.
func (b *Bus) Controller() wire.Endpoint {
	return wire.Endpoint{
		URL: b.URL, User: compiler.ControllerUser,
		Options: []nats.Option{
			nats.Name("meshc up"),
			b.As(compiler.ControllerUser),
			nats.CustomInboxPrefix(compiler.InboxPrefix(compiler.ControllerUser)),
		},
	}
}

// Apply reads the bus as mesh-controller, with the permissions the catalogue gives it and nothing
// more, and asserts the plan; it returns what it found to change.
//
// A change the server makes by dropping stored messages (a limit lowered, or first set on a
// state directory from before meshc derived it) is made: this is a development bus, running the
// catalogue is what it is for, and a state directory that could not start again after a limit
// changed would have to be deleted, which loses everything. Dropped says which changes did.
func (b *Bus) Apply(ctx context.Context) (change.Changes, error) {
	return applyAs(ctx, b.Controller(), b.plan, b.record)
}

// ApplyAs reads the bus as the endpoint's user, with that user's own grants and nothing more,
// and asserts plan, making the changes that drop stored messages too (Apply says why a local bus
// may); it returns what it found to change. `meshc verify` applies a golden plan.json to its
// throwaway server the same way.
func ApplyAs(ctx context.Context, e wire.Endpoint, plan *compiler.Plan) (change.Changes, error) {
	return applyAs(ctx, e, plan, nil)
}

// applyAs is ApplyAs, then after (when set) on the same connection: the record of the accounts.
func applyAs(ctx context.Context, e wire.Endpoint, plan *compiler.Plan, after func(context.Context, jetstream.JetStream) error) (change.Changes, error) {
	bus, err := wire.Connect(e)
	if err != nil {
		return change.Changes{}, err
	}
	defer bus.Close()
	ctx, cancel := bus.Watch(ctx)
	defer cancel()
	if err := bus.CheckJetStream(ctx, 10*time.Second); err != nil {
		return change.Changes{}, err
	}
	live, err := wire.Read(ctx, bus, wire.ReadOptions{APIPrefix: bus.APIPrefix})
	if err != nil {
		return change.Changes{}, err
	}
	changes := change.Diff(live, plan, change.DiffOptions{})
	js, err := bus.JetStream()
	if err != nil {
		return changes, err
	}
	if !changes.Empty() {
		if _, err := apply.Apply(ctx, js, changes, apply.Options{AllowDiscard: true}); err != nil {
			return changes, err
		}
	}
	if after == nil {
		return changes, nil
	}
	return changes, after(ctx, js)
}

// Dropped says, one line a change, what an apply changed by dropping stored messages.
func Dropped(cs change.Changes) []string {
	var out []string
	for _, c := range cs.Items {
		var fields []string
		for _, f := range c.Discarding() {
			fields = append(fields, fmt.Sprintf("%s %s → %s", f.Name, f.Old, f.New))
		}
		if len(fields) > 0 {
			out = append(out, fmt.Sprintf("stream %s: %s may have dropped stored messages (a development bus runs what the catalogue says)", c.Stream, strings.Join(fields, ", ")))
		}
	}
	return out
}

// Update runs a new plan on the running bus: development credentials for the users it adds, the
// accounts file recomposed and delivered to the server in place (existing connections stay), and
// the plan applied. It returns how many times the server reloaded (two when the plan added
// accounts) and what the apply changed. In operator mode the accounts that changed are pushed
// instead, and the server never reloads.
func (b *Bus) Update(ctx context.Context, plan *compiler.Plan) (int, change.Changes, error) {
	if b.op != nil {
		op, err := developmentOperator(b.State, plan)
		if err != nil {
			return 0, change.Changes{}, err
		}
		b.plan, b.op = plan, op
		if b.Pushed, err = b.push(ctx); err != nil {
			return 0, change.Changes{}, fmt.Errorf("pushing the accounts: %w", err)
		}
		changes, err := b.Apply(ctx)
		return 0, changes, err
	}
	dev, err := developmentCredentials(b.State, plan, b.nkeys)
	if err != nil {
		return 0, change.Changes{}, err
	}
	b.plan, b.dev = plan, dev
	delivered, err := b.deliverAccounts(ctx, deliver.InProcess{Server: b.Server, Config: b.conf})
	if err != nil {
		return 0, change.Changes{}, fmt.Errorf("reloading the accounts: %w", err)
	}
	changes, err := b.Apply(ctx)
	return delivered.Reloads, changes, err
}

// deliverAccounts composes the accounts file with the development hashes and delivers it to
// STATE/accounts.conf, and to the server when there is one.
func (b *Bus) deliverAccounts(ctx context.Context, server deliver.Reloader) (deliver.Delivered, error) {
	local := *b.plan
	local.Users = slices.Clone(b.plan.Users)
	for i := range local.Users {
		dev := b.dev[local.Users[i].Name]
		local.Users[i].Hash = dev.Hash
		// A local bus runs on development passwords whatever auth the mesh uses: the nkey
		// seeds are their holders', and never on this machine. Unless asked to run on
		// development nkeys.
		local.Users[i].NKey = ""
		if b.nkeys {
			local.Users[i].Hash, local.Users[i].NKey = "", dev.NKey
		}
	}
	data, err := emit.Accounts(&local, emit.AccountsOptions{})
	if err != nil {
		return deliver.Delivered{}, err
	}
	d, err := deliver.PrepareAccounts(ctx, data, filepath.Join(b.State, emit.AccountsFile), server)
	if err != nil {
		return deliver.Delivered{}, err
	}
	did, err := d.Deliver(ctx)
	if err == nil {
		b.delivered = data
	}
	return did, err
}

// record records on the bus the accounts file the server was given, as `meshc apply --accounts`
// does, marked as development credentials: a plan against this bus compares its users and
// accounts, and leaves the credentials, which are this machine's and not the catalogue's, out.
func (b *Bus) record(ctx context.Context, js jetstream.JetStream) error {
	if b.delivered == nil {
		return nil
	}
	ps, err := change.FromAccountsFile(b.delivered, "meshc up's accounts file")
	if err != nil {
		return err
	}
	// Best effort: a mesh whose limits leave no room for apply's bucket still runs, and a plan
	// against it says it cannot tell.
	_ = deliver.RecordAccounts(ctx, js, deliver.AccountsRecord{Digest: deliver.AccountsDigest(b.delivered), At: time.Now(), By: "meshc up", Development: true}, ps)
	return nil
}

// WriteServerConf writes the server's own half, STATE/server.conf: the listener, the JetStream
// store, anything extra (a test's feature flags, a JetStream domain), and the accounts by a
// relative include (an absolute include path is resolved relative to this file's directory:
// docs/nats.md, "Includes and variables"). Port 0 is a free one.
func WriteServerConf(stateDir string, port int, extra string) (string, error) {
	return writeServerConf(stateDir, port, extra, emit.AccountsFile)
}

// WriteServerConfIncluding is WriteServerConf including another file than the accounts file:
// in operator mode, the server's trust in an operator.
func WriteServerConfIncluding(stateDir string, port int, extra, include string) (string, error) {
	return writeServerConf(stateDir, port, extra, include)
}

// writeServerConf is WriteServerConf including another file: in operator mode, the operator's.
func writeServerConf(stateDir string, port int, extra, include string) (string, error) {
	store, err := filepath.Abs(filepath.Join(stateDir, "jetstream"))
	if err != nil {
		return "", err
	}
	if port == 0 {
		port = -1
	}
	if extra != "" && !strings.HasSuffix(extra, "\n") {
		extra += "\n"
	}
	// max_control_line: a client's longest protocol line (compiler.MaxControlLine).
	conf := fmt.Sprintf("# Written by meshc.\nhost: \"127.0.0.1\"\nport: %d\nmax_control_line: %d\njetstream {\n  store_dir: %q\n}\n%sinclude %q\n", port, compiler.MaxControlLine, store, extra, include)
	path := filepath.Join(stateDir, "server.conf")
	return path, atomicfile.Write(path, []byte(conf), 0o600)
}
