package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/compiler"
)

// lockKey is the lock's key: one per bus, because two applies of any two catalogues to one
// bus would each read a state the other is changing.
const lockKey = "apply.lock"

// LockHolder is what the lock records: who holds it, since when, and until when unless renewed.
type LockHolder struct {
	Holder  string    `json:"holder"`
	Started time.Time `json:"started"`
	Expires time.Time `json:"expires"`
}

func (h LockHolder) String() string {
	return fmt.Sprintf("%s, since %s, until %s unless renewed", h.Holder,
		h.Started.UTC().Format(time.RFC3339), h.Expires.UTC().Format(time.RFC3339))
}

// LockedError is a lock still held by another apply when the wait ran out.
type LockedError struct{ By LockHolder }

func (e *LockedError) Error() string {
	return fmt.Sprintf("another apply holds the bus: %s; wait for it, or if it is stuck break its lock with meshc apply --break-lock", e.By)
}

// ErrLockLost is the cause of a held lock's context ending because another apply took it (it
// was broken, or not renewed before it expired).
var ErrLockLost = errors.New("the apply lock was lost: another apply took it (broken with --break-lock, or expired while this one could not renew it)")

// LockOptions tune AcquireLock.
type LockOptions struct {
	// Holder names the apply in the record: who, where, which process. Required.
	Holder string
	// TTL is how long the lock lasts without renewal: a crashed holder's lock expires after it.
	// The holder renews it every TTL/3. Default 1 minute.
	TTL time.Duration
	// Wait is how long to wait for a lock another apply holds. 0 tries once.
	Wait time.Duration
	// Replicas of the bucket when apply first makes it. Default 1.
	Replicas int
}

// Lock is a held apply lock.
type Lock struct {
	kv     jetstream.KeyValue
	holder LockHolder
	ttl    time.Duration

	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   chan struct{}
	done   chan struct{}

	// mu guards rev and holder, which renewal moves on.
	mu  sync.Mutex
	rev uint64
}

// Context ends when the lock is lost; run the apply under it, so a lost lock stops it.
func (l *Lock) Context() context.Context { return l.ctx }

// Holder is what the lock records, as last renewed.
func (l *Lock) Holder() LockHolder {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holder
}

// stateBucket opens apply's bucket, making it the first time. An identical create answers OK,
// so two applies making it at once both succeed.
func stateBucket(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, compiler.ApplyBucket)
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return kv, err
	}
	return js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      compiler.ApplyBucket,
		Description: "meshc apply: the lock that lets one apply at a time change the bus",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    max(replicas, 1),
	})
}

// AcquireLock takes the bus's apply lock, waiting up to opts.Wait for another apply's. The lock
// is a key created only if absent (a compare-and-set on the bus), so two applies starting at
// the same moment cannot both get it. A holder that crashed stops renewing, and once its
// recorded expiry has passed the next apply takes the lock over, again by compare-and-set.
// Expiry is judged by the waiter's clock against the holder's record, so clocks far apart
// shorten or lengthen it by their difference.
func AcquireLock(ctx context.Context, js jetstream.JetStream, opts LockOptions) (*Lock, error) {
	if opts.TTL <= 0 {
		opts.TTL = time.Minute
	}
	kv, err := stateBucket(ctx, js, opts.Replicas)
	if err != nil {
		return nil, fmt.Errorf("open the apply lock's bucket %s: %w", compiler.ApplyBucket, explain(err))
	}
	deadline := time.Now().Add(opts.Wait)
	for {
		now := time.Now()
		rec := LockHolder{Holder: opts.Holder, Started: now, Expires: now.Add(opts.TTL)}
		data, _ := json.Marshal(rec)
		rev, err := kv.Create(ctx, lockKey, data)
		if err == nil {
			return startLock(ctx, kv, rec, rev, opts.TTL), nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, fmt.Errorf("take the apply lock: %w", explain(err))
		}
		entry, err := kv.Get(ctx, lockKey)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // released meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("read the apply lock: %w", explain(err))
		}
		var held LockHolder
		if json.Unmarshal(entry.Value(), &held) != nil || now.After(held.Expires) {
			// Expired (or not a record at all): taken over only if nobody else did first.
			rev, err := kv.Update(ctx, lockKey, data, entry.Revision())
			if err == nil {
				return startLock(ctx, kv, rec, rev, opts.TTL), nil
			}
			if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				return nil, fmt.Errorf("take over the expired apply lock: %w", explain(err))
			}
			continue
		}
		if !now.Before(deadline) {
			return nil, &LockedError{By: held}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(250*time.Millisecond, time.Until(deadline)+time.Millisecond)):
		}
	}
}

func startLock(ctx context.Context, kv jetstream.KeyValue, rec LockHolder, rev uint64, ttl time.Duration) *Lock {
	l := &Lock{kv: kv, holder: rec, ttl: ttl, rev: rev, stop: make(chan struct{}), done: make(chan struct{})}
	l.ctx, l.cancel = context.WithCancelCause(ctx)
	go l.renew()
	return l
}

// renew pushes the expiry forward every TTL/3, by compare-and-set on its own revision: if the
// revision moved, another apply has the lock, and this one stops.
func (l *Lock) renew() {
	defer close(l.done)
	tick := time.NewTicker(l.ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-l.ctx.Done():
			return
		case <-tick.C:
		}
		rec := l.holder
		rec.Expires = time.Now().Add(l.ttl)
		data, _ := json.Marshal(rec)
		ctx, cancel := context.WithTimeout(l.ctx, l.ttl/3)
		l.mu.Lock()
		rev, err := l.kv.Update(ctx, lockKey, data, l.rev)
		if err == nil {
			l.rev, l.holder = rev, rec
		}
		expired := time.Now().After(l.holder.Expires)
		l.mu.Unlock()
		cancel()
		switch {
		case errors.Is(err, jetstream.ErrKeyRevisionMismatch), errors.Is(err, jetstream.ErrKeyNotFound), err != nil && expired:
			// Taken, broken, or unrenewable past its own expiry: another apply may hold it now.
			l.cancel(ErrLockLost)
			return
		}
	}
}

// Release gives the lock up, only if it is still this apply's.
func (l *Lock) Release(ctx context.Context) error {
	close(l.stop)
	<-l.done
	defer l.cancel(nil)
	if context.Cause(l.ctx) == ErrLockLost {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.kv.Delete(ctx, lockKey, jetstream.LastRevision(l.rev))
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || isWrongLastSequence(err) {
		return nil // no longer ours to release
	}
	if err != nil {
		return fmt.Errorf("release the apply lock: %w", explain(err))
	}
	return nil
}

func isWrongLastSequence(err error) bool {
	var ae *jetstream.APIError
	return errors.As(err, &ae) && (ae.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || ae.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// BreakLock removes the apply lock whoever holds it, for a holder that is stuck (alive but
// never finishing) rather than crashed (a crashed one's lock expires by itself). It returns
// whose lock it was, or nil when nothing held it. The holder, if alive, finds out at its next
// renewal and stops.
func BreakLock(ctx context.Context, js jetstream.JetStream) (*LockHolder, error) {
	kv, err := js.KeyValue(ctx, compiler.ApplyBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open the apply lock's bucket %s: %w", compiler.ApplyBucket, explain(err))
	}
	entry, err := kv.Get(ctx, lockKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the apply lock: %w", explain(err))
	}
	var held LockHolder
	if err := json.Unmarshal(entry.Value(), &held); err != nil {
		held.Holder = fmt.Sprintf("unreadable record %q", entry.Value())
	}
	if err := kv.Delete(ctx, lockKey, jetstream.LastRevision(entry.Revision())); err != nil {
		return nil, fmt.Errorf("break the apply lock of %s: %w", held.Holder, explain(err))
	}
	return &held, nil
}
