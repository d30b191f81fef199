package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/meshc-dev/meshc/apply/wire"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/meshc-dev/meshc/change"
)

// Options say what apply may do beyond asserting the plan. The zero value creates and updates
// only.
type Options struct {
	// AllowReplace permits deleting and re-making an object whose change the server cannot make
	// in place (a stream's storage or retention, a consumer's ack policy, pull ↔ push).
	AllowReplace bool
	// Prune permits deleting objects the plan no longer has.
	Prune bool
	// PurgeNonEmpty permits deleting or replacing a stream that holds messages: they are lost.
	PurgeNonEmpty bool
	// Adopt permits taking as the mesh's what the plan names but carries no meshc mark (another
	// application's stream of the same name, or one made by hand): its settings become the plan's.
	Adopt bool
	// AllowDiscard permits a change the server makes in place by dropping stored messages (a
	// limit lowered, retention limits → interest, discard new → old): they are lost.
	AllowDiscard bool
	// Concurrency bounds the requests in flight. Default 64: one request at a time is the
	// natscli loop's 36 objects/s; 16–64 in flight reached thousands (docs/nats.md, "Measured
	// baselines"), and on a slow disk the server's file store, not meshc, sets the pace, so more in
	// flight keeps it busy (BENCHMARKS.md).
	Concurrency int
	// Fence, when set, is asked before every write whether it may still be made: Lock.Check,
	// so a lock lost stops the writes at the next one (fence.go).
	Fence func(context.Context) error
	// Progress, when set, is told after each object (never concurrently).
	Progress func(Progress)
	// RetryFor bounds the retries of one request on a transient failure. Default 60 s.
	RetryFor time.Duration
	// AttemptTimeout bounds one attempt. Default 10 s.
	AttemptTimeout time.Duration
	// SettleFor bounds the wait, in a consumer's replace, for the acknowledgements in flight
	// of the paused old consumer (settle.go). Default 10 s.
	SettleFor time.Duration
	// ServerVersion is the nats-server release the bus runs, as its INFO named it; a replace
	// of a consumer needs 2.11 (a pause). Read from the connection when empty.
	ServerVersion string
	// AfterDelete, when set, is called in a consumer's replace between the delete and the
	// create; an error stops that replace there, as a kill or a lost server would. For tests of
	// what a rerun recovers.
	AfterDelete func(change.Change) error
	// AfterPark, when set, is called once a stream to be deleted is parked (its subjects moved
	// aside) and found empty, before the delete; an error stops it there. For tests of what a
	// rerun recovers.
	AfterPark func(change.Change) error
	// AfterCreate, when set, is called once a consumer that resumes (replaced, or made again
	// from a recorded point) exists again, before its resume point is removed; an error stops
	// it there. For tests of what a rerun recovers.
	AfterCreate func(change.Change) error
}

// Progress is one object done (or failed).
type Progress struct {
	Done, Total int
	Change      change.Change
	Err         error
}

// Result is what apply did.
type Result struct {
	// Applied counts the objects made, changed, replaced or deleted.
	Applied int
	// Notes are what apply found only while acting and kept on purpose: a push consumer that
	// became bound between the read and the update keeps its delivery subject.
	Notes []string
}

func (o Options) withDefaults() Options {
	if o.Concurrency <= 0 {
		o.Concurrency = 64
	}
	if o.RetryFor <= 0 {
		o.RetryFor = 60 * time.Second
	}
	if o.AttemptTimeout <= 0 {
		o.AttemptTimeout = 10 * time.Second
	}
	if o.SettleFor <= 0 {
		o.SettleFor = 10 * time.Second
	}
	return o
}

// Apply asserts a change set: consumers the plan dropped, then streams, then consumers, each
// phase with bounded concurrency. Anything that would lose data without being asked is refused
// before a single request is made, so a refusal never leaves the bus half changed. Applying a
// change set computed from a bus that already matches does nothing.
func Apply(ctx context.Context, js jetstream.JetStream, cs change.Changes, opts Options) (Result, error) {
	opts = opts.withDefaults()
	if opts.ServerVersion == "" {
		opts.ServerVersion = js.Conn().ConnectedServerVersion()
	}
	if err := Refusals(cs, opts); err != nil {
		return Result{}, err
	}

	var phases [4][]change.Change
	total := 0
	for _, c := range cs.Items {
		if c.Action == change.NoOp {
			continue
		}
		total++
		switch {
		case c.Kind == change.KindConsumer && c.Action == change.Delete:
			phases[0] = append(phases[0], c)
		case c.Kind == change.KindStream && c.Action == change.Delete:
			// Before any stream is made, so a new stream may take the subjects of a pruned one.
			phases[1] = append(phases[1], c)
		case c.Kind == change.KindStream:
			phases[2] = append(phases[2], c)
		default:
			phases[3] = append(phases[3], c)
		}
	}

	a := &applier{js: js, opts: opts, total: total}
	for _, phase := range phases[:3] {
		if err := a.concurrently(ctx, phase, a.one); err != nil {
			return a.result(), err
		}
	}
	for _, c := range phases[3] {
		if c.Kind != change.KindConsumer || c.Action == change.Delete {
			panic("apply: phase 3 holds consumers made, changed or replaced only")
		}
	}
	refused, err := a.consumers(ctx, phases[3], cs.Stale)
	if err != nil {
		return a.result(), err
	}
	if err := a.forgetStale(ctx, cs.Stale); err != nil {
		return a.result(), err
	}
	if len(refused) > 0 {
		return a.result(), refusedReplaces(refused, a.result().Applied)
	}
	return a.result(), nil
}

// concurrently runs op on each change, at most Concurrency at once, reporting each; the first
// error ends the rest.
func (a *applier) concurrently(ctx context.Context, changes []change.Change, op func(context.Context, change.Change) error) error {
	return a.each(ctx, changes, func(ctx context.Context, c change.Change) error {
		err := op(ctx, c)
		a.report(c, err)
		return err
	})
}

// each is concurrently without reporting: for a step that is not an object done.
func (a *applier) each(ctx context.Context, changes []change.Change, op func(context.Context, change.Change) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(a.opts.Concurrency)
	for _, c := range changes {
		g.Go(func() error { return op(gctx, c) })
	}
	return g.Wait()
}

// Refusals lists every change the options do not permit, or returns nil: what Apply refuses
// before its first request, for a caller with more to decide before it writes anything.
func Refusals(cs change.Changes, opts Options) error {
	refused := refusalsOf(cs, opts)
	if len(refused) == 0 {
		return nil
	}
	return fmt.Errorf("%w, nothing was changed:\n  - %s", wire.ErrRefused, strings.Join(refused, "\n  - "))
}

// refusalsOf is each refusal of the streams and consumers, a sentence each.
func refusalsOf(cs change.Changes, opts Options) []string {
	var refused []string
	for _, c := range cs.Items {
		noun := string(c.Kind) + " " + c.Name()
		if c.Foreign != "" && c.Action != change.NoOp {
			// No flag gives this either: another mesh's object is that mesh's to change.
			refused = append(refused, fmt.Sprintf("%s belongs to %s (its mark, or its stream's, says so), and meshc never changes another mesh's or catalogue's objects whatever the flags: two meshes sharing an account must not share stream names, and two catalogues of one mesh must not share a bus", noun, c.Foreign))
			continue
		}
		if c.Adopts && c.Action != change.NoOp && !opts.Adopt {
			refused = append(refused, fmt.Sprintf("%s exists without meshc's mark (another application's?): apply with --adopt to make it the mesh's, with the plan's settings", noun))
		}
		if len(c.Unmanaged) > 0 && (c.Action == change.Replace || c.Action == change.Delete) {
			// No flag gives this: meshc never deletes what it does not manage.
			refused = append(refused, fmt.Sprintf("%s must be replaced, which would delete consumers meshc does not manage (%s): their owners must remove them first, or the plan must keep the stream as it is",
				noun, strings.Join(c.Unmanaged, ", ")))
			continue
		}
		// A drop approved in mesh.yaml and carried by the reviewed saved plan needs no flag.
		if discarding := c.Unapproved(); len(discarding) > 0 && !opts.AllowDiscard {
			var what []string
			for _, f := range discarding {
				what = append(what, fmt.Sprintf("%s %s → %s (%s)", f.Name, f.Old, f.New, f.DropsSaid()))
			}
			refused = append(refused, fmt.Sprintf("%s would drop messages it stores: %s; apply with --allow-discard if they may go", noun, strings.Join(what, ", ")))
		}
		switch c.Action {
		case change.Replace:
			if v, ok := wire.ParseServerVersion(opts.ServerVersion); ok && c.Kind == change.KindConsumer && !v.AtLeast(wire.PauseServerVersion) {
				// No flag gives this: without a pause the replacement delivers again what the
				// old one acknowledged while it was replaced (settle.go).
				refused = append(refused, fmt.Sprintf("%s must be replaced, and the server runs nats-server %s: replacing a consumer without delivering again what it acknowledged needs %s or later, which pauses it first; upgrade the server, or keep the plan's consumer as it is", noun, opts.ServerVersion, wire.PauseServerVersion))
				continue
			}
			if !opts.AllowReplace {
				var why []string
				for _, f := range c.Fields {
					if f.Replaces {
						why = append(why, fmt.Sprintf("%s %s → %s", f.Name, f.Old, f.New))
					}
				}
				refused = append(refused, fmt.Sprintf("%s must be replaced (%s cannot change in place): apply with --allow-replace to delete and make it again",
					noun, strings.Join(why, ", ")))
			}
		case change.Delete:
			if !opts.Prune {
				refused = append(refused, fmt.Sprintf("%s is not in the plan: apply with --prune to delete it", noun))
			}
		default:
			continue
		}
		if c.Kind == change.KindStream && c.Messages > 0 && !opts.PurgeNonEmpty {
			refused = append(refused, fmt.Sprintf("%s holds %d messages that a %s would lose: apply with --purge-non-empty as well if they may go",
				noun, c.Messages, c.Action.Word()))
		}
	}
	return refused
}

type applier struct {
	js    jetstream.JetStream
	opts  Options
	total int

	mu      sync.Mutex
	done    int
	applied int
	notes   []string
}

func (a *applier) report(c change.Change, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.done++
	if err == nil {
		a.applied++
	}
	if a.opts.Progress != nil {
		a.opts.Progress(Progress{Done: a.done, Total: a.total, Change: c, Err: err})
	}
}

func (a *applier) note(s string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.notes = append(a.notes, s)
}

func (a *applier) result() Result {
	a.mu.Lock()
	defer a.mu.Unlock()
	return Result{Applied: a.applied, Notes: append([]string(nil), a.notes...)}
}

// call runs one request with the retry policy, each attempt behind the fence.
func (a *applier) call(ctx context.Context, op func(ctx context.Context) error) error {
	return wire.Retry(ctx, a.opts.RetryFor, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, a.opts.AttemptTimeout)
		defer cancel()
		if a.opts.Fence != nil {
			if err := a.opts.Fence(ctx); err != nil {
				return err
			}
		}
		if err := op(ctx); err != nil {
			// A refused request only times out; the refusal is on the connection.
			return wire.ExplainRequestError(a.js.Conn(), err)
		}
		return nil
	})
}

func (a *applier) one(ctx context.Context, c change.Change) error {
	if c.Kind == change.KindStream {
		return a.stream(ctx, c)
	}
	return a.consumer(ctx, c, nil)
}

func (a *applier) stream(ctx context.Context, c change.Change) error {
	verb := c.Action.Word()
	if c.Action == change.Delete || c.Action == change.Replace {
		if err := a.park(ctx, c); err != nil {
			return err
		}
		err := a.call(ctx, func(ctx context.Context) error {
			err := a.js.DeleteStream(ctx, c.Stream)
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				// A delete that timed out may have been done: gone is gone.
				return nil
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("%s stream %s: %w%s", verb, c.Stream, wire.Explain(err), a.unpark(ctx, c))
		}
		if c.Action == change.Delete {
			return nil
		}
	}
	err := a.call(ctx, func(ctx context.Context) error {
		var err error
		if c.Action == change.Update {
			_, err = a.js.UpdateStream(ctx, *c.StreamConfig)
		} else {
			// An identical create answers OK, so a create retried after a timeout that had in
			// fact been done is safe (docs/nats.md, "Retries and what is transient").
			_, err = a.js.CreateStream(ctx, *c.StreamConfig)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("%s stream %s: %w", verb, c.Stream, wire.Explain(err))
	}
	return nil
}

// consumer makes, changes, replaces or deletes one consumer. A replace starts its replacement
// at point, the old consumer's as read once it was paused (settle.go).
func (a *applier) consumer(ctx context.Context, c change.Change, point *change.ResumePoint) error {
	verb := c.Action.Word()
	// A replace's resume point is on its stream before this runs (resume.go).
	if c.Action == change.Delete || c.Action == change.Replace {
		err := a.call(ctx, func(ctx context.Context) error {
			err := a.js.DeleteConsumer(ctx, c.Stream, c.Consumer)
			if errors.Is(err, jetstream.ErrConsumerNotFound) {
				return nil
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("%s consumer %s on %s: %w", verb, c.Consumer, c.Stream, wire.Explain(err))
		}
		if c.Action == change.Delete {
			return nil
		}
		if a.opts.AfterDelete != nil {
			if err := a.opts.AfterDelete(c); err != nil {
				return fmt.Errorf("%s consumer %s on %s: stopped after the delete: %w", verb, c.Consumer, c.Stream, err)
			}
		}
	}
	want := *c.ConsumerConfig
	if point != nil {
		want.DeliverPolicy, want.OptStartSeq, want.OptStartTime = point.DeliverPolicy, point.OptStartSeq, point.OptStartTime
	}
	recreates := 0
	err := a.call(ctx, func(ctx context.Context) error {
		if c.Action != change.Update {
			_, err := a.js.CreateConsumer(ctx, c.Stream, want)
			if c.Action == change.Replace && recreates < 5 && wire.StillDeleting(err) {
				// The server may still be removing the old consumer's files when the new one of
				// the same name writes its own, and the create fails on a rename. Waiting lets
				// the delete finish; the create is safe to repeat (an identical one answers OK).
				recreates++
				return wire.ErrStillDeleting
			}
			return a.readBack(ctx, c, want, err)
		}
		_, err := a.js.UpdateConsumer(ctx, c.Stream, want)
		err = a.readBack(ctx, c, want, err)
		var ae *jetstream.APIError
		if old, moving := oldValue(c.Fields, "deliver_subject"); moving && errors.As(err, &ae) &&
			ae.ErrorCode == jetstream.JSErrCodeConsumerNameExists {
			// A subscriber bound since the read: the server will not move the subject under it
			// and says "consumer name already in use". Kept, said, and the rest still applied
			// (docs/history.md, "A control plane crash-looping on a consumer it could not move").
			want.DeliverSubject = old
			a.note(change.KeepsSubject(c.Stream, c.Consumer, old, c.ConsumerConfig.DeliverSubject))
			_, err = a.js.UpdateConsumer(ctx, c.Stream, want)
			err = a.readBack(ctx, c, want, err)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("%s consumer %s on %s: %w", verb, c.Consumer, c.Stream, wire.Explain(err))
	}
	if a.opts.AfterCreate != nil && (c.Action == change.Replace || c.ResumeRecorded) {
		if err := a.opts.AfterCreate(c); err != nil {
			return fmt.Errorf("%s consumer %s on %s: stopped after making it again: %w", verb, c.Consumer, c.Stream, err)
		}
	}
	return nil
}

func oldValue(fields []change.Field, name string) (string, bool) {
	for _, f := range fields {
		if f.Name == name {
			return f.Old, true
		}
	}
	return "", false
}

// readBack judges a consumer create or update whose answer apply cannot take at its word by what
// the server stores. After a restart, nats-server 2.15 answered an update from one filter to two
// with the old configuration while it stored the new one, and nats.go turned the missing
// filter_subjects into "multiple consumer filter subjects not supported by nats-server": the
// commonest change exited 2, and every later run of its saved plan was refused as drift
// (docs/nats.md, "Consumers and which updates the server refuses"). Any other error is the
// server's word, and stands.
func (a *applier) readBack(ctx context.Context, c change.Change, want jetstream.ConsumerConfig, err error) error {
	if !errors.Is(err, jetstream.ErrConsumerMultipleFilterSubjectsNotSupported) && !errors.Is(err, jetstream.ErrConsumerCreationResponseEmpty) {
		return err
	}
	info, rerr := a.consumerInfo(ctx, c.Stream, c.Consumer)
	if rerr != nil {
		return fmt.Errorf("%w; reading it back to see what the server stores: %w", err, rerr)
	}
	differs := change.StoredDiffers(info.Config, want)
	if len(differs) == 0 {
		return nil
	}
	var what []string
	for _, f := range differs {
		what = append(what, fmt.Sprintf("%s %s (asked %s)", f.Name, f.Old, f.New))
	}
	return fmt.Errorf("%w; read back, the server stores %s: it does not hold what was asked, so this nats-server cannot make the change", err, strings.Join(what, ", "))
}
