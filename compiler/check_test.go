package compiler

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// A compiled plan is checked once, by Compile; a plan made by hand is checked on its first use
// and refused where the server would read it wider than it means.
func TestCheck(t *testing.T) {
	p, _ := compileArchive(t, "testdata/small.txtar")
	if !p.Checked() {
		t.Fatal("Compile's plan is not checked")
	}
	for _, c := range []struct {
		name   string
		change func(p *Plan)
		want   string
	}{
		{"a user twice", func(p *Plan) { p.Users[2].Name = p.Users[1].Name }, "appears twice"},
		{"a nameless user", func(p *Plan) { p.Users[1].Name = "" }, "no name"},
		{"an empty allow list", func(p *Plan) { p.Users[1].Publish = Permission{Allow: []string{}} }, "nothing at all"},
		{"a deny list alone", func(p *Plan) { p.Users[1].Publish = Permission{Deny: []string{"mesh.>"}} }, "only a deny list"},
		{"a stream twice", func(p *Plan) { p.Streams = append(p.Streams, p.Streams[0]) }, "two streams named"},
		{"a consumer twice", func(p *Plan) { p.Consumers = append(p.Consumers, p.Consumers[0]) }, "two consumers named"},
		{"a consumer on no stream", func(p *Plan) {
			p.Consumers = append(p.Consumers, Consumer{Stream: "NOWHERE", Config: jetstream.ConsumerConfig{Durable: "x"}})
		}, "does not list"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, _ := compileArchive(t, "testdata/small.txtar")
			c.change(p)
			err := p.Check()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check = %v, want %q", err, c.want)
			}
			if p.Checked() {
				t.Fatal("a plan that failed its check is marked checked")
			}
		})
	}
}
