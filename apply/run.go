package apply

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/internal/output"
)

// Run is one `meshc apply` on a connected bus, its steps in the order that loses nothing: the
// lock before the read (a state read while another apply changes it is already stale), the users
// before the streams (a module whose consumer is about to exist should be able to connect),
// every refusal decided before the first write, and each write fenced by the lock.
type Run struct {
	Plan *compiler.Plan
	// DryRun reads and prints the change set and writes nothing, without the lock.
	DryRun bool
	// Saved, a plan saved by `meshc plan --save`, must still be the change set meshc makes now,
	// on a bus that has not moved.
	Saved *change.Saved
	// Options are what apply may do (Prune also decides the change set: the deletes); Fence is
	// set from the lock.
	Options Options
	Lock    LockOptions
	// Users pushes the accounts in operator mode; NewBus lets it start a mesh that holds no
	// stream beside a bus that may have had one under another name (Pusher.StartsEmpty).
	Users  *Pusher
	NewBus bool
	// Accounts delivers an accounts file (AccountsFile), under the lock, after every refusal was
	// decided, and records the delivery on the bus; Monitor is where the server's config_digest
	// is read for the record, or, with no delivery, for whether the bus still runs the accounts
	// meshc delivered ("" when no endpoint was named).
	Accounts *AccountsDelivery
	Monitor  string
	Read     ReadOptions
	// Out receives the change set in Format; Say a line for the person running it.
	Out    io.Writer
	Format output.Format
	Say    func(string)
}

// refusal marks an error as a refusal of the plan (it needs a flag, or its catalogue or bus
// moved), which `meshc apply` exits 1 for, its words unchanged.
type refusal struct{ error }

func (r refusal) Is(target error) bool { return target == ErrRefused }
func (r refusal) Unwrap() error        { return r.error }

// Do runs it, and says what Apply did: nil when there was nothing to apply (a dry run, or no
// change). An error that errors.Is ErrRefused is the plan's refusal; any other is meshc not able
// to run (a server that refused or did not answer, a lock held, a file not written).
func (r *Run) Do(ctx context.Context, bus *Bus) (*Result, error) {
	js, err := bus.JetStream()
	if err != nil {
		return nil, err
	}
	var fence func(context.Context) error
	if !r.DryRun {
		lock, err := AcquireLock(ctx, js, r.Lock)
		if err != nil {
			return nil, WhyStopped(ctx, err)
		}
		defer lock.Release(context.Background())
		ctx, fence = lock.Context(), lock.Check
	}
	if r.Users != nil {
		// Inside the lock: two applies at once would push two versions in one second, which a
		// cluster's servers may keep in different orders (docs/nats.md, "A push on a cluster").
		said, err := r.Users.Deliver(ctx, fence, r.DryRun)
		if err != nil {
			return nil, WhyStopped(ctx, err)
		}
		r.Say("accounts: " + said)
	}
	live, err := Read(ctx, bus, r.Read)
	if err != nil {
		return nil, WhyStopped(ctx, err)
	}
	if r.Users != nil && !r.NewBus {
		if err := r.Users.StartsEmpty(live, r.Plan); err != nil {
			return nil, refusal{err}
		}
	}
	changes := change.Diff(live, r.Plan, change.DiffOptions{Prune: r.Options.Prune})
	if r.Saved != nil {
		if err := r.Saved.StillHolds(live, changes); err != nil {
			return nil, refusal{err}
		}
	}
	if err := CountDrops(ctx, bus, changes, r.Read); err != nil {
		return nil, WhyStopped(ctx, err)
	}
	if err := change.Render(r.Out, changes, r.Format); err != nil {
		return nil, err
	}
	if r.DryRun {
		return nil, nil
	}
	opts := r.Options
	opts.Fence = fence
	opts.ServerVersion = bus.Version
	if err := Refusals(changes, opts); err != nil {
		if r.Accounts != nil {
			err = fmt.Errorf("%w\n%s was not written either", err, r.Accounts.path)
		}
		return nil, err
	}
	switch {
	case r.Accounts != nil:
		// Decided here, under the lock, from what file and server hold now.
		r.Accounts.Fence = fence
		did, err := r.Accounts.Deliver(ctx)
		if err != nil {
			return nil, WhyStopped(ctx, err)
		}
		r.Say(did.Said)
		if err := r.recordAccounts(ctx, js, fence); err != nil {
			r.Say(err.Error())
		}
	case r.Users == nil:
		if said := AccountsStatus(ctx, js, r.Plan, r.Monitor); said != "" {
			r.Say(said)
		}
	}
	if changes.Empty() {
		return nil, leftUnread(changes)
	}
	result, err := Apply(ctx, js, changes, opts)
	for _, n := range result.Notes {
		r.Say("note: " + n)
	}
	if errors.Is(err, ErrRefused) {
		return &result, refusal{WhyStopped(ctx, err)}
	}
	if err != nil {
		return &result, WhyStopped(ctx, err)
	}
	return &result, leftUnread(changes)
}

// recordAccounts records the delivery on the bus, with the server's config_digest when the
// reload was watched on its monitoring endpoint.
func (r *Run) recordAccounts(ctx context.Context, js jetstream.JetStream, fence func(context.Context) error) error {
	if fence != nil {
		if err := fence(ctx); err != nil {
			return err
		}
	}
	rec := AccountsRecord{Digest: AccountsDigest(r.Accounts.data), At: time.Now(), By: "meshc apply --accounts"}
	if r.Accounts.server != nil && r.Monitor != "" {
		rec.ConfigDigest, _ = ServerConfigDigest(ctx, r.Monitor)
	}
	return RecordAccounts(ctx, js, rec)
}

// AccountsFile decides everything about delivering the plan's accounts file to path that can
// refuse, and writes nothing: the bytes (a user with no recorded hash is a refusal, unless
// allowMissing leaves it out), the place, and with reload (a PID or a pid file) the nats-server
// to signal, whose monitoring endpoint must answer within wait.
func AccountsFile(ctx context.Context, plan *compiler.Plan, path string, allowMissing bool, reload, monitor string, wait time.Duration) (*AccountsDelivery, error) {
	data, err := emit.Accounts(plan, emit.AccountsOptions{AllowMissing: allowMissing})
	if err != nil {
		return nil, refusal{err}
	}
	var server Reloader
	if reload != "" {
		if server, err = Signalled(ctx, reload, monitor, wait); err != nil {
			return nil, err
		}
	}
	return PrepareAccounts(ctx, data, path, server)
}

// AccountsStatus says, where a command delivers no accounts, when the users and permissions on
// the bus may differ from the catalogue's, and what that rests on; "" when nothing says they do.
// monitor is a monitoring endpoint named by the person running it, or "".
func AccountsStatus(ctx context.Context, js jetstream.JetStream, plan *compiler.Plan, monitor string) string {
	if plan.Operator != nil {
		// What the resolver holds is the delivery: Pusher.Status reads it, as the system user,
		// which plan does not connect as.
		return "users and permissions: with auth: operator they are the accounts the servers' resolver holds; `meshc apply --dry-run` with the system user's credentials says which differ from the catalogue"
	}
	data, err := emit.Accounts(plan, emit.AccountsOptions{AllowMissing: true})
	if err != nil {
		return ""
	}
	if ev := CheckAccounts(ctx, js, AccountsDigest(data), monitor); ev.MayDiffer {
		return fmt.Sprintf("users and permissions: %s [this rests on %s]", ev.Said, ev.Rests)
	}
	return ""
}

// HolderName names an apply in the bus's lock: which mesh, who, where, which process, so the
// apply turned away knows whom to ask.
func HolderName(mesh string) string {
	who := "unknown"
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("meshc apply of mesh %s by %s@%s (pid %d)", mesh, who, host, os.Getpid())
}

// WhyStopped says why a request stopped when something other than the request ended it: the
// lock lost, or the server refusing this connection something (then the refusal is the news,
// not the "context canceled" it left behind).
func WhyStopped(ctx context.Context, err error) error {
	cause := context.Cause(ctx)
	var refused *Refusal
	switch {
	case errors.Is(cause, ErrLockLost):
		return fmt.Errorf("%w (%v): what was done stands; apply again", cause, err)
	case errors.As(cause, &refused) && !errors.As(err, &refused):
		return refused
	case ctx.Err() != nil && !errors.Is(cause, context.DeadlineExceeded):
		// Ctrl-C or SIGTERM.
		return fmt.Errorf("stopped, %v (%v): what was done stands and the lock is given back; apply again to finish", cause, err)
	}
	return err
}
