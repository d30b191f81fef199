package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/meshc-dev/meshc/apply/wire"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/change"
)

// A replaced consumer must not deliver again what it acknowledged. Its replacement starts just
// after the old one's ack floor, and the floor read at plan time was stale by the delete: every
// acknowledgement confirmed in between was delivered again (3–4 per apply with a steady
// publisher, 43 when the apply also reloaded accounts), and every one above the floor — past a
// message still pending — was lost with the old consumer. So before the delete apply pauses the
// consumer (it then delivers nothing, and its acknowledgements still land), waits, bounded, until
// nothing it delivered is pending, reads it again, and takes the replacement's start from that
// read. What lies above the floor then is what a message still pending holds back: when any of
// it was acknowledged, a replacement would deliver it again, and the replace is refused and the
// consumer unpaused (docs/nats.md, "Replacing a consumer").

// settled is one consumer of a round's replaces, read again once paused.
type settled struct {
	point change.ResumePoint
	// refused, when set, says why the replace is not made: the consumer is unpaused and kept.
	refused string
}

// settle pauses each consumer the round replaces, waits for its acknowledgements in flight, and
// reads it again, concurrently. A consumer that no longer exists resumes from the plan's point
// (a rerun's create would too).
func (a *applier) settle(ctx context.Context, replaces []change.Change) (map[string]settled, error) {
	out := map[string]settled{}
	var mu sync.Mutex
	err := a.each(ctx, replaces, func(ctx context.Context, c change.Change) error {
		s, err := a.settleOne(ctx, c)
		if err != nil {
			return err
		}
		mu.Lock()
		out[c.Name()] = s
		mu.Unlock()
		return nil
	})
	if err != nil {
		a.unpause(context.WithoutCancel(ctx), replaces)
	}
	return out, err
}

func (a *applier) settleOne(ctx context.Context, c change.Change) (settled, error) {
	plan := change.StartOf(c.Stream, c.Consumer, c.ConsumerConfig)
	// Long enough for the wait, the recording of the point and the delete, each with its
	// retries; short enough that an apply killed meanwhile leaves the consumer paused for a
	// couple of minutes at most, after which it delivers again by itself.
	until := time.Now().Add(a.opts.SettleFor + 2*a.opts.RetryFor)
	err := a.call(ctx, func(ctx context.Context) error {
		_, err := a.js.PauseConsumer(ctx, c.Stream, c.Consumer, until)
		return err
	})
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return settled{point: plan}, nil
	}
	if err != nil {
		return settled{}, fmt.Errorf("replace consumer %s on %s: pause it before reading where it stands: %w", c.Consumer, c.Stream, wire.Explain(err))
	}
	var info *jetstream.ConsumerInfo
	deadline := time.Now().Add(a.opts.SettleFor)
	for {
		if info, err = a.consumerInfo(ctx, c.Stream, c.Consumer); err != nil {
			return settled{}, fmt.Errorf("replace consumer %s on %s: read it once paused: %w", c.Consumer, c.Stream, wire.Explain(err))
		}
		if info.NumAckPending == 0 || !time.Now().Before(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return settled{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	s := settled{point: plan}
	if info.AckFloor.Stream > 0 {
		s.point.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		s.point.OptStartSeq, s.point.OptStartTime = info.AckFloor.Stream+1, nil
	}
	if n := wire.AckedAboveFloor(info); n > 0 {
		s.refused = fmt.Sprintf("consumer %s would deliver again up to %d messages it acknowledged: %d it delivered are still not acknowledged after %s paused, and a replacement starts after the last message acknowledged in order (stream sequence %d); whoever reads it must acknowledge them (or they are delivered again once their ack wait of %s passes), then apply again",
			c.Name(), n, info.NumAckPending, a.opts.SettleFor, info.AckFloor.Stream, ackWaitOf(info.Config))
		if err := a.resume(ctx, c); err != nil {
			s.refused += fmt.Sprintf("; it could not be unpaused (%v) and delivers again by itself at %s", wire.Explain(err), until.UTC().Format(time.RFC3339))
		}
	}
	return s, nil
}

// resume unpauses a consumer settle paused.
func (a *applier) resume(ctx context.Context, c change.Change) error {
	return a.call(ctx, func(ctx context.Context) error {
		_, err := a.js.ResumeConsumer(ctx, c.Stream, c.Consumer)
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			return nil
		}
		return err
	})
}

// unpause unpauses the consumers settle paused, for a round stopped before their delete; one
// that cannot be is said, and delivers again when its pause runs out.
func (a *applier) unpause(ctx context.Context, paused []change.Change) {
	_ = a.each(ctx, paused, func(ctx context.Context, c change.Change) error {
		if err := a.resume(ctx, c); err != nil {
			a.note(fmt.Sprintf("consumer %s stays paused until its pause runs out (about two minutes): unpausing it failed (%v)", c.Name(), wire.Explain(err)))
		}
		return nil
	})
}

func ackWaitOf(c jetstream.ConsumerConfig) time.Duration {
	if c.AckWait > 0 {
		return c.AckWait
	}
	return 30 * time.Second
}

// refusedReplaces is the refusal of the replaces settle turned down, once the rest of the
// apply is done. Whether anything else was changed is said, so an exit 1 that says nothing was
// changed holds.
func refusedReplaces(refused []string, applied int) error {
	done := "what was done besides stands"
	if applied == 0 {
		done = "nothing was changed"
	}
	return fmt.Errorf("%w, %s:\n  - %s", wire.ErrRefused, done, strings.Join(refused, "\n  - "))
}

// consumerInfo reads one consumer, push or pull (nats.go's Consumer refuses a push consumer).
func (a *applier) consumerInfo(ctx context.Context, stream, consumer string) (*jetstream.ConsumerInfo, error) {
	var info *jetstream.ConsumerInfo
	err := a.call(ctx, func(ctx context.Context) error {
		msg, err := a.js.Conn().RequestWithContext(ctx, apiPrefixOf(a.js)+"CONSUMER.INFO."+stream+"."+consumer, nil)
		if err != nil {
			return err
		}
		var resp struct {
			Error *jetstream.APIError `json:"error"`
			*jetstream.ConsumerInfo
		}
		if err := json.Unmarshal(msg.Data, &resp); err != nil {
			return fmt.Errorf("the server's answer to a consumer's info is not a JetStream answer: %w", err)
		}
		if resp.Error != nil {
			if resp.Error.ErrorCode == jetstream.JSErrCodeConsumerNotFound {
				return jetstream.ErrConsumerNotFound
			}
			return resp.Error
		}
		if resp.ConsumerInfo == nil {
			return jetstream.ErrConsumerNotFound
		}
		info = resp.ConsumerInfo
		return nil
	})
	return info, err
}

// apiPrefixOf is the JetStream API prefix a handle sends to, ending in a dot.
func apiPrefixOf(js jetstream.JetStream) string {
	p := js.Options().APIPrefix
	if p == "" {
		p = wire.DefaultAPIPrefix
	}
	if !strings.HasSuffix(p, ".") {
		p += "."
	}
	return p
}
