// Package apply is the live bus: it connects as the NATS CLI does, reads what the bus holds into
// the change model's State, asserts a change set without losing data quietly (docs/commands.md, "Plans
// and a live bus: `meshc plan`, `meshc apply`, `meshc up`"), keeps one apply at a time by a lock
// on the bus, and delivers an accounts file to the server that must load it. What differs, and
// whether a change can lose data, is decided in package change, purely.
package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/change"
)

// Requester is what reading the live state needs of a connection; *nats.Conn has it. Kept this
// narrow so a test can count the requests a read costs.
type Requester interface {
	RequestWithContext(ctx context.Context, subj string, data []byte) (*nats.Msg, error)
}

// ReadOptions tune Read; the zero value is the default.
type ReadOptions struct {
	// RequestTimeout bounds one page. In a cluster the meta leader waits up to 4 s for stream
	// leaders before it answers with what is missing, so less than that reads a slow cluster
	// as an unreachable one. Default 10 s.
	RequestTimeout time.Duration
	// RetryFor bounds the retries of one page on the transient failures (docs/nats.md, "Retries and
	// what is transient"). Default 60 s.
	RetryFor time.Duration
	// APIPrefix is where the JetStream API answers; empty is DefaultAPIPrefix ($JS.API), and a
	// JetStream domain makes it $JS.<domain>.API.
	APIPrefix string
}

func (o ReadOptions) withDefaults() ReadOptions {
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 10 * time.Second
	}
	if o.RetryFor <= 0 {
		o.RetryFor = 60 * time.Second
	}
	if o.APIPrefix == "" {
		o.APIPrefix = DefaultAPIPrefix
	}
	return o
}

// The API subjects of the two paged lists. Raw requests rather than nats.go's ListStreams: the
// library drops the server's missing/offline fields (docs/nats.md, "Which client library"), and an
// object the server says it has but could not read must not look like an object that does not
// exist.
const (
	apiStreamList   = ".STREAM.LIST"
	apiConsumerList = ".CONSUMER.LIST."
)

type pagedRequest struct {
	Offset int `json:"offset"`
}

type paged struct {
	Error   *jetstream.APIError `json:"error,omitempty"`
	Total   int                 `json:"total"`
	Offset  int                 `json:"offset"`
	Limit   int                 `json:"limit"`
	Missing []string            `json:"missing,omitempty"`
	Offline map[string]string   `json:"offline,omitempty"`
}

type streamListResponse struct {
	paged
	Streams []*jetstream.StreamInfo `json:"streams"`
}

type consumerListResponse struct {
	paged
	Consumers []*jetstream.ConsumerInfo `json:"consumers"`
}

// Read reads every stream and consumer the account holds: the stream list, paged, then each
// stream's consumer list, paged — a handful of requests, not one per object (a natscli loop of INFO
// calls took 32 s for 1,000 objects: docs/nats.md, "Measured baselines").
func Read(ctx context.Context, nc Requester, opts ReadOptions) (*change.State, error) {
	opts = opts.withDefaults()
	st := &change.State{}
	r := &reading{nc: nc, opts: opts, st: st}
	unavailable := map[string]string{}
	seen, listed := map[string]bool{}, map[string]bool{}
	streams := pager{what: "the stream list"}
	for offset := 0; ; {
		var page streamListResponse
		if err := r.request(ctx, opts.APIPrefix+apiStreamList, offset, &page); err != nil {
			return nil, fmt.Errorf("list streams: %w", explain(err))
		}
		names := make([]string, 0, len(page.Streams))
		for _, si := range page.Streams {
			if si == nil {
				continue
			}
			names = append(names, si.Config.Name)
			if !seen[si.Config.Name] {
				st.Streams = append(st.Streams, change.Stream{Name: si.Config.Name, Config: si.Config, Messages: si.State.Msgs})
			}
			seen[si.Config.Name] = true
		}
		noteUnavailable(unavailable, page.paged)
		size, fresh := page.covers(names, listed)
		offset += size
		if done, err := streams.next(size, fresh, offset, page.Total); done || err != nil {
			if err != nil {
				return nil, err
			}
			break
		}
	}
	// A stream reported missing may still come with its configuration (every peer offline):
	// kept either way, marked.
	for name, why := range unavailable {
		if !seen[name] {
			seen[name] = true
			st.Streams = append(st.Streams, change.Stream{Name: name, Config: jetstream.StreamConfig{Name: name}})
		}
		for i := range st.Streams {
			if st.Streams[i].Name == name {
				st.Streams[i].Unavailable = why
			}
		}
	}
	slices.SortFunc(st.Streams, func(a, b change.Stream) int { return strings.Compare(a.Name, b.Name) })

	for i := range st.Streams {
		s := &st.Streams[i]
		if s.Unavailable != "" {
			// Asking would cost the 4 s the server waits for a leader that is not there, and
			// the answer could not be acted on anyway.
			s.ConsumersUnread = true
			continue
		}
		if err := r.readConsumers(ctx, s); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// reading is one Read: the connection, its options, and the state it fills in.
type reading struct {
	nc   Requester
	opts ReadOptions
	st   *change.State
}

func (r *reading) readConsumers(ctx context.Context, s *change.Stream) error {
	unavailable := map[string]string{}
	seen, listed := map[string]bool{}, map[string]bool{}
	consumers := pager{what: "the consumer list of stream " + s.Name}
	for offset := 0; ; {
		var page consumerListResponse
		err := r.request(ctx, r.opts.APIPrefix+apiConsumerList+s.Name, offset, &page)
		var ae *jetstream.APIError
		if errors.As(err, &ae) && ae.ErrorCode == jetstream.JSErrCodeStreamNotFound {
			// Deleted between the two lists: as absent as it now is.
			s.ConsumersUnread = true
			return nil
		}
		if err != nil {
			return fmt.Errorf("list consumers of stream %s: %w", s.Name, explain(err))
		}
		names := make([]string, 0, len(page.Consumers))
		for _, ci := range page.Consumers {
			if ci == nil {
				continue
			}
			names = append(names, ci.Name)
			if !seen[ci.Name] {
				s.Consumers = append(s.Consumers, change.Consumer{
					Stream: s.Name, Name: ci.Name, Config: ci.Config,
					PushBound: ci.PushBound, AckFloor: ci.AckFloor.Stream,
					Pending: ci.NumAckPending, AckedAboveFloor: ackedAboveFloor(ci),
				})
			}
			seen[ci.Name] = true
		}
		noteUnavailable(unavailable, page.paged)
		size, fresh := page.covers(names, listed)
		offset += size
		if done, err := consumers.next(size, fresh, offset, page.Total); done || err != nil {
			if err != nil {
				return err
			}
			break
		}
	}
	for name, why := range unavailable {
		if !seen[name] {
			s.Consumers = append(s.Consumers, change.Consumer{Stream: s.Name, Name: name})
		}
		for i := range s.Consumers {
			if s.Consumers[i].Name == name {
				s.Consumers[i].Unavailable = why
			}
		}
	}
	slices.SortFunc(s.Consumers, func(a, b change.Consumer) int { return strings.Compare(a.Name, b.Name) })
	return nil
}

// pager bounds one paged list. A page is asked at the offset the pages so far reached, until
// an empty page or the total the server gives; a broken or hostile server could keep that going
// until the command's own time-out (a page of names already seen, a total that grows with every
// page). So a list also ends, as an error, when a page brings nothing new — the server does not
// advance — and when it has brought more than twice the first total plus a page's worth — the
// total does not converge. A bus that grows while it is read stays well inside that bound.
type pager struct {
	what       string
	pages      int
	firstTotal int
	items      int
}

// next is told a page's size, how many of its items were new, the offset reached and the
// server's total; it says whether the list is complete, or why it must stop.
func (p *pager) next(size, fresh, offset, total int) (bool, error) {
	p.pages++
	if p.pages == 1 {
		p.firstTotal = total
	}
	p.items += fresh
	switch {
	case size == 0 || offset >= total:
		return true, nil
	case fresh == 0:
		return false, fmt.Errorf("%s does not advance: page %d at offset %d of a total of %d brought nothing new; the server's answers are broken, apply again (or restart it)", p.what, p.pages, offset, total)
	case p.items > 2*p.firstTotal+pageBound:
		return false, fmt.Errorf("%s does not converge: %d items read, the server first said %d and now %d; the server's answers are broken, apply again (or restart it)", p.what, p.items, p.firstTotal, total)
	}
	return false, nil
}

// pageBound is the most a JetStream list page holds (256 streams or consumers), as slack for
// objects made while a list is read.
const pageBound = 256

// covers says how many of the server's list entries a page covers, and how many of them are
// new, recording each in listed. In a cluster the server pages over every object it has
// assigned, but leaves out of the page's items one whose leader did not answer in time, naming
// it under "missing" or "offline" instead (nats-server 2.15, jsClusteredStreamListRequest): the
// next page starts past it, so the offset advances by every name the page gives, in items or
// not. Advancing by the items alone asked again for a page already read, once a node was down.
func (p *paged) covers(items []string, listed map[string]bool) (size, fresh int) {
	onPage := make(map[string]bool, len(items)+len(p.Missing)+len(p.Offline))
	add := func(name string) {
		if onPage[name] {
			return
		}
		onPage[name] = true
		size++
		if !listed[name] {
			listed[name] = true
			fresh++
		}
	}
	for _, name := range items {
		add(name)
	}
	for _, name := range p.Missing {
		add(name)
	}
	for name := range p.Offline {
		add(name)
	}
	return size, fresh
}

// noteUnavailable records what a page says it could not read. "missing" names objects whose
// leader did not answer in time; "offline" adds the server's reason.
func noteUnavailable(into map[string]string, p paged) {
	for _, name := range p.Missing {
		if _, ok := into[name]; !ok {
			into[name] = "reported missing by the server (its leader did not answer)"
		}
	}
	for name, why := range p.Offline {
		into[name] = "reported offline by the server: " + why
	}
}

// request makes one paged list request, retried on the transient failures (docs/nats.md, "Retries
// and what is transient").
func (r *reading) request(ctx context.Context, subject string, offset int, into interface{ apiError() *jetstream.APIError }) error {
	body, err := json.Marshal(pagedRequest{Offset: offset})
	if err != nil {
		return err
	}
	return r.requestRaw(ctx, subject, body, into)
}

// requestRaw makes one API request, retried on the transient failures (docs/nats.md, "Retries and
// what is transient").
func (r *reading) requestRaw(ctx context.Context, subject string, body []byte, into interface{ apiError() *jetstream.APIError }) error {
	return retry(ctx, r.opts.RetryFor, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, r.opts.RequestTimeout)
		defer cancel()
		r.st.Requests++
		msg, err := r.nc.RequestWithContext(ctx, subject, body)
		if err != nil {
			return explainRequestError(r.nc, err)
		}
		if err := json.Unmarshal(msg.Data, into); err != nil {
			return fmt.Errorf("the server's answer to %s is not a JetStream answer (%w): is this a JetStream server?", subject, err)
		}
		if ae := into.apiError(); ae != nil {
			return ae
		}
		return nil
	})
}

func (p *paged) apiError() *jetstream.APIError { return p.Error }

// explainRequestError turns a request that got no answer into what the user can do about it. A
// request the server's permissions refused only times out (nats.go reports no error of its own);
// the refusal is the Permissions Violation on the connection, and it is final.
func explainRequestError(nc Requester, err error) error {
	var r *Refusal
	if errors.As(err, &r) {
		return err
	}
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return err
	}
	switch c := nc.(type) {
	case *Bus:
		if r := c.Refused(); r != nil {
			return r
		}
	case *nats.Conn:
		// meshc's own connections make JetStream requests and read their inbox, nothing else:
		// any violation on them is the refusal of this request.
		if last := c.LastError(); last != nil && errors.Is(last, nats.ErrPermissionViolation) {
			return refusalOf(last, c)
		}
	}
	return err
}

// ackedAboveFloor counts a consumer's deliveries above its ack floor that are not pending: the
// consumer sequence counts every delivery, the floor's is the delivery just below the first
// message still pending (nats-server's consumer.go, moveAckFloor), so what lies between and is
// not pending was acknowledged — or is a redelivery, which makes it a bound, exact when nothing
// above the floor was delivered twice.
func ackedAboveFloor(ci *jetstream.ConsumerInfo) uint64 {
	above := ci.Delivered.Consumer - min(ci.Delivered.Consumer, ci.AckFloor.Consumer)
	return above - min(above, uint64(max(ci.NumAckPending, 0)))
}
