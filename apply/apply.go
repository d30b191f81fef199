package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

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
	// Concurrency bounds the requests in flight. Default 64: one request at a time is the
	// natscli loop's 36 objects/s; 16–64 in flight reached thousands (docs/nats.md, "Measured
	// baselines"), and on a slow disk the server's file store, not meshc, sets the pace, so more in
	// flight keeps it busy (BENCHMARKS.md).
	Concurrency int
	// Progress, when set, is told after each object (never concurrently).
	Progress func(Progress)
	// RetryFor bounds the retries of one request on a transient failure. Default 60 s.
	RetryFor time.Duration
	// AttemptTimeout bounds one attempt. Default 10 s.
	AttemptTimeout time.Duration
	// AfterDelete, when set, is called in a consumer's replace between the delete and the
	// create; an error stops that replace there, as a kill or a lost server would. For tests of
	// what a rerun recovers.
	AfterDelete func(change.Change) error
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
	return o
}

// Apply asserts a change set: consumers the plan dropped, then streams, then consumers, each
// phase with bounded concurrency. Anything that would lose data without being asked is refused
// before a single request is made, so a refusal never leaves the bus half changed. Applying a
// change set computed from a bus that already matches does nothing.
func Apply(ctx context.Context, js jetstream.JetStream, cs change.Changes, opts Options) (Result, error) {
	opts = opts.withDefaults()
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
	for _, phase := range phases {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(opts.Concurrency)
		for _, c := range phase {
			g.Go(func() error {
				err := a.one(gctx, c)
				a.report(c, err)
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return a.result(), err
		}
	}
	return a.result(), nil
}

// ErrRefused is what Apply returns, wrapped with the reasons, when the change set needs a
// permission the options do not give (replace, prune, losing messages). Nothing was changed:
// the user's answer, not a fault.
var ErrRefused = errors.New("apply refused")

// Refusals lists every change the options do not permit, or returns nil: what Apply refuses
// before its first request, for a caller with more to decide before it writes anything.
func Refusals(cs change.Changes, opts Options) error {
	var refused []string
	for _, c := range cs.Items {
		noun := string(c.Kind) + " " + c.Name()
		if len(c.Unmanaged) > 0 && (c.Action == change.Replace || c.Action == change.Delete) {
			// No flag gives this: meshc never deletes what it does not manage.
			refused = append(refused, fmt.Sprintf("%s must be replaced, which would delete consumers meshc does not manage (%s): their owners must remove them first, or the plan must keep the stream as it is",
				noun, strings.Join(c.Unmanaged, ", ")))
			continue
		}
		switch c.Action {
		case change.Replace:
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
	if len(refused) == 0 {
		return nil
	}
	return fmt.Errorf("%w, nothing was changed:\n  - %s", ErrRefused, strings.Join(refused, "\n  - "))
}

type applier struct {
	js    jetstream.JetStream
	opts  Options
	total int

	kvOnce sync.Once
	kv     jetstream.KeyValue
	kvErr  error

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

// call runs one request with the retry policy.
func (a *applier) call(ctx context.Context, op func(ctx context.Context) error) error {
	return retry(ctx, a.opts.RetryFor, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, a.opts.AttemptTimeout)
		defer cancel()
		if err := op(ctx); err != nil {
			// A refused request only times out; the refusal is on the connection.
			return explainRequestError(a.js.Conn(), err)
		}
		return nil
	})
}

func (a *applier) one(ctx context.Context, c change.Change) error {
	switch c.Kind {
	case change.KindStream:
		return a.stream(ctx, c)
	default:
		return a.consumer(ctx, c)
	}
}

func (a *applier) stream(ctx context.Context, c change.Change) error {
	verb := c.Action.Word()
	if c.Action == change.Delete || c.Action == change.Replace {
		err := a.call(ctx, func(ctx context.Context) error {
			err := a.js.DeleteStream(ctx, c.Stream)
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				// A delete that timed out may have been done: gone is gone.
				return nil
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("%s stream %s: %w", verb, c.Stream, explain(err))
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
		return fmt.Errorf("%s stream %s: %w", verb, c.Stream, explain(err))
	}
	return nil
}

func (a *applier) consumer(ctx context.Context, c change.Change) error {
	verb := c.Action.Word()
	if c.Action == change.Replace {
		// Where the replacement starts is on the bus before the old one is gone (resume.go).
		if err := a.recordResume(ctx, c); err != nil {
			return fmt.Errorf("%s consumer %s on %s: record where it resumes before deleting it: %w; nothing was deleted", verb, c.Consumer, c.Stream, explain(err))
		}
	}
	if c.Action == change.Delete || c.Action == change.Replace {
		err := a.call(ctx, func(ctx context.Context) error {
			err := a.js.DeleteConsumer(ctx, c.Stream, c.Consumer)
			if errors.Is(err, jetstream.ErrConsumerNotFound) {
				return nil
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("%s consumer %s on %s: %w", verb, c.Consumer, c.Stream, explain(err))
		}
		if c.Action == change.Delete {
			return a.forgotten(ctx, c)
		}
		if a.opts.AfterDelete != nil {
			if err := a.opts.AfterDelete(c); err != nil {
				return fmt.Errorf("%s consumer %s on %s: stopped after the delete: %w", verb, c.Consumer, c.Stream, err)
			}
		}
	}
	want := *c.ConsumerConfig
	recreates := 0
	err := a.call(ctx, func(ctx context.Context) error {
		if c.Action != change.Update {
			_, err := a.js.CreateConsumer(ctx, c.Stream, want)
			if c.Action == change.Replace && recreates < 5 && stillDeleting(err) {
				// The server may still be removing the old consumer's files when the new one of
				// the same name writes its own, and the create fails on a rename. Waiting lets
				// the delete finish; the create is safe to repeat (an identical one answers OK).
				recreates++
				return errStillDeleting
			}
			return err
		}
		_, err := a.js.UpdateConsumer(ctx, c.Stream, want)
		var ae *jetstream.APIError
		if old, moving := oldValue(c.Fields, "deliver_subject"); moving && errors.As(err, &ae) &&
			ae.ErrorCode == jetstream.JSErrCodeConsumerNameExists {
			// A subscriber bound since the read: the server will not move the subject under it
			// and says "consumer name already in use". Kept, said, and the rest still applied
			// (docs/history.md, "A control plane crash-looping on a consumer it could not move").
			want.DeliverSubject = old
			a.note(change.KeepsSubject(c.Stream, c.Consumer, old, c.ConsumerConfig.DeliverSubject))
			_, err = a.js.UpdateConsumer(ctx, c.Stream, want)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("%s consumer %s on %s: %w", verb, c.Consumer, c.Stream, explain(err))
	}
	return a.forgotten(ctx, c)
}

// forgotten removes a consumer's resume point once it is made again (or pruned). Failing to is
// not failing the change: a point left behind is used only if the consumer goes missing again.
func (a *applier) forgotten(ctx context.Context, c change.Change) error {
	if c.Action != change.Replace && !c.ResumeRecorded {
		return nil
	}
	if err := a.forgetResume(ctx, c); err != nil {
		a.note(fmt.Sprintf("consumer %s on %s exists again, but its resume point could not be removed (%v): it is used only if the consumer goes missing", c.Consumer, c.Stream, err))
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
