package emit

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

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
