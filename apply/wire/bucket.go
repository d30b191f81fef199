package wire

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/compiler"
)

// Every request of apply's state bucket — the lock and the records beside it — goes through one
// retry, each attempt bounded: with the caller's deadline alone (apply's is 30 minutes) one
// request lost while the bucket's stream elected a leader waited out the whole deadline. A
// write retried after an attempt that timed out may have been made by that attempt; the bucket
// then answers that the key moved, and the write is judged by what the key holds: the value
// this write carries (a lock record names its holder's process and the nanosecond it was
// written) is this write's.

// BucketTiming bounds each request of the state bucket: one attempt, and the retries of one
// request on the transient failures (docs/nats.md, "Retries and what is transient").
type BucketTiming struct {
	Attempt, Budget time.Duration
}

func (t BucketTiming) withDefaults() BucketTiming {
	if t.Attempt <= 0 {
		t.Attempt = 5 * time.Second
	}
	if t.Budget <= 0 {
		t.Budget = 60 * time.Second
	}
	return t
}

// call runs one request with the retry, each attempt bounded.
func (t BucketTiming) call(ctx context.Context, op func(ctx context.Context) error) error {
	t = t.withDefaults()
	return Retry(ctx, t.Budget, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, t.Attempt)
		defer cancel()
		return op(ctx)
	})
}

// bucket is the state bucket with its requests retried. The methods apply uses are overridden;
// any other passes through unretried.
type bucket struct {
	jetstream.KeyValue
	js     jetstream.JetStream
	timing BucketTiming
}

// Get reads a key. "No responders" is what a direct get meets once the bucket is deleted, and
// also, briefly, while a server restarts: the bucket's stream says which, at once, rather than
// after a minute of retries.
func (b *bucket) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	var entry jetstream.KeyValueEntry
	err := b.timing.call(ctx, func(ctx context.Context) error {
		var err error
		entry, err = b.KeyValue.Get(ctx, key)
		if errors.Is(err, nats.ErrNoResponders) {
			if _, serr := b.js.Stream(ctx, compiler.ApplyBucketStream); errors.Is(serr, jetstream.ErrStreamNotFound) {
				return jetstream.ErrBucketNotFound
			}
		}
		return err
	})
	return entry, err
}

// Put writes a key; writing the same value twice is harmless.
func (b *bucket) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	var rev uint64
	err := b.timing.call(ctx, func(ctx context.Context) error {
		var err error
		rev, err = b.KeyValue.Put(ctx, key, value)
		return err
	})
	return rev, err
}

// Create writes a key that must not exist.
func (b *bucket) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	var rev uint64
	tried := false
	err := b.timing.call(ctx, func(ctx context.Context) error {
		r, err := b.KeyValue.Create(ctx, key, value, opts...)
		if errors.Is(err, jetstream.ErrKeyExists) && tried {
			if r, ok := b.holds(ctx, key, value); ok {
				rev = r
				return nil
			}
		}
		tried = tried || err != nil
		rev = r
		return err
	})
	return rev, err
}

// Update writes a key that must still be at revision last.
func (b *bucket) Update(ctx context.Context, key string, value []byte, last uint64) (uint64, error) {
	var rev uint64
	tried := false
	err := b.timing.call(ctx, func(ctx context.Context) error {
		r, err := b.KeyValue.Update(ctx, key, value, last)
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) && tried {
			if r, ok := b.holds(ctx, key, value); ok {
				rev = r
				return nil
			}
		}
		tried = tried || err != nil
		rev = r
		return err
	})
	return rev, err
}

// Delete removes a key (at the revision opts name, if any); a key already gone after an attempt
// that timed out was removed by that attempt.
func (b *bucket) Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	tried := false
	return b.timing.call(ctx, func(ctx context.Context) error {
		err := b.KeyValue.Delete(ctx, key, opts...)
		if tried && (errors.Is(err, jetstream.ErrKeyRevisionMismatch) || isWrongLastSequence(err)) {
			if _, gerr := b.KeyValue.Get(ctx, key); errors.Is(gerr, jetstream.ErrKeyNotFound) {
				return nil
			}
		}
		tried = tried || err != nil
		return err
	})
}

// holds reports whether the key holds exactly value now, and at which revision.
func (b *bucket) holds(ctx context.Context, key string, value []byte) (uint64, bool) {
	entry, err := b.KeyValue.Get(ctx, key)
	if err != nil || !bytes.Equal(entry.Value(), value) {
		return 0, false
	}
	return entry.Revision(), true
}
