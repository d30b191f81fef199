package deliver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
)

// A Delivery is how a bus receives its users and accounts (docs/nats.md, "Users and accounts in
// the plan"): an accounts file its server reloads (password and nkey auth: FileDelivery), the
// record of one delivered elsewhere (RecordedDelivery), or account JWTs pushed to its resolver
// (operator mode: Pusher). A run reads, diffs and delivers through it alike, chosen once from the
// plan: what the bus holds is read into the change model, the diff is pure, and every write comes
// after the refusals and under the lock.
type Delivery interface {
	// Wanted is what the catalogue derives, in the shape Read returns.
	Wanted() *change.Principals
	// Read says what the bus holds. js is the mesh account's JetStream, where apply records what
	// it delivered (nil before mesh-controller can connect).
	Read(ctx context.Context, js jetstream.JetStream) (*change.Principals, error)
	// Deliver makes the bus hold the change set's users and accounts (what it creates and
	// updates), asking fence before each write.
	Deliver(ctx context.Context, cs change.Changes, fence func(context.Context) error, js jetstream.JetStream) (Delivered, error)
	// Remove removes what the change set removes: last, after the streams.
	Remove(ctx context.Context, cs change.Changes, fence func(context.Context) error) (Delivered, error)
}

// FileDelivery delivers the composed accounts file to where a server reads it (`meshc apply
// --accounts PATH [--reload PID]`, meshc up's own server), and records the delivery on the bus.
type FileDelivery struct {
	*AccountsDelivery
	want *change.Principals
	// Monitor is the server's monitoring endpoint, whose config_digest the record keeps ("").
	Monitor string
	// By is who delivered, for the record.
	By string
}

// NewFileDelivery is the delivery of the plan's accounts file through d.
func NewFileDelivery(d *AccountsDelivery, monitor, by string) (*FileDelivery, error) {
	want, err := change.FromAccountsFile(d.data, "the catalogue")
	if err != nil {
		return nil, err
	}
	return &FileDelivery{AccountsDelivery: d, want: want, Monitor: monitor, By: by}, nil
}

func (f *FileDelivery) Wanted() *change.Principals { return f.want }

// Read reads the accounts file where it is delivered: what the server there is given.
func (f *FileDelivery) Read(context.Context, jetstream.JetStream) (*change.Principals, error) {
	at, err := lookAtAccounts(f.path)
	if err != nil {
		return nil, err
	}
	from := "the accounts file " + f.path
	if !at.exists {
		return &change.Principals{Known: change.KnownWhole, From: from + " (not there yet)"}, nil
	}
	return change.FromAccountsFile(at.current, from)
}

// Deliver writes the file when its bytes changed and has the server load it until it is proven
// to serve it (AccountsDelivery.Deliver), then records the delivery on the bus.
func (f *FileDelivery) Deliver(ctx context.Context, _ change.Changes, fence func(context.Context) error, js jetstream.JetStream) (Delivered, error) {
	f.Fence = fence
	did, err := f.AccountsDelivery.Deliver(ctx)
	if err != nil || js == nil {
		return did, err
	}
	if err := check(ctx, fence); err != nil {
		return did, err
	}
	rec := AccountsRecord{Digest: AccountsDigest(f.data), At: time.Now(), By: f.By}
	if f.server != nil && f.Monitor != "" {
		rec.ConfigDigest, _ = ServerConfigDigest(ctx, f.Monitor)
	}
	return did, RecordAccounts(ctx, js, rec, f.want)
}

// Remove removes nothing: the file delivered holds no user the catalogue dropped.
func (f *FileDelivery) Remove(context.Context, change.Changes, func(context.Context) error) (Delivered, error) {
	return Delivered{}, nil
}

// RecordedDelivery is a password or nkey mesh's users where this apply delivers none (it runs
// away from the server): what the bus recorded of the last accounts file delivered says which
// users differ, and delivering is left to whoever runs where the server does.
type RecordedDelivery struct {
	plan *compiler.Plan
	want *change.Principals
	// Monitor, when set, is the server's monitoring endpoint: its config_digest says whether the
	// server still runs the file the record names.
	Monitor string
}

// NewRecordedDelivery reads what the plan's accounts file is.
func NewRecordedDelivery(plan *compiler.Plan, monitor string) (*RecordedDelivery, error) {
	data, err := emit.Accounts(plan, emit.AccountsOptions{AllowMissing: true})
	if err != nil {
		return nil, err
	}
	want, err := change.FromAccountsFile(data, "the catalogue")
	if err != nil {
		return nil, err
	}
	return &RecordedDelivery{plan: plan, want: want, Monitor: monitor}, nil
}

func (r *RecordedDelivery) Wanted() *change.Principals { return r.want }

// elsewhere says where the users are delivered when this apply delivers none.
const elsewhere = "This apply delivers streams and consumers only: deliver the users where the server runs, `meshc apply --accounts PATH --reload PID` (docs/commands.md: Where the accounts are delivered from)"

// Read is what the bus recorded of the last delivery: each user's and account's digests, and the
// server's config_digest then, compared with now's when Monitor names the endpoint.
func (r *RecordedDelivery) Read(ctx context.Context, js jetstream.JetStream) (*change.Principals, error) {
	nothing := func(why string) *change.Principals {
		return &change.Principals{Known: change.KnownNothing, From: why, Undelivered: elsewhere}
	}
	if js == nil {
		return nothing("meshc cannot tell which users and permissions the bus runs"), nil
	}
	rec, held, err := ReadAccountsRecord(ctx, js)
	if err != nil {
		return nil, err
	}
	if rec == nil || held == nil {
		return nothing("meshc cannot tell which users and permissions the bus runs: no accounts delivery by meshc is recorded on it (a connection attempt cannot tell: the server refuses a user it does not have as it refuses a wrong password); if the accounts are delivered otherwise, check they are golden/accounts.conf"), nil
	}
	when := fmt.Sprintf("recorded on the bus by %s at %s", rec.By, rec.At.UTC().Format(time.RFC3339))
	if r.Monitor != "" && rec.ConfigDigest != "" {
		now, err := ServerConfigDigest(ctx, r.Monitor)
		switch {
		case err != nil:
			when += fmt.Sprintf("; the server's config_digest could not be read to confirm it still runs it (%v)", err)
		case now != rec.ConfigDigest:
			return nothing(fmt.Sprintf("the users and permissions on the bus may differ from any the catalogue knows: the server's configuration changed since meshc delivered the accounts (%s; config_digest %s then, %s now)", when, rec.ConfigDigest, now)), nil
		default:
			when += ", config_digest unchanged"
		}
	}
	held.From = "the accounts file last delivered (" + when + ")"
	held.Undelivered = elsewhere
	if rec.Development {
		// meshc up's bus runs on development credentials of its own, every user given one:
		// everything else is compared.
		held.From += ", on development credentials, which are not compared"
		want, err := developmentWant(r.plan)
		if err != nil {
			return nil, err
		}
		r.want = withoutCredentials(want)
		held = withoutCredentials(held)
	}
	return held, nil
}

// developmentWant is what the catalogue derives as meshc up composes it: every user with a
// password, none left out for want of a recorded one.
func developmentWant(plan *compiler.Plan) (*change.Principals, error) {
	local := *plan
	local.Users = slices.Clone(plan.Users)
	for i := range local.Users {
		local.Users[i].Hash, local.Users[i].NKey = developmentHash, ""
	}
	data, err := emit.Accounts(&local, emit.AccountsOptions{})
	if err != nil {
		return nil, err
	}
	return change.FromAccountsFile(data, "the catalogue")
}

// developmentHash stands in for the development passwords meshc up mints, which a comparison
// leaves out.
const developmentHash = "$2a$04$GVqXgr54yUjjKk8puUK3yObfVms9mVjoYReukW.abay8w0u8n.v0W"

// withoutCredentials is principals with their users' credentials left out of the comparison.
func withoutCredentials(ps *change.Principals) *change.Principals {
	out := *ps
	out.File = "" // the file differs by its credentials alone
	out.Users = make([]change.Principal, len(ps.Users))
	for i, u := range ps.Users {
		u.Digests = maps.Clone(u.Digests)
		delete(u.Digests, change.FacetCredential)
		if u.Facets != nil {
			u.Facets = maps.Clone(u.Facets)
			delete(u.Facets, change.FacetCredential)
		}
		out.Users[i] = u
	}
	return &out
}

func (r *RecordedDelivery) Deliver(context.Context, change.Changes, func(context.Context) error, jetstream.JetStream) (Delivered, error) {
	return Delivered{}, nil
}

func (r *RecordedDelivery) Remove(context.Context, change.Changes, func(context.Context) error) (Delivered, error) {
	return Delivered{}, nil
}
