package compiler

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strconv"
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

// Check sorts consumers by stream then name as a stable sort would, equals (which Check then
// refuses) kept in the order they came: the sort moves indices, not the consumers.
func TestCheckSortsConsumersStably(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		cs := make([]Consumer, rng.IntN(40))
		for i := range cs {
			cs[i] = Consumer{Stream: string(rune('A' + rng.IntN(3))), Config: jetstream.ConsumerConfig{Durable: string(rune('a' + rng.IntN(5))), Description: strconv.Itoa(i)}}
		}
		want := slices.Clone(cs)
		slices.SortStableFunc(want, func(a, b Consumer) int {
			return cmp.Or(cmp.Compare(a.Stream, b.Stream), cmp.Compare(ConsumerName(a.Config), ConsumerName(b.Config)))
		})
		sortConsumers(cs)
		if !slices.EqualFunc(cs, want, func(a, b Consumer) bool { return a.Stream == b.Stream && a.Config.Description == b.Config.Description }) {
			t.Fatalf("sorted\n%v\nwant\n%v", cs, want)
		}
	}
}
