package up

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/compiler"
)

// SampleFlow finds a module event that another module's consumer filters on exactly, and
// proves the whole path with each side's own permissions: the emitter publishes, EVENTS stores
// it, the consumer's durable delivers it, and the ack is accepted.
func (b *Bus) SampleFlow(w io.Writer) error {
	plan := b.plan
	emitter, subject, consumer := "", "", compiler.Consumer{}
	for _, c := range plan.Consumers {
		if c.Stream != compiler.EventsStream || c.Config.Durable == compiler.ControllerUser {
			continue
		}
		filters := append([]string{c.Config.FilterSubject}, c.Config.FilterSubjects...)
		for _, f := range filters {
			if f == "" || strings.ContainsAny(f, "*>") {
				continue
			}
			for _, u := range plan.Users {
				if u.Kind == compiler.KindModule && slices.Contains(u.Publish.Allow, f) {
					emitter, subject, consumer = u.Name, f, c
					break
				}
			}
			if emitter != "" {
				break
			}
		}
		if emitter != "" {
			break
		}
	}
	if emitter == "" {
		fmt.Fprintln(w, "sample flow: no module consumes another module's event by name; nothing to prove")
		return nil
	}
	reader := consumer.User

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	connect := func(user string) (*nats.Conn, jetstream.JetStream, error) {
		nc, err := b.Connect(user)
		if err != nil {
			return nil, nil, err
		}
		js, err := jetstream.New(nc)
		return nc, js, err
	}
	enc, ejs, err := connect(emitter)
	if err != nil {
		return err
	}
	defer enc.Close()
	payload := fmt.Sprintf("meshc up sample %x", sha256.Sum256([]byte(time.Now().String())))
	if _, err := ejs.Publish(ctx, subject, []byte(payload)); err != nil {
		return fmt.Errorf("%s publishing %s: %w", emitter, subject, err)
	}
	rnc, rjs, err := connect(reader)
	if err != nil {
		return err
	}
	defer rnc.Close()
	cons, err := rjs.Consumer(ctx, compiler.EventsStream, consumer.Config.Durable)
	if err != nil {
		return fmt.Errorf("%s binding its consumer %s: %w", reader, consumer.Config.Durable, err)
	}
	// Earlier runs may have left messages before ours; each is acknowledged on the way.
	for range 1000 {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return fmt.Errorf("%s fetching from %s: %w", reader, consumer.Config.Durable, err)
		}
		got := false
		for m := range batch.Messages() {
			got = true
			if err := m.DoubleAck(ctx); err != nil {
				return fmt.Errorf("%s acknowledging on %s: %w", reader, consumer.Config.Durable, err)
			}
			if string(m.Data()) == payload {
				fmt.Fprintf(w, "sample flow: %s published %s; EVENTS stored it; %s's consumer %s delivered it and the ack was accepted\n",
					emitter, subject, reader, consumer.Config.Durable)
				return nil
			}
		}
		if err := batch.Error(); err != nil {
			return fmt.Errorf("%s fetching from %s: %w", reader, consumer.Config.Durable, err)
		}
		if !got {
			return fmt.Errorf("%s's consumer %s delivered nothing within 5 s; run meshc up again, or delete the state directory to start from an empty bus", reader, consumer.Config.Durable)
		}
	}
	return fmt.Errorf("the sample message never reached %s: a thousand older messages were ahead of it; delete the state directory to start from an empty bus", consumer.Config.Durable)
}
