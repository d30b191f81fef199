package proof

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/compiler"
)

// One emitter within its caps no longer pushes out another's unread events. A stream's max_bytes
// drops its oldest message whoever's it is, and a cap per subject protects no other subject
// (docs/nats.md, "Limits and floods"): with every subject keeping 10,000, loud's two events alone
// held more than EVENTS keeps, and its flood pushed out every one of quiet's unread notes. EVENTS
// now holds every subject at its cap, so loud's flood drops only loud's own oldest. Both
// isolations, on the defaults but for the stream's size.
func TestAnEmitterWithinItsCapsKeepsOthersEvents(t *testing.T) {
	t.Parallel()
	for _, isolation := range inLoop(isolations) {
		t.Run(isolation, func(t *testing.T) {
			t.Parallel()
			b := startBus(t, "testdata/events-share.txtar", "", isolation)
			i := slices.IndexFunc(b.plan.Streams, func(s compiler.Stream) bool { return s.Config.Name == compiler.EventsStream })
			events := b.plan.Streams[i].Config
			if events.MaxMsgsPerSubject >= 10_000 {
				t.Fatalf("EVENTS keeps %d of each subject: the test floods nothing past a cap", events.MaxMsgsPerSubject)
			}
			quiet, loud := b.connect(t, "mod.anchor.quiet"), b.connect(t, "mod.anchor.loud")
			var notes []string
			for range 50 {
				notes = append(notes, quiet.publishesAndIsStored(t, "mesh.mod.quiet.event.note", "EVENTS"))
			}
			// Loud floods both its events, 1 KiB each, twice what EVENTS would keep at 10,000 a
			// subject; each of its subjects keeps its own newest.
			body := []byte(strings.Repeat("x", 1024-100))
			const each = 10_000
			for _, subject := range []string{"mesh.mod.loud.event.a", "mesh.mod.loud.event.b"} {
				for i := range each {
					if _, err := loud.js.PublishAsync(subject, body); err != nil {
						t.Fatal(err)
					}
					if i%1000 == 999 {
						select {
						case <-loud.js.PublishAsyncComplete():
						case <-time.After(30 * time.Second):
							t.Fatal("loud's flood was not acknowledged in 30 s")
						}
					}
				}
			}
			loud.sawNoViolation(t)
			controller := b.connect(t, "mesh-controller")
			for _, subject := range []string{"mesh.mod.loud.event.a", "mesh.mod.loud.event.b"} {
				if n := controller.subjectMessages(t, compiler.EventsStream, subject); n != uint64(events.MaxMsgsPerSubject) {
					t.Errorf("%s keeps %d, want its cap %d", subject, n, events.MaxMsgsPerSubject)
				}
			}
			// Every one of quiet's notes is still there for reader, unread until now.
			b.connect(t, "mod.anchor.reader").pullsAndAcksTwice(t, compiler.EventsStream, "anchor_reader", notes...)
		})
	}
}

// subjectMessages is how many messages stream holds on subject, as the stream's own info says.
func (c *client) subjectMessages(t *testing.T, stream, subject string) uint64 {
	t.Helper()
	s, err := c.js.Stream(context5s(t), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context5s(t), jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subject]
}
