package change

import (
	"reflect"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/natstest"
)

// TestServerFillsTheDefaultsDiffAssumes pins each default normalStream and normalConsumer assume
// to what this server fills in for a zero value, and a config with nothing set round-trips: made
// on a real server, read back as the server reports it, and compared with the plan, nothing
// differs.
func TestServerFillsTheDefaultsDiffAssumes(t *testing.T) {
	s := natstest.JetStream(t)
	_, js := natstest.Connect(t, s.ClientURL())
	ctx := t.Context()
	plan := &compiler.Plan{
		Streams: []compiler.Stream{
			{Config: jetstream.StreamConfig{Name: "BARE", Subjects: []string{"bare.>"}}},
			{Config: jetstream.StreamConfig{Name: "NOSUBJECTS"}},
			{Config: jetstream.StreamConfig{Name: "SHORT", Subjects: []string{"short.>"}, MaxAge: time.Minute}},
		},
		Consumers: []compiler.Consumer{
			{Stream: "BARE", Config: jetstream.ConsumerConfig{Durable: "meta", Metadata: map[string]string{"owner": "mesh"}}},
			{Stream: "BARE", Config: jetstream.ConsumerConfig{Durable: "one", FilterSubjects: []string{"bare.x"}}},
			{Stream: "BARE", Config: jetstream.ConsumerConfig{Durable: "pull"}},
			{Stream: "BARE", Config: jetstream.ConsumerConfig{Durable: "push", DeliverSubject: "push.here"}},
		},
	}
	plan.Mark()
	live := &State{}
	for _, ps := range plan.Streams {
		st, err := js.CreateStream(ctx, ps.Config)
		if err != nil {
			t.Fatal(err)
		}
		live.Streams = append(live.Streams, Stream{Name: ps.Config.Name, Config: st.CachedInfo().Config})
	}
	for _, pc := range plan.Consumers {
		c, err := js.CreateConsumer(ctx, pc.Stream, pc.Config)
		if err != nil {
			t.Fatal(err)
		}
		ls := live.Stream(pc.Stream)
		ls.Consumers = append(ls.Consumers, Consumer{Stream: pc.Stream, Name: pc.Config.Durable, Config: c.CachedInfo().Config})
	}
	if cs := Diff(live, plan, DiffOptions{}); !cs.Empty() {
		t.Fatalf("bare configs made on a real server differ from the plan that made them: %s", cs.Summary())
	}

	got := live.Stream("BARE").Config
	if got.MaxMsgs != -1 || got.MaxBytes != -1 || got.MaxMsgsPerSubject != -1 || got.MaxConsumers != -1 ||
		got.MaxMsgSize != -1 || got.Replicas != 1 || got.Duplicates != defaultDuplicates ||
		got.Storage != jetstream.FileStorage || got.Discard != jetstream.DiscardOld {
		t.Fatalf("the server's stream defaults moved: %+v", got)
	}
	if _, ok := got.Metadata["_nats.ver"]; !ok {
		t.Fatalf("the server no longer injects _nats.* metadata; userMetadata may be obsolete: %v", got.Metadata)
	}
	if d := live.Stream("SHORT").Config.Duplicates; d != time.Minute {
		t.Fatalf("duplicate window of a stream kept 1m: %s; the server no longer caps it at max age", d)
	}
	pc := live.Consumer("BARE", "pull").Config
	if pc.AckWait != defaultAckWait || pc.MaxDeliver != -1 || pc.MaxAckPending != defaultMaxAckPending || pc.MaxWaiting != defaultMaxWaiting {
		t.Fatalf("the server's pull consumer defaults moved: %+v", pc)
	}
	if mw := live.Consumer("BARE", "push").Config.MaxWaiting; mw != 0 {
		t.Fatalf("a push consumer got max waiting %d", mw)
	}

	// And the normalisation is what keeps it quiet: compared raw, the server's fill-ins would
	// all be phantom changes.
	raw := compareStructs(reflect.ValueOf(got), reflect.ValueOf(plan.Streams[0].Config), map[string]bool{"name": true})
	if len(raw) == 0 {
		t.Fatal("a raw comparison found nothing, so this test proves nothing about normalisation")
	}
}
