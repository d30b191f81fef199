package wire

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/change"
)

// ErrRefused is what an apply returns, wrapped with the reasons, when the change set needs a
// permission the options do not give (replace, prune, losing messages), or its catalogue or bus
// moved, or a delivery would lose what no flag permits. Nothing was changed: the user's answer,
// not a fault.
var ErrRefused = errors.New("apply refused")

// Refused marks an error as a refusal of the plan, which `meshc apply` exits 1 for, its words
// unchanged.
type Refused struct{ Err error }

func (r Refused) Error() string        { return r.Err.Error() }
func (r Refused) Is(target error) bool { return target == ErrRefused }
func (r Refused) Unwrap() error        { return r.Err }

// ErrStillDeleting marks a consumer re-created too soon after its replaced self was deleted: a
// wait is all it needs.
var ErrStillDeleting = errors.New("the replaced consumer's files were still being removed")

// stillDeleting reports the server's error for a consumer created while the previous consumer
// of that name was still being removed from its file store: 500/10012 naming a rename of the
// consumer's state file that found nothing to rename. Seen here on a re-create right after a
// delete; only the replace path asks, where the delete is its own.
func StillDeleting(err error) bool {
	var ae *jetstream.APIError
	return errors.As(err, &ae) && ae.ErrorCode == 10012 &&
		strings.Contains(ae.Description, "rename") && strings.Contains(ae.Description, "no such file or directory")
}

// Retryable is the list of docs/nats.md, "Retries and what is transient", and only it: no answer
// (before an election, during a leader change), no responders (briefly, while a server restarts),
// 10008 (JetStream temporarily unavailable) and 10023 (insufficient resources while peers are
// down); plus ErrStillDeleting, which only the replace path returns, a few times at most. Anything
// else will not pass by waiting.
func Retryable(err error) bool {
	var ae *jetstream.APIError
	switch {
	case errors.Is(err, ErrStillDeleting):
		return true
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout), errors.Is(err, nats.ErrNoResponders):
		return true
	case errors.As(err, &ae):
		return ae.ErrorCode == 10008 || ae.ErrorCode == 10023
	}
	return false
}

// retry runs op until it succeeds, fails for good, or the budget is spent: exponential backoff
// from 250 ms to 5 s. Safe because an identical create or update answers OK, and a delete of
// what is gone is treated as done.
func Retry(ctx context.Context, budget time.Duration, op func(ctx context.Context) error) error {
	deadline := time.Now().Add(budget)
	wait := 250 * time.Millisecond
	for {
		err := op(ctx)
		if err == nil || !Retryable(err) || ctx.Err() != nil {
			return err
		}
		if time.Now().Add(wait).After(deadline) {
			return fmt.Errorf("still failing after retrying for %s: %w", budget, err)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// explain adds to a server's refusal what the user can do about it.
func Explain(err error) error {
	var ae *jetstream.APIError
	var refused *Refusal
	switch {
	case errors.As(err, &refused):
		return err
	case errors.As(err, &ae):
		switch ae.ErrorCode {
		case jetstream.JSErrCodeJetStreamNotEnabled, jetstream.JSErrCodeJetStreamNotEnabledForAccount:
			return fmt.Errorf("%w: JetStream is not enabled for this account; the server's configuration must enable it (accounts { NAME { jetstream: enabled } })", err)
		case 10065:
			return fmt.Errorf("%w: another stream on the bus already captures these subjects; if the plan no longer has it, apply with --prune", err)
		case 10008, 10023:
			return fmt.Errorf("%w: the cluster has no quorum for this; bring its stopped servers back and apply again", err)
		}
		return err
	case errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("%w: nothing answers the JetStream API here; is JetStream enabled on the server and for this user's account?", err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return fmt.Errorf("%w: the server did not answer; a cluster without a meta leader answers nothing, so check that a majority of its servers is up, then apply again", err)
	case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrDisconnected):
		return fmt.Errorf("%w: the connection to the bus was lost; check the server is up and apply again", err)
	}
	return err
}

// ErrUnread is what a plan or an apply that did its job returns, wrapped with how many, when the
// server reported objects missing or offline: they were left as they are, so the bus may still
// differ from the plan there, and a job that reads success would not know (`meshc apply` and
// `meshc plan` exit 3).
var ErrUnread = errors.New("left unread")

// LeftUnread says that n objects could not be read and were left as they are.
func LeftUnread(n int) error {
	return fmt.Errorf("%d object(s) %w: the server reported them missing or offline (their leaders did not answer, or their peers are down), so they were neither made, changed nor deleted, and the bus may still differ from the plan there; apply again when the cluster's servers are back", n, ErrUnread)
}

// leftUnread is LeftUnread for a change set, nil when it read everything.
func Unread(cs change.Changes) error {
	if n := cs.Unreadable(); n > 0 {
		return LeftUnread(n)
	}
	return nil
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
