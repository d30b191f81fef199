package change

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/compiler/compilertest"
	"github.com/meshc-dev/meshc/internal/output"
)

// Names come from the bus, and whoever can create a stream chooses them: a `|` must not break
// the markdown table a CI job posts, and an escape sequence must not rewrite the lines above it
// on an operator's terminal. Every plan format shows such a name escaped; JSON still decodes to
// the name itself.
func TestNamesFromTheBusAreEscapedInEveryFormat(t *testing.T) {
	hostile := "EVIL|x\x1b[1A\x1b[2K##[error]forged\u009b"
	plan := compilertest.MeshPlan(1, jetstream.FileStorage)
	live := liveFor(plan)
	// Marked as the mesh's, so a prune makes it a row of the table and no prune a note; and an
	// unmarked twin, which is listed as not managed.
	live.Streams = append(live.Streams,
		Stream{Name: hostile, Config: normalStream(jetstream.StreamConfig{Name: hostile, Subjects: []string{"evil.>"}, Metadata: map[string]string{compiler.OwnerKey: plan.Account}}), Messages: 1},
		Stream{Name: hostile + "2", Config: normalStream(jetstream.StreamConfig{Name: hostile + "2", Subjects: []string{"evil2.>"}}), Messages: 1})
	// Sorted by name, as Read returns them: Diff finds streams by binary search.
	slices.SortFunc(live.Streams, func(a, b Stream) int { return strings.Compare(a.Name, b.Name) })
	// An unmarked consumer on the mesh's first stream: listed as not managed.
	live.Streams[0].Consumers = append(live.Streams[0].Consumers, Consumer{Stream: live.Streams[0].Name, Name: "c|\x1b]0;title\x07", Config: normalConsumer(jetstream.ConsumerConfig{Durable: "c|\x1b]0;title\x07"})})
	for _, prune := range []bool{true, false} {
		checkEscaped(t, Diff(live, plan, DiffOptions{Prune: prune}), hostile)
	}
}

func checkEscaped(t *testing.T, cs Changes, hostile string) {
	t.Helper()

	for _, f := range Formats {
		var buf bytes.Buffer
		if err := Render(&buf, cs, f); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if !strings.Contains(out, "EVIL") {
			t.Fatalf("%v: the stream is not shown:\n%s", f, out)
		}
		for _, r := range out {
			if unicode.IsControl(r) && r != '\n' {
				t.Errorf("%v: %U printed raw:\n%q", f, r, out)
				break
			}
		}
		if strings.Contains(out, "##[") {
			t.Errorf("%v: ##[ printed raw", f)
		}
		switch f {
		case output.Markdown:
			unescapedPipe := regexp.MustCompile(`(^|[^\\])\|`)
			for _, line := range strings.Split(out, "\n") {
				if strings.HasPrefix(line, "| `") {
					if n := len(unescapedPipe.FindAllString(line, -1)); n != 4 {
						t.Errorf("markdown row with %d cell borders, want 4: %s", n, line)
					}
				}
			}
		case output.JSON:
			var got struct {
				Changes    []struct{ Stream, Consumer string }
				Notes      []string
				NotManaged []string `json:"not_managed"`
			}
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			// The marked stream is a delete (prune) or a note (no prune); the unmarked twin is
			// listed as not managed.
			found := strings.Contains(strings.Join(append(got.Notes, got.NotManaged...), " "), hostile)
			for _, c := range got.Changes {
				found = found || c.Stream == hostile
			}
			if !strings.Contains(strings.Join(got.NotManaged, " "), hostile+"2") {
				t.Errorf("json no longer decodes to the unmanaged stream's own name:\n%s", out)
			}
			if !found {
				t.Errorf("json no longer decodes to the stream's own name:\n%s", out)
			}
		}
	}
}
