package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/change"
)

// CountDrops says, for each change the server makes by dropping stored messages (change's
// discard rules), how many it drops now, where the bus can say: a stream's count and bytes, the
// per-subject counts STREAM.INFO gives with subjects_filter, and the first message younger than
// a new max_age. The count is for the reviewer; apply refuses the change without --allow-discard
// whatever it is, since it is read before the update and more may arrive.
func CountDrops(ctx context.Context, nc Requester, cs change.Changes, opts ReadOptions) error {
	opts = opts.withDefaults()
	r := &reading{nc: nc, opts: opts, st: &change.State{}}
	for i := range cs.Items {
		c := &cs.Items[i]
		if len(c.Discarding()) == 0 || c.StreamConfig == nil {
			continue
		}
		var info streamInfoResponse
		if err := r.requestRaw(ctx, opts.APIPrefix+apiStreamInfo+c.Stream, nil, &info); err != nil {
			return fmt.Errorf("count what stream %s would drop: %w", c.Stream, Explain(err))
		}
		for j := range c.Fields {
			f := &c.Fields[j]
			if !f.Discards {
				continue
			}
			said, err := r.drops(ctx, c.Stream, info.State, f.Name, *c.StreamConfig)
			if err != nil {
				return fmt.Errorf("count what stream %s would drop: %w", c.Stream, Explain(err))
			}
			f.Drops = said
		}
	}
	return nil
}

const (
	apiStreamInfo   = ".STREAM.INFO."
	apiStreamMsgGet = ".STREAM.MSG.GET."
)

type streamInfoResponse struct {
	paged
	State jetstream.StreamState `json:"state"`
}

type msgGetResponse struct {
	Error   *jetstream.APIError `json:"error,omitempty"`
	Message *struct {
		Seq uint64 `json:"seq"`
	} `json:"message"`
}

func (m *msgGetResponse) apiError() *jetstream.APIError { return m.Error }

// drops says what lowering one setting to want's drops from a stream in state st now.
func (r *reading) drops(ctx context.Context, stream string, st jetstream.StreamState, field string, want jetstream.StreamConfig) (string, error) {
	held := st.Msgs
	of := func(n uint64, how string) string {
		switch {
		case held == 0:
			return "none now: it holds no message"
		case n == 0:
			return fmt.Sprintf("none of its %d messages now", held)
		}
		return fmt.Sprintf("%s %d of its %d messages now", how, min(n, held), held)
	}
	switch field {
	case "max_msgs":
		return of(over(held, want.MaxMsgs), "drops"), nil
	case "max_msgs_per_subject":
		n, err := r.overPerSubject(ctx, stream, want.MaxMsgsPerSubject)
		return of(n, "drops"), err
	case "max_bytes":
		if st.Bytes <= uint64(want.MaxBytes) || held == 0 {
			return of(0, ""), nil
		}
		// The oldest go until it fits: about the excess over the average message.
		excess := st.Bytes - uint64(want.MaxBytes)
		return of((excess*held+st.Bytes-1)/st.Bytes, "drops about") + fmt.Sprintf(" (it holds %d bytes)", st.Bytes), nil
	case "max_age":
		cutoff := time.Now().Add(-want.MaxAge)
		if held == 0 || !st.FirstTime.Before(cutoff) {
			return of(0, ""), nil
		}
		n, err := r.olderThan(ctx, stream, cutoff, st)
		how := "drops"
		if st.NumDeleted > 0 {
			// Sequence numbers count the gaps deleted messages left.
			how = "drops up to"
		}
		return of(n, how), err
	case "retention":
		if st.Consumers == 0 {
			return of(held, "drops"), nil
		}
		return fmt.Sprintf("drops now every one of its %d messages that all of its %d consumers have acknowledged or do not take; the bus cannot say how many", held, st.Consumers), nil
	}
	return fmt.Sprintf("none now (it holds %d messages); from then on, %s", held, discardWhen(field)), nil
}

func discardWhen(field string) string {
	if field == "discard" {
		return "a full stream drops its oldest messages instead of refusing new ones"
	}
	return "a subject at its limit drops its oldest message instead of refusing a new one"
}

// over is how many of held a limit leaves out.
func over(held uint64, limit int64) uint64 {
	if limit <= 0 || held <= uint64(limit) {
		return 0
	}
	return held - uint64(limit)
}

// overPerSubject sums, over the stream's subjects, what a per-subject limit leaves out, reading
// the per-subject counts page by page (bounded as every list is: pager).
func (r *reading) overPerSubject(ctx context.Context, stream string, limit int64) (uint64, error) {
	var n uint64
	seen := map[string]bool{}
	pages := pager{what: "the subjects of stream " + stream}
	for offset := 0; ; {
		body, _ := json.Marshal(map[string]any{"subjects_filter": ">", "offset": offset})
		var page streamInfoResponse
		if err := r.requestRaw(ctx, r.opts.APIPrefix+apiStreamInfo+stream, body, &page); err != nil {
			return 0, err
		}
		fresh := 0
		for subject, count := range page.State.Subjects {
			if !seen[subject] {
				seen[subject] = true
				fresh++
				n += over(count, limit)
			}
		}
		offset += len(page.State.Subjects)
		if done, err := pages.next(len(page.State.Subjects), fresh, offset, page.Total); done || err != nil {
			return n, err
		}
	}
}

// olderThan counts the messages stored before cutoff: the sequence of the first message at or
// after it, less the first sequence.
func (r *reading) olderThan(ctx context.Context, stream string, cutoff time.Time, st jetstream.StreamState) (uint64, error) {
	body, _ := json.Marshal(map[string]any{"start_time": cutoff})
	var resp msgGetResponse
	err := r.requestRaw(ctx, r.opts.APIPrefix+apiStreamMsgGet+stream, body, &resp)
	var ae *jetstream.APIError
	if errors.As(err, &ae) && ae.ErrorCode == jetstream.JSErrCodeMessageNotFound {
		return st.Msgs, nil // every message is older
	}
	if err != nil || resp.Message == nil {
		return 0, err
	}
	return resp.Message.Seq - st.FirstSeq, nil
}
