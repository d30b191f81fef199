package apply

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/internal/natstest"
)

// The retention rule's reason (lint --against): a lowered limit is applied in place and the
// server drops what the stream holds beyond it at once, asking nobody.
func TestALoweredLimitDropsWhatTheStreamHeldBeyondIt(t *testing.T) {
	t.Parallel()
	s := natstest.JetStream(t)
	nc, js := connect(t, s.ClientURL())
	defer nc.Close()
	ctx := t.Context()
	cfg := jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"mesh.mod.*.event.>"}, MaxMsgsPerSubject: 10}
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := js.Publish(ctx, "mesh.mod.a.event.e", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	cfg.MaxMsgsPerSubject = 2
	st, err := js.UpdateStream(ctx, cfg)
	if err != nil {
		t.Fatalf("a lowered limit is refused, not applied in place: %v", err)
	}
	if n := st.CachedInfo().State.Msgs; n != 2 {
		t.Fatalf("the stream holds %d messages after max-msgs-per-subject 10 → 2, want 2", n)
	}
}
