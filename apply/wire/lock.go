package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/safetext"
)

// LockKey is the lock's key: one per bus, because two applies of any two catalogues to one
// bus would each read a state the other is changing.
const LockKey = "apply.lock"

// LockHolder is what the lock records: who holds it, since when, and until when unless renewed.
type LockHolder struct {
	Holder  string    `json:"holder"`
	Started time.Time `json:"started"`
	Expires time.Time `json:"expires"`
}

// String says who holds the lock and for how long. The holder's text is whatever another apply
// (or anyone who may write the bucket) recorded, so it is made safe for a terminal first.
func (h LockHolder) String() string {
	return fmt.Sprintf("%s, since %s (%s ago), until %s unless renewed", safetext.Line(h.Holder),
		h.Started.UTC().Format(time.RFC3339), time.Since(h.Started).Round(time.Second),
		h.Expires.UTC().Format(time.RFC3339))
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
	// Waiting, when set, is told who holds the lock when the wait begins, and again every
	// WaitingEvery while it lasts: a waiting apply says why it waits.
	Waiting func(LockHolder)
	// WaitingEvery is how often Waiting is told again. Default 15 s.
	WaitingEvery time.Duration
	// TookOver, when set, is told whose lock was taken over and why: it had expired, or it was
	// not a record an apply writes.
	TookOver func(held LockHolder, why string)
	// AttemptTimeout bounds one request of the lock's bucket, RetryFor the retries of one
	// request on the transient failures. Defaults 5 s and 60 s.
	AttemptTimeout, RetryFor time.Duration
}

func (o LockOptions) timing() BucketTiming {
	return BucketTiming{Attempt: o.AttemptTimeout, Budget: o.RetryFor}.withDefaults()
}

// lockHorizon is how far ahead of now a lock record may say it expires and still be one an
// apply wrote: an apply writes now + TTL at every renewal, so a record claiming to last far past
// that — a year, written by whoever may write the bucket (in one account, a caller steering a
// tool's answer there) — would otherwise hold every apply off until then. The slack is for
// clocks apart: ten TTLs, ten minutes at the default.
func lockHorizon(ttl time.Duration) time.Duration { return 10 * ttl }

// Lock is a held apply lock.
type Lock struct {
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	holder LockHolder
	ttl    time.Duration

	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   chan struct{}
	done   chan struct{}

	// mu guards rev and holder, which renewal moves on.
	mu      sync.Mutex
	rev     uint64
	prevRev uint64

	// fence coalesces Check's reads of the lock (fence.go).
	fence fence
}

// Context ends when the lock is lost; run the apply under it, so a lost lock stops it.
func (l *Lock) Context() context.Context { return l.ctx }

// Holder is what the lock records, as last renewed.
func (l *Lock) Holder() LockHolder {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holder
}

// StateBucket opens apply's bucket, making it the first time, every request through the
// bucket's retry (bucket.go). An identical create answers OK, so two applies making it at once
// both succeed.
//
// Before making it, a user that may not write to it is found out: a request to a key's subject
// with no bucket behind it answers "no responders" when the publish is allowed, and only times
// out, with a Permissions Violation on the connection, when it is not. Made first, the bucket
// would be left behind empty by a user that can never take the lock. The probe names a stream
// no bucket is called, so that when another apply made the bucket a moment before, the bucket's
// stream refuses it unstored (a plain write would have stored an empty lock over its holder's)
// and the bucket is opened after all.
//
// Its replicas follow the meta group's size, as the server's placement tells it: three when the
// server says it is in a cluster (its INFO names one, whatever URLs the client was given: three
// naming one server, or one naming a node of a no_advertise cluster), fewer when the cluster
// cannot place three — two JetStream servers answer 10005, no suitable peers; peers short of
// resources 10023 — and one alone. The bucket's description says when it has fewer than three.
// The bucket is made once, so a two-node cluster's first apply waits PlacementWait for it.
func StateBucket(ctx context.Context, js jetstream.JetStream) (jetstream.KeyValue, error) {
	return StateBucketWith(ctx, js, BucketTiming{}.withDefaults())
}

func StateBucketWith(ctx context.Context, js jetstream.JetStream, timing BucketTiming) (jetstream.KeyValue, error) {
	kv, err := OpenBucket(ctx, js, timing)
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return kv, err
	}
	nc := js.Conn()
	var answer *nats.Msg
	err = timing.call(ctx, func(ctx context.Context) error {
		probe := nats.NewMsg("$KV." + compiler.ApplyBucket + "." + LockKey)
		probe.Header.Set(jetstream.ExpectedStreamHeader, ProbeStream)
		var err error
		answer, err = nc.RequestMsgWithContext(ctx, probe)
		if errors.Is(err, nats.ErrNoResponders) {
			return nil // the publish is allowed and no bucket is there: the answer looked for
		}
		if err != nil {
			return ExplainRequestError(nc, err)
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("writing to the bucket, before making it: %w", err)
	case answer != nil && IsStreamMismatch(answer):
		// Made meanwhile by another apply: the refusal stored nothing.
		return OpenBucket(ctx, js, timing)
	case answer != nil:
		return nil, fmt.Errorf("writing to the bucket, before making it: something other than a bucket answers its subjects (%q): find what subscribes to $KV.%s.> on the bus (a stream or a service), move it, and apply again", answer.Data, compiler.ApplyBucket)
	}
	cfg := jetstream.KeyValueConfig{
		Bucket:      compiler.ApplyBucket,
		Description: "meshc apply: the lock that lets one apply at a time change the bus",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    1,
	}
	if nc.ConnectedClusterName() != "" {
		cfg.Replicas = 3
	}
	// A cluster just started places fewer replicas than it has servers until every server has
	// joined its meta group (seen: a fresh three-node cluster answering three replicas with
	// 10005 for a moment), so a count is asked again for PlacementWait before a lower one.
	placeBy := time.Now().Add(PlacementWait)
	for {
		err = timing.call(ctx, func(ctx context.Context) error {
			var err error
			kv, err = js.CreateKeyValue(ctx, cfg)
			return err
		})
		var ae *jetstream.APIError
		if cfg.Replicas > 1 && errors.As(err, &ae) && (ae.ErrorCode == errInsufficientResources || ae.ErrorCode == errNoSuitablePeers) {
			if time.Now().Before(placeBy) {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(500 * time.Millisecond):
				}
				continue
			}
			cfg.Replicas--
			cfg.Description = fmt.Sprintf("meshc apply: the lock that lets one apply at a time change the bus (made with %d replica(s): the cluster could not place three)", cfg.Replicas)
			placeBy = time.Now().Add(PlacementWait)
			continue
		}
		if err != nil {
			return nil, err
		}
		return &bucket{KeyValue: kv, js: js, timing: timing}, nil
	}
}

// PlacementWait is how long the bucket's replica count is asked again before a lower one (a
// test shortens it).
var PlacementWait = 10 * time.Second

// errInsufficientResources is the server's "insufficient resources" (JSInsufficientResourcesErr).
const errInsufficientResources jetstream.ErrorCode = 10023

// errNoSuitablePeers is the server's "no suitable peers for placement" (JSClusterNoPeersErr):
// what two JetStream servers answer for three replicas.
const errNoSuitablePeers jetstream.ErrorCode = 10005

// OpenBucket opens apply's bucket, or says it is not there (ErrBucketNotFound).
func OpenBucket(ctx context.Context, js jetstream.JetStream, timing BucketTiming) (jetstream.KeyValue, error) {
	var kv jetstream.KeyValue
	err := timing.call(ctx, func(ctx context.Context) error {
		var err error
		kv, err = js.KeyValue(ctx, compiler.ApplyBucket)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &bucket{KeyValue: kv, js: js, timing: timing}, nil
}

// ProbeStream is the stream the bucket probe says it expects: no stream is called that (a
// stream name holds no '.'), so any stream that captures the probe refuses it.
const ProbeStream = "meshc.probe"

// IsStreamMismatch reports whether a publish's answer is JetStream refusing it for naming another
// stream (10060), which stores nothing.
func IsStreamMismatch(m *nats.Msg) bool {
	var ack struct {
		Error *jetstream.APIError `json:"error"`
	}
	return json.Unmarshal(m.Data, &ack) == nil && ack.Error != nil && ack.Error.ErrorCode == errStreamNotMatch
}

// errStreamNotMatch is the server's "expected stream does not match" (JSStreamNotMatchErr).
const errStreamNotMatch jetstream.ErrorCode = 10060

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
	if opts.WaitingEvery <= 0 {
		opts.WaitingEvery = 15 * time.Second
	}
	kv, err := StateBucketWith(ctx, js, opts.timing())
	if err != nil {
		return nil, fmt.Errorf("open the apply lock's bucket %s: %w", compiler.ApplyBucket, Explain(err))
	}
	deadline := time.Now().Add(opts.Wait)
	var told time.Time
	for {
		now := time.Now()
		rec := LockHolder{Holder: opts.Holder, Started: now, Expires: now.Add(opts.TTL)}
		data, _ := json.Marshal(rec)
		rev, err := kv.Create(ctx, LockKey, data)
		if err == nil {
			return startLock(ctx, js, kv, rec, rev, opts.TTL), nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, fmt.Errorf("take the apply lock: %w", Explain(err))
		}
		entry, err := kv.Get(ctx, LockKey)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // released meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("read the apply lock: %w", Explain(err))
		}
		var held LockHolder
		var why string
		switch {
		case json.Unmarshal(entry.Value(), &held) != nil:
			why = "it is not a lock record"
			held = LockHolder{Holder: fmt.Sprintf("unreadable record %q", entry.Value())}
		case now.After(held.Expires):
			why = "it expired"
		case held.Expires.Sub(now) > lockHorizon(opts.TTL):
			why = fmt.Sprintf("it claims to last until %s, far past the %s an apply's lock lasts unrenewed: no apply wrote it", held.Expires.UTC().Format(time.RFC3339), opts.TTL)
		}
		if why != "" {
			// Taken over only if nobody else did first.
			rev, err := kv.Update(ctx, LockKey, data, entry.Revision())
			if err == nil {
				if opts.TookOver != nil {
					opts.TookOver(held, why)
				}
				return startLock(ctx, js, kv, rec, rev, opts.TTL), nil
			}
			if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				return nil, fmt.Errorf("take over the expired apply lock: %w", Explain(err))
			}
			continue
		}
		if !now.Before(deadline) {
			return nil, &LockedError{By: held}
		}
		if opts.Waiting != nil && now.Sub(told) >= opts.WaitingEvery {
			told = now
			opts.Waiting(held)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(250*time.Millisecond, time.Until(deadline)+time.Millisecond)):
		}
	}
}

func startLock(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, rec LockHolder, rev uint64, ttl time.Duration) *Lock {
	l := &Lock{js: js, kv: kv, holder: rec, ttl: ttl, rev: rev, stop: make(chan struct{}), done: make(chan struct{})}
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
		rev, err := l.kv.Update(ctx, LockKey, data, l.rev)
		if err == nil {
			l.prevRev, l.rev, l.holder = l.rev, rev, rec
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
	err := l.kv.Delete(ctx, LockKey, jetstream.LastRevision(l.rev))
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || isWrongLastSequence(err) {
		return nil // no longer ours to release
	}
	if err != nil {
		return fmt.Errorf("release the apply lock: %w", Explain(err))
	}
	return nil
}

func isWrongLastSequence(err error) bool {
	var ae *jetstream.APIError
	return errors.As(err, &ae) && (ae.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || ae.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// BreakLock removes the apply lock whoever holds it, for a holder that is stuck (alive but
// never finishing) rather than crashed (a crashed one's lock expires by itself). It returns
// whose lock it was, or nil when nothing held it. The holder, if alive, finds out before its
// next write (Lock.Check) or at its next renewal, and stops.
func BreakLock(ctx context.Context, js jetstream.JetStream) (*LockHolder, error) {
	kv, err := OpenBucket(ctx, js, BucketTiming{}.withDefaults())
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open the apply lock's bucket %s: %w", compiler.ApplyBucket, Explain(err))
	}
	entry, err := kv.Get(ctx, LockKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the apply lock: %w", Explain(err))
	}
	var held LockHolder
	if err := json.Unmarshal(entry.Value(), &held); err != nil {
		held.Holder = fmt.Sprintf("unreadable record %q", entry.Value())
	}
	if err := kv.Delete(ctx, LockKey, jetstream.LastRevision(entry.Revision())); err != nil {
		return nil, fmt.Errorf("break the apply lock of %s: %w", held.Holder, Explain(err))
	}
	return &held, nil
}

// Revision is the lock's revision as taken: the bucket's sequence when it was.
func (l *Lock) Revision() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rev
}

// HolderName names an apply in the bus's lock: which mesh, who, where, which process, so the
// apply turned away knows whom to ask.
func HolderName(mesh string) string {
	who := "unknown"
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("meshc apply of mesh %s by %s@%s (pid %d)", mesh, who, host, os.Getpid())
}
