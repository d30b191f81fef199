package apply

import (
	"context"
	"errors"
	"fmt"

	"github.com/meshc-dev/meshc/apply/wire"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/change"
)

// A stream is deleted (pruned, or replaced) only when it holds no message, unless
// --purge-non-empty lets them go. The count the plan shows was read before the lock wait, the
// reload waits and the other phases; messages published since would be deleted unseen. So the
// check and the delete are made one decision the server enforces: the stream's subjects are
// moved aside first (change.Parked: a subject nothing publishes to, the ones it had recorded in
// its metadata), so it takes no message; then it is counted; a stream found holding any gets
// its subjects back and is not deleted. Moving subjects is undone by one update, where sealing
// the stream (the server's own way to stop writes) can never be undone. A stream fed by a
// mirror or sources keeps receiving through them; the mesh makes none, and for such a stream
// the count is only read as late as it can be (docs/nats.md, "Deleting a stream").

// errArrived is wrapped, beside ErrRefused, in the refusal of a stream that received messages
// after the plan was read.
var errArrived = errors.New("messages arrived after the plan was read")

// park moves the stream's subjects aside and counts what it holds, restoring it and refusing
// when it holds anything.
func (a *applier) park(ctx context.Context, c change.Change) error {
	if a.opts.PurgeNonEmpty {
		return nil
	}
	info, err := a.editStream(ctx, c.Stream, func(cfg *jetstream.StreamConfig) {
		if cfg.Mirror == nil && len(cfg.Sources) == 0 {
			*cfg = change.Parked(*cfg)
		}
	})
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil // gone is gone
	}
	if err != nil {
		return fmt.Errorf("%s stream %s: move its subjects aside before checking it is empty: %w; nothing was deleted", c.Action.Word(), c.Stream, wire.Explain(err))
	}
	// Counted after the update answered: whatever the stream accepted before it is counted, and
	// nothing after it can arrive.
	if err := a.call(ctx, func(ctx context.Context) error {
		s, err := a.js.Stream(ctx, c.Stream)
		if err == nil {
			info = s.CachedInfo()
		}
		return err
	}); err != nil {
		return fmt.Errorf("%s stream %s: count what it holds: %w%s", c.Action.Word(), c.Stream, wire.Explain(err), a.unpark(ctx, c))
	}
	if held := info.State.Msgs; held > 0 {
		return fmt.Errorf("%w: %w: stream %s holds %d message(s) (the plan counted %d), so it was not %sd%s; apply again to see them in the plan, and with --purge-non-empty if they may go",
			wire.ErrRefused, errArrived, c.Stream, held, c.Messages, c.Action.Word(), a.unpark(ctx, c))
	}
	if a.opts.AfterPark != nil {
		if err := a.opts.AfterPark(c); err != nil {
			return fmt.Errorf("%s stream %s: stopped after parking it: %w", c.Action.Word(), c.Stream, err)
		}
	}
	return nil
}

// unpark gives a parked stream its subjects back, and says how that went, for the message of
// the error that made it necessary.
func (a *applier) unpark(ctx context.Context, c change.Change) string {
	if a.opts.PurgeNonEmpty {
		return ""
	}
	_, err := a.editStream(context.WithoutCancel(ctx), c.Stream, func(cfg *jetstream.StreamConfig) {
		*cfg = change.Unparked(*cfg)
	})
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return ""
	case err != nil:
		return fmt.Sprintf("; its subjects could not be given back (%v): it takes no message until apply runs again, which gives them back", wire.Explain(err))
	}
	return "; it takes messages again"
}
