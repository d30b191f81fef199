package apply

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/meshc-dev/meshc/apply/deliver"
	"github.com/meshc-dev/meshc/apply/wire"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/output"
)

// Run is one `meshc apply` on a connected bus, its steps in the order that loses nothing
// (docs/nats.md, "Users and accounts in the plan"):
//
//  1. read everything the change set is about — streams and consumers, users and accounts —
//     and diff it (a pure function), the saved plan checked against it;
//  2. decide every refusal: a refused apply writes nothing, takes no lock, pushes nothing;
//  3. take the lock, and read again if another apply wrote to the bus meanwhile;
//  4. deliver the users and accounts the change set creates and updates (an account's limits
//     may be what a new stream needs);
//  5. apply the streams and consumers, each write fenced by the lock;
//  6. remove the accounts the catalogue dropped, last, as --prune's deletes are.
//
// In operator mode the one write before all this is the mesh's own account when the servers
// hold none at all (Pusher.Bootstrap, before the bus can be reached as mesh-controller).
type Run struct {
	Plan *compiler.Plan
	// DryRun reads and prints the change set and writes nothing, without the lock.
	DryRun bool
	// Saved, a plan saved by `meshc plan --save`, must still be the change set meshc makes now,
	// on a bus that has not moved; one whose changes are all on the bus already is done.
	Saved *change.Saved
	// Options are what apply may do (Prune also decides the change set: the deletes); Fence is
	// set from the lock.
	Options Options
	Lock    wire.LockOptions
	// Users is how the bus receives its users and accounts (nil: they are not compared).
	Users deliver.Delivery
	// NewBus lets an operator-mode apply create the streams of a mesh on a bus where meshc
	// never applied (StartsEmpty).
	NewBus bool
	Read   wire.ReadOptions
	// Out receives the change set in Format; Say a line for the person running it.
	Out    io.Writer
	Format output.Format
	Say    func(string)
}

// Outcome is what a run did, for the command to say.
type Outcome struct {
	Changes change.Changes
	// Applied is what the streams' and consumers' apply did; nil when it had nothing to do.
	Applied *Result
	// Users is what delivering the users and accounts did, Removed what removing those the
	// catalogue dropped did.
	Users, Removed deliver.Delivered
	// AlreadyApplied: a saved plan whose every change the bus already holds (a CI job run
	// again after it succeeded).
	AlreadyApplied bool
}

// Do runs it. An error that errors.Is ErrRefused is the plan's refusal, and then nothing was
// written; any other is meshc not able to run (a server that refused or did not answer, a lock
// held, a file not written), and what was done before it stands. bus may be nil for a dry run of
// a mesh whose account the servers do not hold yet (nothing to read as mesh-controller).
func (r *Run) Do(ctx context.Context, bus *wire.Bus) (*Outcome, error) {
	var js jetstream.JetStream
	if bus != nil {
		var err error
		if js, err = bus.JetStream(); err != nil {
			return nil, err
		}
	}
	before := bucketSequence(ctx, js)
	live, changes, err := r.look(ctx, bus, js)
	if err != nil {
		return nil, wire.WhyStopped(ctx, err)
	}
	out := &Outcome{Changes: changes}
	if r.Saved != nil && bus != nil {
		if id := r.Saved.Bus.Identity; id != "" && bus.Identity() != id {
			return nil, wire.Refused{Err: fmt.Errorf("the plan was saved against %s (%s), and this is %s: nothing was applied — plan again against this bus", id, r.Saved.Bus.Server, bus.Identity())}
		}
	}
	if r.Saved != nil && r.Saved.Done(live, changes) {
		out.AlreadyApplied = true
		return out, nil
	}
	if err := r.decide(ctx, bus, live, &changes); err != nil {
		return nil, err
	}
	out.Changes = changes
	if err := change.Render(r.Out, changes, r.Format); err != nil {
		return nil, err
	}
	if r.DryRun {
		return out, nil
	}
	if err := r.refusals(bus, live, changes); err != nil {
		return nil, err
	}

	lock, err := wire.AcquireLock(ctx, js, r.Lock)
	if err != nil {
		return nil, wire.WhyStopped(ctx, err)
	}
	defer lock.Release(context.Background())
	ctx, fence := lock.Context(), lock.Check
	if lock.Revision() != before+1 {
		// Something wrote to apply's bucket between the read and the lock: another apply, most
		// likely, whose changes the change set shown does not know of. Read again under the lock.
		moved := changes
		if live, changes, err = r.look(ctx, bus, js); err != nil {
			return nil, wire.WhyStopped(ctx, err)
		}
		if err := r.decide(ctx, bus, live, &changes); err != nil {
			return nil, err
		}
		if change.ChangesDigest(changes) != change.ChangesDigest(moved) {
			r.Say("the bus changed while this apply waited for the lock; the change set is now:")
			if err := change.Render(r.Out, changes, r.Format); err != nil {
				return nil, err
			}
		}
		if err := r.refusals(bus, live, changes); err != nil {
			return nil, err
		}
		out.Changes = changes
	}

	opts := r.Options
	opts.Fence = fence
	if r.Users != nil && changes.Undelivered == "" {
		if out.Users, err = r.Users.Deliver(ctx, changes, fence, js); err != nil {
			return out, wire.WhyStopped(ctx, err)
		}
	}
	if !changes.StreamsEmpty() {
		result, err := Apply(ctx, js, changes, opts)
		out.Applied = &result
		for _, n := range result.Notes {
			r.Say("note: " + n)
		}
		if errors.Is(err, wire.ErrRefused) {
			return out, wire.Refused{Err: wire.WhyStopped(ctx, err)}
		}
		if err != nil {
			return out, wire.WhyStopped(ctx, err)
		}
	}
	if r.Users != nil && changes.Undelivered == "" {
		if out.Removed, err = r.Users.Remove(ctx, changes, fence); err != nil {
			return out, wire.WhyStopped(ctx, err)
		}
	}
	return out, wire.Unread(changes)
}

// look reads what the bus holds and diffs the plan against it.
func (r *Run) look(ctx context.Context, bus *wire.Bus, js jetstream.JetStream) (*change.State, change.Changes, error) {
	live := &change.State{}
	if bus != nil {
		var err error
		if live, err = wire.Read(ctx, bus, r.Read); err != nil {
			return nil, change.Changes{}, err
		}
	}
	var want *change.Principals
	if r.Users != nil {
		held, err := r.Users.Read(ctx, js)
		if err != nil {
			return nil, change.Changes{}, err
		}
		live.Principals, want = held, r.Users.Wanted()
	}
	return live, change.Diff(live, r.Plan, change.DiffOptions{Prune: r.Options.Prune, Principals: want}), nil
}

// decide holds the change set to the saved plan and counts what its changes drop.
func (r *Run) decide(ctx context.Context, bus *wire.Bus, live *change.State, changes *change.Changes) error {
	if r.Saved != nil {
		if err := r.Saved.StillHolds(live, *changes); err != nil {
			return wire.Refused{Err: err}
		}
		r.Saved.Approvals(changes)
	}
	if bus != nil {
		if err := wire.CountDrops(ctx, bus, *changes, r.Read); err != nil {
			return wire.WhyStopped(ctx, err)
		}
	}
	return nil
}

// refusals are every refusal of the change set, in one error: the flags it needs, what no flag
// permits (another's objects and accounts, a mesh account re-keyed away from its streams), and
// an operator-mode mesh that would start empty beside its history.
func (r *Run) refusals(bus *wire.Bus, live *change.State, changes change.Changes) error {
	opts := r.Options
	if bus != nil {
		opts.ServerVersion = bus.Version
	}
	refused := append(refusalsOf(changes, opts), changes.Refusals()...)
	if err := deliver.StartsEmpty(live, r.Plan, r.NewBus); err != nil {
		refused = append(refused, err.Error())
	}
	if len(refused) == 0 {
		return nil
	}
	msg := fmt.Sprintf("%v, nothing was changed:\n  - %s", wire.ErrRefused, strings.Join(refused, "\n  - "))
	if f, ok := r.Users.(*deliver.FileDelivery); ok {
		msg += fmt.Sprintf("\n%s was not written either", f.Path())
	}
	return wire.Refused{Err: errors.New(msg)}
}

// bucketSequence is the last sequence of apply's bucket (0 when there is none): a lock taken at
// the next one proves no apply wrote to the bus between.
func bucketSequence(ctx context.Context, js jetstream.JetStream) uint64 {
	if js == nil {
		return 0
	}
	s, err := js.Stream(ctx, compiler.ApplyBucketStream)
	if err != nil {
		return 0
	}
	return s.CachedInfo().State.LastSeq
}
