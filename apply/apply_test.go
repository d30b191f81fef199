package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/meshc-dev/meshc/apply/wire"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/compiler/compilertest"
	"github.com/meshc-dev/meshc/internal/output"
	"github.com/meshc-dev/meshc/internal/testwait"
)

// converge reads, diffs and applies, and returns the change set it applied.
func converge(t *testing.T, nc *nats.Conn, js jetstream.JetStream, plan *compiler.Plan, dopts change.DiffOptions, opts Options) (change.Changes, Result, error) {
	t.Helper()
	live, err := wire.Read(t.Context(), nc, wire.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cs := change.Diff(live, plan, dopts)
	res, err := Apply(t.Context(), js, cs, opts)
	return cs, res, err
}

// diffNow re-reads the bus and diffs it against the plan.
func diffNow(t *testing.T, nc *nats.Conn, plan *compiler.Plan, dopts change.DiffOptions) change.Changes {
	t.Helper()
	live, err := wire.Read(t.Context(), nc, wire.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return change.Diff(live, plan, dopts)
}

func requireEmpty(t *testing.T, cs change.Changes, why string) {
	t.Helper()
	if !cs.Empty() || cs.Unreadable() != 0 {
		var b strings.Builder
		_ = change.Render(&b, cs, output.Text)
		t.Fatalf("%s, but the diff is not empty:\n%s", why, b.String())
	}
}

func only(t *testing.T, cs change.Changes) change.Change {
	t.Helper()
	var got []change.Change
	for _, c := range cs.Items {
		if c.Action != change.NoOp {
			got = append(got, c)
		}
	}
	if len(got) != 1 {
		var b strings.Builder
		_ = change.Render(&b, cs, output.Text)
		t.Fatalf("want exactly one change, got %d:\n%s", len(got), b.String())
	}
	return got[0]
}

// ackFirst fetches the consumer's next n messages and acknowledges them, each confirmed by the
// server, so its ack floor has moved when it returns.
func ackFirst(t *testing.T, cons jetstream.Consumer, n int) {
	t.Helper()
	batch, err := cons.Fetch(n, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if err := m.DoubleAck(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestABusHoldingThePlanShowsNothingToChange(t *testing.T) {
	t.Parallel()
	s := runServer(t)
	nc, js := connect(t, s.ClientURL())
	plan := compilertest.MeshPlan(1, jetstream.FileStorage)

	cs, res, err := converge(t, nc, js, plan, change.DiffOptions{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cs.Count(change.Create), len(plan.Streams)+len(plan.Consumers); got != want || res.Applied != want {
		t.Fatalf("a fresh bus: %d creates, %d applied; want %d", got, res.Applied, want)
	}
	// What the server filled in (defaults, _nats.* metadata) is not a difference.
	requireEmpty(t, diffNow(t, nc, plan, change.DiffOptions{}), "the server holds exactly the plan")

	// Asserting twice changes nothing.
	cs, res, err = converge(t, nc, js, plan, change.DiffOptions{}, Options{})
	if err != nil || res.Applied != 0 || !cs.Empty() {
		t.Fatalf("the second apply: %d applied, err %v", res.Applied, err)
	}
}

func TestARealChangeShowsOnlyItsField(t *testing.T) {
	t.Parallel()
	s := runServer(t)
	nc, js := connect(t, s.ClientURL())
	plan := compilertest.MeshPlan(1, jetstream.FileStorage)
	if _, _, err := converge(t, nc, js, plan, change.DiffOptions{}, Options{}); err != nil {
		t.Fatal(err)
	}

	plan.Streams[1].Config.MaxAge = 1440 * time.Hour // EVENTS
	c := only(t, diffNow(t, nc, plan, change.DiffOptions{}))
	if c.Action != change.Update || c.Stream != "EVENTS" || len(c.Fields) != 1 || c.Fields[0].Name != "max_age" ||
		c.Fields[0].Old != "720h0m0s" || c.Fields[0].New != "1440h0m0s" {
		t.Fatalf("want EVENTS ~ max_age 720h0m0s → 1440h0m0s, got %+v", c)
	}
	if _, _, err := converge(t, nc, js, plan, change.DiffOptions{}, Options{}); err != nil {
		t.Fatal(err)
	}
	requireEmpty(t, diffNow(t, nc, plan, change.DiffOptions{}), "the stream was updated")

	plan.Consumers[5].Config.AckWait = 20 * time.Minute // the seat's holder
	plan.Consumers[5].Config.FilterSubjects = nil
	plan.Consumers[5].Config.FilterSubject = "mesh.seat.mesh-build-machine.accept.>" // the same filter, written the other way
	c = only(t, diffNow(t, nc, plan, change.DiffOptions{}))
	if c.Action != change.Update || c.Consumer != "holder" || len(c.Fields) != 1 || c.Fields[0].Name != "ack_wait" {
		t.Fatalf("want holder ~ ack_wait only, got %+v", c)
	}
	if _, _, err := converge(t, nc, js, plan, change.DiffOptions{}, Options{}); err != nil {
		t.Fatal(err)
	}
	requireEmpty(t, diffNow(t, nc, plan, change.DiffOptions{}), "the consumer was updated")

	// A setting the plan drops is a change too, back to the server's default.
	plan.Streams[2].Config.MaxMsgsPerSubject = 0 // NODES
	c = only(t, diffNow(t, nc, plan, change.DiffOptions{}))
	if c.Fields[0].Name != "max_msgs_per_subject" || c.Fields[0].Old != "1" || c.Fields[0].New != "-1" {
		t.Fatalf("want NODES ~ max_msgs_per_subject 1 → -1, got %+v", c)
	}
}

func TestAnExistingConsumersStartIsCarriedAcross(t *testing.T) {
	t.Parallel()
	s := runServer(t)
	nc, js := connect(t, s.ClientURL())
	plan := compilertest.MeshPlan(1, jetstream.MemoryStorage)
	if _, _, err := converge(t, nc, js, plan, change.DiffOptions{}, Options{}); err != nil {
		t.Fatal(err)
	}
	// Somebody (or an older meshc) made the controller's consumer start from new messages.
	ctx := t.Context()
	if err := js.DeleteConsumer(ctx, "EVENTS", "mesh-controller"); err != nil {
		t.Fatal(err)
	}
	cfg := plan.Consumers[3].Config
	cfg.DeliverPolicy = jetstream.DeliverNewPolicy
	cfg.Metadata = plan.Marked(cfg.Metadata)
	if _, err := js.CreateConsumer(ctx, "EVENTS", cfg); err != nil {
		t.Fatal(err)
	}
	requireEmpty(t, diffNow(t, nc, plan, change.DiffOptions{}), "only the consumer's start differs, which is its history")
	if _, _, err := converge(t, nc, js, plan, change.DiffOptions{}, Options{}); err != nil {
		t.Fatalf("asserting over a consumer with its own start: %v", err)
	}
}

func TestReplaceIsRefusedWithoutAllowReplaceAndDoneWithIt(t *testing.T) {
	t.Parallel()
	s := runServer(t)
	nc, js := connect(t, s.ClientURL())
	ctx := t.Context()
	plan := compilertest.MeshPlan(1, jetstream.FileStorage)
	if _, _, err := converge(t, nc, js, plan, change.DiffOptions{}, Options{}); err != nil {
		t.Fatal(err)
	}
	// Three events, the first two acknowledged by the controller's consumer.
	for i := range 3 {
		if _, err := js.Publish(ctx, "mesh.seat.mesh-build-machine.event.built", fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := js.Consumer(ctx, "EVENTS", "mesh-controller")
	if err != nil {
		t.Fatal(err)
	}
	ackFirst(t, cons, 2)

	// The controller's consumer replays at the original pace now: not changeable in place.
	plan.Consumers[3].Config.ReplayPolicy = jetstream.ReplayOriginalPolicy
	cs := diffNow(t, nc, plan, change.DiffOptions{})
	c := only(t, cs)
	if c.Action != change.Replace || c.Fields[0].Name != "replay_policy" || !c.Fields[0].Replaces {
		t.Fatalf("want mesh-controller -/+ replay_policy, got %+v", c)
	}
	_, err = Apply(ctx, js, cs, Options{})
	if err == nil || !strings.Contains(err.Error(), "--allow-replace") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("a replace without AllowReplace: %v", err)
	}
	info, err := cons.Info(ctx)
	if err != nil || info.Config.ReplayPolicy != jetstream.ReplayInstantPolicy {
		t.Fatalf("the refused replace changed the consumer anyway: %+v %v", info, err)
	}

	if _, err := Apply(ctx, js, cs, Options{AllowReplace: true}); err != nil {
		t.Fatal(err)
	}
	requireEmpty(t, diffNow(t, nc, plan, change.DiffOptions{}), "the consumer was replaced")
	// The replacement resumes after what the old one acknowledged: message 2, not 0 again.
	cons, _ = js.Consumer(ctx, "EVENTS", "mesh-controller")
	m, err := cons.Next(jetstream.FetchMaxWait(2 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Data()) != "2" {
		t.Fatalf("the replacement delivered %q first: it replayed what was already acknowledged", m.Data())
	}

	// A stream's retention to or from work queue is a replace too, and an empty one needs only
	// AllowReplace. Its consumers are made again with it.
	plan.Streams[3].Config.Retention = jetstream.LimitsPolicy // SEAT_MESH_BUILD_MACHINE
	cs = diffNow(t, nc, plan, change.DiffOptions{})
	if cs.Count(change.Replace) != 1 || cs.Count(change.Create) != 1 {
		t.Fatalf("want the seat's stream replaced and its holder made again, got %s", cs.Summary())
	}
	if _, err := Apply(ctx, js, cs, Options{}); err == nil {
		t.Fatal("a stream replace went through without AllowReplace")
	}
	// Work waiting in it: replacing would lose it, so that takes the extra say-so.
	if _, err := js.Publish(ctx, "mesh.seat.mesh-build-machine.accept.build", []byte("work")); err != nil {
		t.Fatal(err)
	}
	cs = diffNow(t, nc, plan, change.DiffOptions{})
	_, err = Apply(ctx, js, cs, Options{AllowReplace: true})
	if err == nil || !strings.Contains(err.Error(), "holds 1 messages that a replace would lose") {
		t.Fatalf("replacing a stream holding work: %v", err)
	}
	if seat, err := js.Stream(ctx, "SEAT_MESH_BUILD_MACHINE"); err != nil || seat.CachedInfo().State.Msgs != 1 {
		t.Fatalf("the refused replace lost the work: %v", err)
	}
	if _, err := Apply(ctx, js, cs, Options{AllowReplace: true, PurgeNonEmpty: true}); err != nil {
		t.Fatal(err)
	}
	requireEmpty(t, diffNow(t, nc, plan, change.DiffOptions{}), "the stream was replaced")
}

func TestPruneAndAStreamHoldingMessagesIsProtected(t *testing.T) {
	t.Parallel()
	s := runServer(t)
	nc, js := connect(t, s.ClientURL())
	ctx := t.Context()
	plan := compilertest.MeshPlan(1, jetstream.FileStorage)
	if _, _, err := converge(t, nc, js, plan, change.DiffOptions{}, Options{}); err != nil {
		t.Fatal(err)
	}
	// What an older catalogue left: a stream with a message, an empty one, a consumer.
	mark := plan.Marked(nil)
	for _, cfg := range []jetstream.StreamConfig{
		{Name: "OLD_FULL", Subjects: []string{"old.full.>"}, Metadata: mark},
		{Name: "OLD_EMPTY", Subjects: []string{"old.empty.>"}, Metadata: mark},
	} {
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.Publish(ctx, "old.full.x", []byte("keep me")); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateConsumer(ctx, "EVENTS", jetstream.ConsumerConfig{Durable: "gone_module", Metadata: mark}); err != nil {
		t.Fatal(err)
	}

	cs := diffNow(t, nc, plan, change.DiffOptions{})
	requireEmpty(t, cs, "without prune, what the plan lacks is left alone")
	if len(cs.Notes) != 1 || !strings.Contains(cs.Notes[0], "OLD_FULL") || !strings.Contains(cs.Notes[0], "EVENTS/gone_module") {
		t.Fatalf("what is left alone is not said: %q", cs.Notes)
	}

	cs = diffNow(t, nc, plan, change.DiffOptions{Prune: true})
	if cs.Count(change.Delete) != 3 {
		t.Fatalf("with prune, want 3 deletes, got %s", cs.Summary())
	}
	if _, err := Apply(ctx, js, cs, Options{}); err == nil || !strings.Contains(err.Error(), "--prune") {
		t.Fatalf("deletes without Prune: %v", err)
	}
	_, err := Apply(ctx, js, cs, Options{Prune: true})
	if err == nil || !strings.Contains(err.Error(), "holds 1 messages") || !strings.Contains(err.Error(), "--purge-non-empty") {
		t.Fatalf("a stream holding messages was not protected: %v", err)
	}
	if _, err := js.Stream(ctx, "OLD_EMPTY"); err != nil {
		t.Fatalf("a refused apply deleted something anyway: %v", err)
	}

	if _, err := Apply(ctx, js, cs, Options{Prune: true, PurgeNonEmpty: true}); err != nil {
		t.Fatal(err)
	}
	requireEmpty(t, diffNow(t, nc, plan, change.DiffOptions{Prune: true}), "everything not in the plan was pruned")
	if cs := diffNow(t, nc, plan, change.DiffOptions{}); len(cs.Notes) != 0 {
		t.Fatalf("after pruning, notes remain: %q", cs.Notes)
	}
}

// oldNodeConsumer makes NODES and anchor's declaration consumer as a running mesh holds it: made
// before the delivery subject carried the stream (docs/history.md, "A control plane crash-looping
// on a consumer it could not move"). ackWait, when set, differs from the plan too, so an update has
// something besides the subject to change.
func oldNodeConsumer(t *testing.T, js jetstream.JetStream, plan *compiler.Plan, ackWait time.Duration) {
	t.Helper()
	old := plan.Consumers[4].Config
	old.DeliverSubject = "_DELIVER.anchor"
	old.Metadata = plan.Marked(old.Metadata)
	if ackWait > 0 {
		old.AckWait = ackWait
	}
	nodes := plan.Streams[2].Config
	nodes.Metadata = plan.Marked(nodes.Metadata)
	if _, err := js.CreateStream(t.Context(), nodes); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateConsumer(t.Context(), "NODES", old); err != nil {
		t.Fatal(err)
	}
}

// The crash loop of docs/history.md, "A control plane crash-looping on a consumer it could not
// move", against a real server with a subscriber really bound.
func TestABoundPushConsumerKeepsItsSubjectAndStillDelivers(t *testing.T) {
	t.Parallel()
	s := runServer(t)
	nc, js := connect(t, s.ClientURL())
	ctx := t.Context()
	plan := compilertest.MeshPlan(1, jetstream.FileStorage)
	// The consumer as a running mesh holds it: made before the subject carried the stream.
	oldNodeConsumer(t, js, plan, 0)
	// The machine listens, the whole time.
	machine, _ := connect(t, s.ClientURL())
	sub, err := machine.SubscribeSync("_DELIVER.anchor")
	if err != nil {
		t.Fatal(err)
	}
	if err := machine.Flush(); err != nil {
		t.Fatal(err)
	}
	// The server marks the consumer bound a moment after the interest arrives; this test is of
	// a consumer read as bound (the race with a subscriber binding during the apply is its own).
	testwait.For(t, "the server to report the consumer bound", 10*time.Second, func() bool {
		c, err := js.PushConsumer(ctx, "NODES", "anchor")
		return err == nil && c.CachedInfo().PushBound
	})

	cs, res, err := converge(t, nc, js, plan, change.DiffOptions{}, Options{})
	if err != nil {
		t.Fatalf("the apply failed on the consumer a machine is bound to, which is the crash loop of docs/history.md#a-control-plane-crash-looping-on-a-consumer-it-could-not-move: %v", err)
	}
	var kept *change.Change
	for i, c := range cs.Items {
		if c.Consumer == "anchor" {
			kept = &cs.Items[i]
		}
	}
	if kept == nil || kept.Action != change.NoOp || len(kept.Notes) != 1 || !strings.Contains(kept.Notes[0], "keeps its delivery subject") {
		t.Fatalf("keeping the subject was not said: %+v (apply notes %q)", kept, res.Notes)
	}
	info, err := js.PushConsumer(ctx, "NODES", "anchor")
	if err != nil {
		t.Fatal(err)
	}
	if got := info.CachedInfo().Config.DeliverSubject; got != "_DELIVER.anchor" {
		t.Fatalf("the consumer a machine is bound to moved to %q", got)
	}
	if _, err := js.Publish(ctx, "mesh.node.anchor.declare", []byte("after the apply")); err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(2 * time.Second)
	if err != nil || string(m.Data) != "after the apply" {
		t.Fatalf("the machine stopped hearing its declarations: %v", err)
	}
	if err := m.Ack(); err != nil {
		t.Fatal(err)
	}

	// Asserting again is a no-op, or the controller crash-loops on its own restart.
	if cs, _, err := converge(t, nc, js, plan, change.DiffOptions{}, Options{}); err != nil || !cs.Empty() {
		t.Fatalf("the second apply: %v\n%+v", err, cs)
	}
}

// A subscriber that binds between the read and the update: the server's 10013 is kept and said,
// and the rest of the change is still made.
func TestASubscriberBoundAfterTheReadIsKeptAtApply(t *testing.T) {
	t.Parallel()
	s := runServer(t)
	nc, js := connect(t, s.ClientURL())
	ctx := t.Context()
	plan := compilertest.MeshPlan(1, jetstream.FileStorage)
	oldNodeConsumer(t, js, plan, time.Minute)
	live, err := wire.Read(ctx, nc, wire.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cs := change.Diff(live, plan, change.DiffOptions{})

	machine, _ := connect(t, s.ClientURL())
	sub, err := machine.SubscribeSync("_DELIVER.anchor")
	if err != nil {
		t.Fatal(err)
	}
	_ = machine.Flush()

	res, err := Apply(ctx, js, cs, Options{})
	if err != nil {
		t.Fatalf("the update refused with 10013 failed the apply: %v", err)
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "keeps its delivery subject") {
		t.Fatalf("keeping the subject at apply was not said: %q", res.Notes)
	}
	info, _ := js.PushConsumer(ctx, "NODES", "anchor")
	if c := info.CachedInfo().Config; c.DeliverSubject != "_DELIVER.anchor" || c.AckWait != 5*time.Minute {
		t.Fatalf("want the subject kept and ack wait 5m applied, got %q %s", c.DeliverSubject, c.AckWait)
	}
	if _, err := js.Publish(ctx, "mesh.node.anchor.declare", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.NextMsg(2 * time.Second); err != nil {
		t.Fatalf("the machine stopped hearing: %v", err)
	}
}

func TestAnUnboundPushConsumerMoves(t *testing.T) {
	t.Parallel()
	s := runServer(t)
	nc, js := connect(t, s.ClientURL())
	ctx := t.Context()
	plan := compilertest.MeshPlan(1, jetstream.FileStorage)
	oldNodeConsumer(t, js, plan, 0)
	cs := diffNow(t, nc, plan, change.DiffOptions{})
	var moved change.Change
	for _, c := range cs.Items {
		if c.Consumer == "anchor" {
			moved = c
		}
	}
	if moved.Action != change.Update || len(moved.Fields) != 1 || moved.Fields[0].Name != "deliver_subject" || len(moved.Notes) != 0 {
		t.Fatalf("want anchor ~ deliver_subject with nothing kept, got %+v", moved)
	}
	if _, err := Apply(ctx, js, cs, Options{}); err != nil {
		t.Fatal(err)
	}
	info, _ := js.PushConsumer(ctx, "NODES", "anchor")
	if got := info.CachedInfo().Config.DeliverSubject; got != "_DELIVER.NODES.anchor" {
		t.Fatalf("a consumer nothing is bound to did not move: %q", got)
	}
	requireEmpty(t, diffNow(t, nc, plan, change.DiffOptions{}), "the subject moved")
}

func TestReadingManyConsumersCostsAHandfulOfRequests(t *testing.T) {
	t.Parallel()
	s := runServer(t)
	nc, js := connect(t, s.ClientURL())
	ctx := t.Context()
	const n = 600
	plan := &compiler.Plan{Streams: []compiler.Stream{{Config: jetstream.StreamConfig{
		Name: "EVENTS", Subjects: []string{"mesh.mod.*.event.>"}, Storage: jetstream.MemoryStorage}}}}
	for i := range n {
		plan.Consumers = append(plan.Consumers, compiler.Consumer{Stream: "EVENTS", Config: jetstream.ConsumerConfig{
			Durable: fmt.Sprintf("node%03d_module", i), MaxDeliver: -1,
			FilterSubjects: []string{fmt.Sprintf("mesh.mod.m%03d.event.>", i)},
		}})
	}
	start := time.Now()
	cs, res, err := converge(t, nc, js, plan, change.DiffOptions{}, Options{Concurrency: 32})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("apply of %d objects: %s", res.Applied, time.Since(start))
	if cs.Count(change.Create) != n+1 {
		t.Fatalf("want %d creates, got %s", n+1, cs.Summary())
	}

	counting := &countingConn{Conn: nc}
	start = time.Now()
	live, err := wire.Read(ctx, counting, wire.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("read of 1 stream and %d consumers: %d requests, %s", n, counting.n.Load(), time.Since(start))
	// One stream page, then 256 consumers a page: 1 + 3.
	if got := counting.n.Load(); got != 4 || live.Requests != 4 {
		t.Fatalf("reading %d consumers cost %d requests (counted %d by the reader); want 4", n, got, live.Requests)
	}
	if got := len(live.Streams[0].Consumers); got != n {
		t.Fatalf("paging lost consumers: read %d of %d", got, n)
	}
	requireEmpty(t, change.Diff(live, plan, change.DiffOptions{}), "all consumers were made")
}

func TestStillDeletingIsTheStoresRenameRaceOnly(t *testing.T) {
	t.Parallel()
	race := &jetstream.APIError{Code: 500, ErrorCode: 10012,
		Description: "rename /s/jetstream/$G/streams/EVENTS/obs/c/o.dat.tmp /s/jetstream/$G/streams/EVENTS/obs/c/o.dat: no such file or directory"}
	if !wire.StillDeleting(race) {
		t.Error("the server's rename race after a delete was not recognised")
	}
	for _, other := range []error{
		&jetstream.APIError{Code: 500, ErrorCode: 10012, Description: "ack policy can not be updated"},
		&jetstream.APIError{Code: 400, ErrorCode: 10013, Description: "consumer name already in use"},
		errors.New("rename: no such file or directory"),
	} {
		if wire.StillDeleting(other) {
			t.Errorf("%v read as the rename race", other)
		}
	}
}

func TestRetryableIsNATSFactsListOnly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{context.DeadlineExceeded, true},
		{nats.ErrTimeout, true},
		{nats.ErrNoResponders, true},
		{fmt.Errorf("create stream X: %w", &jetstream.APIError{Code: 503, ErrorCode: 10008}), true},
		{&jetstream.APIError{Code: 500, ErrorCode: 10023}, true},
		{&jetstream.APIError{Code: 400, ErrorCode: 10058}, false},
		{&jetstream.APIError{Code: 503, ErrorCode: 10039}, false},
		{&wire.Refusal{Text: nats.ErrPermissionViolation.Error()}, false},
		{errors.New("anything else"), false},
		// Only the replace path turns the store's rename race into this, and only a few times.
		{wire.ErrStillDeleting, true},
		{&jetstream.APIError{Code: 500, ErrorCode: 10012, Description: "rename /x/o.dat.tmp /x/o.dat: no such file or directory"}, false},
	} {
		if got := wire.Retryable(tc.err); got != tc.want {
			t.Errorf("retryable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestRetryBacksOffAndGivesUp(t *testing.T) {
	t.Parallel()
	calls := 0
	start := time.Now()
	err := wire.Retry(t.Context(), time.Second, func(context.Context) error {
		calls++
		return nats.ErrNoResponders
	})
	// 250 ms, then 500 ms: the next wait (1 s) would pass the budget, with room for a loaded
	// machine oversleeping each wait.
	if err == nil || calls != 3 || !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("after %d calls in %s: %v", calls, time.Since(start), err)
	}
	calls = 0
	err = wire.Retry(t.Context(), time.Minute, func(context.Context) error {
		calls++
		return &jetstream.APIError{ErrorCode: 10058}
	})
	if err == nil || calls != 1 {
		t.Fatalf("a fatal error was retried %d times", calls)
	}
}
