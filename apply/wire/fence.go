package wire

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The lock's revision is a fencing token. Renewal alone finds a lost lock only at its next
// renewal, a third of the TTL later: until then two applies both believed they held the bus —
// after the bucket was deleted, a --break-lock on a live holder, or clocks far enough apart that
// a waiter took the lock as expired. So every write made under the lock first reads the lock
// back and checks it still carries this apply's revision (Check); a lock broken, taken over,
// gone with its bucket or expired unrenewed stops the writes at the next one. The check and the
// write are two requests, not one atomic step (the JetStream API has no write conditional on a
// key's revision), so the window left is one request long instead of up to twenty seconds.

// Check reads the lock back and returns nil while it is still this apply's, ErrLockLost (and
// ends Context) once it is not. Concurrent callers share reads: each waits for a read that
// began after it asked, so a hundred writes in flight cost a handful of reads, not a hundred.
func (l *Lock) Check(ctx context.Context) error {
	return l.fence.check(ctx, l.read)
}

// read is one check of the lock against the bus.
func (l *Lock) read() error {
	if context.Cause(l.ctx) == ErrLockLost {
		return ErrLockLost
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(l.ctx), 10*time.Second)
	defer cancel()
	// A bucket deleted is told from a server restarting by the bucket's Get (bucket.go).
	entry, err := l.kv.Get(ctx, LockKey)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrBucketNotFound), errors.Is(err, jetstream.ErrStreamNotFound):
		return l.lost("its key is gone (broken with --break-lock, or the bucket deleted)")
	case err != nil:
		return fmt.Errorf("check the apply lock is still this apply's: %w", Explain(err))
	}
	l.mu.Lock()
	// A read answered just before a renewal landed sees the revision renewed from: still ours.
	ours := entry.Revision() == l.rev || entry.Revision() == l.prevRev
	expired := time.Now().After(l.holder.Expires)
	l.mu.Unlock()
	switch {
	case !ours:
		return l.lost("another apply holds it now")
	case expired:
		return l.lost("it expired before this apply could renew it")
	}
	return nil
}

// lost ends the lock's context and says why the lock is no longer this apply's.
func (l *Lock) lost(why string) error {
	l.cancel(ErrLockLost)
	return fmt.Errorf("%w: %s", ErrLockLost, why)
}

// fence runs one read at a time; callers arriving while one runs share the next.
type fence struct {
	mu       sync.Mutex
	inflight *fenceRead
	next     *fenceRead
}

type fenceRead struct {
	done chan struct{}
	err  error
}

func (f *fence) check(ctx context.Context, read func() error) error {
	f.mu.Lock()
	var r *fenceRead
	if f.inflight == nil {
		r = &fenceRead{done: make(chan struct{})}
		f.inflight = r
		go f.run(r, read)
	} else {
		// The read in flight began before this caller asked: it waits for the next.
		if f.next == nil {
			f.next = &fenceRead{done: make(chan struct{})}
		}
		r = f.next
	}
	f.mu.Unlock()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		if cause := context.Cause(ctx); errors.Is(cause, ErrLockLost) {
			return cause
		}
		return ctx.Err()
	}
}

func (f *fence) run(r *fenceRead, read func() error) {
	for r != nil {
		r.err = read()
		close(r.done)
		f.mu.Lock()
		r, f.next = f.next, nil
		f.inflight = r
		f.mu.Unlock()
	}
}
