package apply

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
)

// A replaced consumer's position must survive the apply that replaces it: between the delete
// and the create, a SIGKILL, a CI timeout or a server down past the retry budget would leave the
// consumer gone, and a rerun would make it again from the plan — deliver all — replaying every
// message it had acknowledged. So where the replacement starts is written to the bus before the
// delete, and a rerun that finds the consumer missing starts it there.

// resumePrefix is the keys' prefix in the state bucket.
const resumePrefix = "resume."

var plainKey = regexp.MustCompile(`^[-_=a-zA-Z0-9]+$`)

// resumeKey is the point's key: resume.STREAM.consumer when both names are plain key tokens
// (the mesh's names are), else the pair base64url-encoded so any name the server accepts fits.
func resumeKey(stream, consumer string) string {
	if plainKey.MatchString(stream) && plainKey.MatchString(consumer) {
		return resumePrefix + stream + "." + consumer
	}
	return resumePrefix + "b64." + base64.RawURLEncoding.EncodeToString([]byte(stream+"\x00"+consumer))
}

// apiMsgGet follows the API prefix (a JetStream domain), as the lists do.
const apiMsgGet = ".STREAM.MSG.GET." + compiler.ApplyBucketStream

type msgGetResponse struct {
	Error   *jetstream.APIError `json:"error,omitempty"`
	Message *struct {
		Subject string `json:"subject"`
		Seq     uint64 `json:"seq"`
		Data    []byte `json:"data"`
	} `json:"message"`
}

func (m *msgGetResponse) apiError() *jetstream.APIError { return m.Error }

// readResumes reads every recorded resume point: one request per point, walking the bucket's
// resume keys by "next message on this subject" — no consumer, no subscription beyond the
// inbox. A point is rare (only between a replace's delete and create), so this is cheap.
func (r *reading) readResumes(ctx context.Context) error {
	r.st.Resumes = map[[2]string]change.ResumePoint{}
	for seq := uint64(1); ; {
		body, _ := json.Marshal(map[string]any{"seq": seq, "next_by_subj": "$KV." + compiler.ApplyBucket + "." + resumePrefix + ">"})
		var resp msgGetResponse
		err := r.requestRaw(ctx, r.opts.APIPrefix+apiMsgGet, body, &resp)
		var ae *jetstream.APIError
		if errors.As(err, &ae) && (ae.ErrorCode == jetstream.JSErrCodeMessageNotFound || ae.ErrorCode == jetstream.JSErrCodeStreamNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the resume points of replaced consumers: %w", explain(err))
		}
		if resp.Message == nil {
			return nil
		}
		seq = resp.Message.Seq + 1
		var point change.ResumePoint
		// A deleted point leaves an empty marker: nothing to resume.
		if len(resp.Message.Data) == 0 || json.Unmarshal(resp.Message.Data, &point) != nil || point.Consumer == "" {
			continue
		}
		r.st.Resumes[[2]string{point.Stream, point.Consumer}] = point
	}
}

func (a *applier) resumeBucket(ctx context.Context) (jetstream.KeyValue, error) {
	a.kvOnce.Do(func() {
		a.kv, a.kvErr = stateBucket(ctx, a.js, 1)
	})
	return a.kv, a.kvErr
}

// recordResume writes where c's replacement starts, before c is deleted. Put, not create: a
// point left by an earlier stopped run is replaced by this run's, which read the live consumer.
func (a *applier) recordResume(ctx context.Context, c change.Change) error {
	kv, err := a.resumeBucket(ctx)
	if err != nil {
		return err
	}
	r := change.StartOf(c.Stream, c.Consumer, c.ConsumerConfig)
	r.Recorded = time.Now().UTC()
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return a.call(ctx, func(ctx context.Context) error {
		_, err := kv.Put(ctx, resumeKey(c.Stream, c.Consumer), data)
		return err
	})
}

// forgetResume removes a point once its consumer exists again.
func (a *applier) forgetResume(ctx context.Context, c change.Change) error {
	kv, err := a.resumeBucket(ctx)
	if err != nil {
		return err
	}
	return a.call(ctx, func(ctx context.Context) error {
		err := kv.Delete(ctx, resumeKey(c.Stream, c.Consumer))
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil
		}
		return err
	})
}
