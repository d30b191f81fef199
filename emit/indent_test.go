package emit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/compiler/compilertest"
)

// indentJSON is json.Indent with two spaces, byte for byte, on what encoding/json writes: random
// nested values with empty objects and arrays, escapes and non-ASCII text in strings, and a
// rendered plan.
func TestIndentJSONIsJSONIndent(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	words := []string{"", "a", `quo"te`, `back\slash`, "new\nline", "tab\t", "ünï", "€", "<&>", "mesh.evt.*.>", `\u00e9`}
	var value func(depth int) any
	value = func(depth int) any {
		switch k := rng.IntN(7); {
		case depth > 4 || k == 0:
			return words[rng.IntN(len(words))]
		case k == 1:
			return rng.Float64() * 1e6
		case k == 2:
			return rng.IntN(3) == 0
		case k == 3:
			return nil
		case k == 4:
			a := make([]any, rng.IntN(4))
			for i := range a {
				a[i] = value(depth + 1)
			}
			return a
		default:
			m := map[string]any{}
			for range rng.IntN(4) {
				m[words[rng.IntN(len(words))]] = value(depth + 1)
			}
			return m
		}
	}
	encode := func(v any) []byte {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(rng.IntN(2) == 0)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	same := func(src []byte) {
		t.Helper()
		var want bytes.Buffer
		if err := json.Indent(&want, src, "", "  "); err != nil {
			t.Fatal(err)
		}
		if got := indentJSON(nil, src); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("indenting %s\ngot\n%s\nwant\n%s", src, got, want.Bytes())
		}
	}
	for range 2000 {
		same(encode(map[string]any{"v": value(0)}))
		same(encode([]any{value(0), value(0)}))
	}
	same(encode(planFile{Streams: []jetstream.StreamConfig{compilertest.MeshPlan(3, jetstream.FileStorage).Streams[0].Config}}))
}

// PlanJSON writes what encoding the whole file at once and indenting it writes, byte for byte:
// the example mesh's plan in both isolations (streams, consumers with filters and metadata, tools
// with callers), and the edge cases of a list — empty, nil, one element — with HTML characters
// left as they are.
func TestPlanJSONEncodesAsOneValue(t *testing.T) {
	whole := func(p *compiler.Plan) []byte {
		f := planFile{Streams: []jetstream.StreamConfig{}, Consumers: []planConsumer{}, Tools: p.Tools}
		if f.Tools == nil {
			f.Tools = []compiler.ServedTool{}
		}
		for _, s := range p.Streams {
			f.Streams = append(f.Streams, s.Config)
		}
		for _, c := range p.Consumers {
			f.Consumers = append(f.Consumers, planConsumer{Stream: c.Stream, Config: c.Config})
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
		var indented bytes.Buffer
		if err := json.Indent(&indented, b.Bytes(), "", "  "); err != nil {
			t.Fatal(err)
		}
		return indented.Bytes()
	}
	plans := map[string]*compiler.Plan{
		"nil lists":   {},
		"empty lists": {Streams: []compiler.Stream{}, Consumers: []compiler.Consumer{}, Tools: []compiler.ServedTool{}},
		"one each": {Streams: []compiler.Stream{{Config: jetstream.StreamConfig{Name: "A", Subjects: []string{"a.<&>.>"}}}},
			Consumers: []compiler.Consumer{{Stream: "A", Config: jetstream.ConsumerConfig{Durable: "c", FilterSubject: "a.*"}}},
			Tools:     []compiler.ServedTool{{Subject: "mesh.mod.m.tool.t", Callers: []string{}}}},
	}
	for _, isolation := range []string{"shared-account", "account-per-module"} {
		p := examplePlan(t, isolation)
		if len(p.Streams) < 2 || len(p.Consumers) < 2 || len(p.Tools) < 2 {
			t.Fatalf("the example plan (%s) has too little to compare: %d streams, %d consumers, %d tools", isolation, len(p.Streams), len(p.Consumers), len(p.Tools))
		}
		plans["example, "+isolation] = p
	}
	// Past the writer's buffer several times over: the file is written out as it goes.
	many := &compiler.Plan{}
	for i := range 400 {
		many.Streams = append(many.Streams, compiler.Stream{Config: jetstream.StreamConfig{Name: fmt.Sprintf("S%03d", i), Subjects: []string{fmt.Sprintf("s.%d.>", i)}}})
		for j := range 4 {
			many.Consumers = append(many.Consumers, compiler.Consumer{Stream: fmt.Sprintf("S%03d", i),
				Config: jetstream.ConsumerConfig{Durable: fmt.Sprintf("c%d", j), FilterSubject: fmt.Sprintf("s.%d.%d", i, j)}})
		}
	}
	plans["many, past the buffer"] = many
	for name, p := range plans {
		got, err := PlanJSON(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p == many && len(got) < 4*bufferSize {
			t.Fatalf("%s: %d bytes, not past the writer's buffer of %d several times", name, len(got), bufferSize)
		}
		if want := whole(p); !bytes.Equal(got, want) {
			t.Errorf("%s: element by element\n%s\nwhole\n%s", name, got, want)
		}
	}
}
