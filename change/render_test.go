package change

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/compiler/compilertest"
	"github.com/meshc-dev/meshc/internal/output"
)

// liveFor is a bus as Read would report it after the plan was applied, with the server's
// fill-ins, so Diff and Render can be checked without a server (Diff is pure).
func liveFor(plan *compiler.Plan) *State {
	st := &State{}
	for _, ps := range plan.Streams {
		c := normalStream(ps.Config)
		c.Metadata = map[string]string{"_nats.ver": "2.15.2", compiler.OwnerKey: plan.Account}
		s := Stream{Name: c.Name, Config: c}
		for _, pc := range plan.Consumers {
			if pc.Stream == c.Name {
				cc := normalConsumer(pc.Config)
				cc.Metadata = plan.Marked(cc.Metadata)
				s.Consumers = append(s.Consumers, Consumer{Stream: c.Name, Name: cc.Name, Config: cc})
			}
		}
		st.Streams = append(st.Streams, s)
	}
	return st
}

func sampleChanges() Changes {
	plan := compilertest.MeshPlan(1, jetstream.FileStorage)
	live := liveFor(plan)
	// A stream the plan no longer has, holding messages; a consumer gone from the catalogue.
	mark := map[string]string{compiler.OwnerKey: plan.Account}
	live.Streams = append([]Stream{{Name: "AAA_OLD", Config: normalStream(jetstream.StreamConfig{Name: "AAA_OLD", Subjects: []string{"old.>"}, Metadata: mark}), Messages: 3}}, live.Streams...)
	live.Streams[2].Consumers = append(live.Streams[2].Consumers, Consumer{Stream: "EVENTS", Name: "gone", Config: normalConsumer(jetstream.ConsumerConfig{Durable: "gone", Metadata: mark})})
	// What is not the mesh's: a bucket, another application's stream, another tool's consumer.
	live.Streams = append(live.Streams,
		Stream{Name: "KV_leases", Config: normalStream(jetstream.StreamConfig{Name: "KV_leases", Subjects: []string{"$KV.leases.>"}}), Messages: 2},
		Stream{Name: "ORDERS", Config: normalStream(jetstream.StreamConfig{Name: "ORDERS", Metadata: map[string]string{compiler.OwnerKey: "another-mesh"}})})
	live.Streams[2].Consumers = append(live.Streams[2].Consumers, Consumer{Stream: "EVENTS", Name: "audit", Config: normalConsumer(jetstream.ConsumerConfig{Durable: "audit"})})
	slices.SortFunc(live.Streams, func(a, b Stream) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(live.Streams[2].Consumers, func(a, b Consumer) int { return strings.Compare(a.Name, b.Name) })
	plan.Streams[1].Config.MaxAge = 1440 * time.Hour
	plan.Streams[0].Config.Storage = jetstream.MemoryStorage
	plan.Streams = append(plan.Streams, compiler.Stream{Config: jetstream.StreamConfig{Name: "SEAT_IMAGE_STORE", Subjects: []string{"mesh.seat.image-store.accept.>"}, Retention: jetstream.WorkQueuePolicy}})
	plan.Consumers = append(plan.Consumers, compiler.Consumer{Stream: "SEAT_IMAGE_STORE", Config: jetstream.ConsumerConfig{Durable: "holder", FilterSubjects: []string{"mesh.seat.image-store.accept.>"}}})
	plan.Consumers[2].Config.Description = "a | pipe"
	return Diff(live, plan, DiffOptions{Prune: true})
}

func TestDiffIsPureAndOrdered(t *testing.T) {
	plan := compilertest.MeshPlan(1, jetstream.FileStorage)
	if cs := Diff(liveFor(plan), plan, DiffOptions{Prune: true}); !cs.Empty() {
		t.Fatalf("the bus is the plan, but the diff says %s", cs.Summary())
	}

	cs := sampleChanges()
	var got []string
	for _, c := range cs.Items {
		if c.Action != NoOp {
			got = append(got, c.Action.String()+" "+string(c.Kind)+" "+c.Name())
		}
	}
	want := []string{
		"- stream AAA_OLD",
		"-/+ stream CONTROL",
		"~ stream EVENTS",
		"+ stream SEAT_IMAGE_STORE",
		// CONTROL's consumers are made again with it.
		"+ consumer CONTROL/enrolments",
		"+ consumer CONTROL/reports",
		"~ consumer EVENTS/anchor_builder",
		"- consumer EVENTS/gone",
		"+ consumer SEAT_IMAGE_STORE/holder",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("changes, in order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Pruning touches only what carries the mark; the rest is listed, streams first.
	wantUnmanaged := []string{"stream KV_leases (key-value bucket leases)", `stream ORDERS (marked by mesh "another-mesh")`, "consumer EVENTS/audit"}
	if !slices.Equal(cs.Unmanaged, wantUnmanaged) {
		t.Fatalf("not managed: %q, want %q", cs.Unmanaged, wantUnmanaged)
	}
	if again := sampleChanges(); !bytes.Equal(renderOut(t, again, output.JSON), renderOut(t, cs, output.JSON)) {
		t.Fatal("the same inputs gave two change sets")
	}
	// Without prune, nothing is deleted, and what is left alone is said.
	plan2 := compilertest.MeshPlan(1, jetstream.FileStorage)
	live := liveFor(plan2)
	live.Streams = append(live.Streams, Stream{Name: "ZZZ", Config: normalStream(jetstream.StreamConfig{Name: "ZZZ", Metadata: plan2.Marked(nil)})})
	cs = Diff(live, plan2, DiffOptions{})
	if cs.Count(Delete) != 0 || len(cs.Notes) != 1 || !strings.Contains(cs.Notes[0], "ZZZ") {
		t.Fatalf("without prune: %s %q", cs.Summary(), cs.Notes)
	}
}

func renderOut(t *testing.T, cs Changes, f output.Format) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Render(&b, cs, f); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestRenderText(t *testing.T) {
	out := string(renderOut(t, sampleChanges(), output.Text))
	lines := strings.Split(out, "\n")
	if lines[0] != "4 to create, 2 to change, 1 to replace, 2 to delete, 5 unchanged." {
		t.Fatalf("summary line: %q", lines[0])
	}
	for _, want := range []string{
		"  - stream AAA_OLD (holds 3 messages)",
		"-/+ stream CONTROL",
		"      storage: file → memory  (forces replacement)",
		"      max_age: 720h0m0s → 1440h0m0s",
		"  ~ consumer EVENTS/anchor_builder",
		"Not managed by meshc (never changed or deleted, whatever the flags):",
		"  - stream KV_leases (key-value bucket leases)",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "stream SEAT_IMAGE_STORE") > strings.Index(out, "consumer CONTROL/enrolments") {
		t.Error("consumers before streams")
	}
	if !bytes.Equal(renderOut(t, sampleChanges(), output.Text), []byte(out)) {
		t.Error("text differs between two renders")
	}
}

func TestRenderJSON(t *testing.T) {
	raw := renderOut(t, sampleChanges(), output.JSON)
	var doc struct {
		Version int            `json:"version"`
		Summary map[string]int `json:"summary"`
		Changes []struct {
			Action, Symbol, Kind, Stream, Consumer string
			Fields                                 []Field
			Messages                               *uint64
			Notes                                  []string
		} `json:"changes"`
		Notes []string `json:"notes"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Version != 1 || doc.Summary["create"] != 4 || doc.Summary["update"] != 2 || doc.Summary["replace"] != 1 ||
		doc.Summary["delete"] != 2 || doc.Summary["unchanged"] != 5 || doc.Notes == nil {
		t.Fatalf("summary: %s", raw)
	}
	first := doc.Changes[0]
	if first.Action != "delete" || first.Symbol != "-" || first.Kind != "stream" || first.Stream != "AAA_OLD" || first.Messages == nil || *first.Messages != 3 {
		t.Fatalf("first change: %+v", first)
	}
	if bytes.Contains(raw, []byte(`\u003e`)) {
		t.Fatal("JSON escapes > in subjects")
	}
}

func TestRenderMarkdown(t *testing.T) {
	out := string(renderOut(t, sampleChanges(), output.Markdown))
	for _, want := range []string{
		"**4 to create, 2 to change, 1 to replace, 2 to delete, 5 unchanged**",
		"| --- | --- | --- |",
		"| `-/+` | stream `CONTROL` | `storage`: `file` → `memory` (forces replacement)",
		"`description`: `\"\"` → `a \\| pipe`",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, "| ") && strings.Count(strings.ReplaceAll(line, `\|`, ""), "|") != 4 {
			t.Errorf("a row with a broken cell: %q", line)
		}
	}
}

// A list that grows by one shows the one it gains (and loses), not two long lists.
func TestAListChangeShowsWhatItAddsAndRemoves(t *testing.T) {
	cs := Changes{Items: []Change{{
		Action: Update, Kind: KindConsumer, Stream: "EVENTS", Consumer: "anchor_catalog",
		Fields: []Field{{Name: "filter_subjects", Old: "[a, b]", New: "[b, c]", Added: []string{"c"}, Removed: []string{"a"}}},
	}}}
	var text, md strings.Builder
	if err := Render(&text, cs, output.Text); err != nil {
		t.Fatal(err)
	}
	if err := Render(&md, cs, output.Markdown); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"filter_subjects: + c\n", "filter_subjects: - a\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if strings.Contains(text.String(), "[a, b]") {
		t.Errorf("text repeats the whole lists:\n%s", text.String())
	}
	if !strings.Contains(md.String(), "`filter_subjects`: + `c`") {
		t.Errorf("markdown lacks the added filter:\n%s", md.String())
	}
	if a, r := listDelta([]string{"a", "b"}, []string{"b", "c"}); !slices.Equal(a, []string{"c"}) || !slices.Equal(r, []string{"a"}) {
		t.Errorf("listDelta = %v, %v", a, r)
	}
}

// JSON writes a list field's old and new values as arrays, and reads them back; other fields
// stay text.
func TestJSONWritesListsAsArrays(t *testing.T) {
	have := jetstream.ConsumerConfig{Durable: "c", FilterSubjects: []string{"a", "b"}, AckWait: time.Second}
	want := jetstream.ConsumerConfig{Durable: "c", FilterSubjects: []string{"b", "c"}, AckWait: 2 * time.Second}
	fields := consumerFields(normalConsumer(have), normalConsumer(want))
	cs := Changes{Items: []Change{{Action: Update, Kind: KindConsumer, Stream: "EVENTS", Consumer: "c", Fields: fields}}}
	raw := renderOut(t, cs, output.JSON)
	var doc struct {
		Changes []struct {
			Fields []map[string]any `json:"fields"`
		} `json:"changes"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	byName := map[string]map[string]any{}
	for _, f := range doc.Changes[0].Fields {
		byName[f["field"].(string)] = f
	}
	filters := byName["filter_subjects"]
	if filters == nil {
		t.Fatalf("no filter_subjects change in %s", raw)
	}
	if old, ok := filters["old"].([]any); !ok || len(old) != 2 || old[0] != "a" {
		t.Errorf("filter_subjects old = %#v, want an array [a b]", filters["old"])
	}
	if nw, ok := filters["new"].([]any); !ok || len(nw) != 2 || nw[1] != "c" {
		t.Errorf("filter_subjects new = %#v, want an array [b c]", filters["new"])
	}
	if _, ok := byName["ack_wait"]["old"].(string); !ok {
		t.Errorf("ack_wait old = %#v, want text", byName["ack_wait"]["old"])
	}
	// And back: a Field read from the JSON is the one written.
	var back struct {
		Changes []struct{ Fields []Field } `json:"changes"`
	}
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	for _, f := range back.Changes[0].Fields {
		if f.Name == "filter_subjects" && (!slices.Equal(f.NewList, []string{"b", "c"}) || f.Old != "[a, b]") {
			t.Errorf("read back %+v", f)
		}
	}
}
