package asyncapi

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/lint"
)

var update = flag.Bool("update", false, "rewrite testdata/example.asyncapi.json")

const goldenFile = "testdata/example.asyncapi.json"

func example(t *testing.T) (*catalogue.Index, *compiler.Plan) {
	t.Helper()
	c, loaded, err := catalogue.Load("../examples/mesh")
	if err != nil {
		t.Fatal(err)
	}
	findings, plan := lint.Check(c, loaded)
	if findings.HasErrors() {
		t.Fatalf("the example does not lint clean: %v", findings)
	}
	return catalogue.NewIndex(c), plan
}

// The example's document is a golden file (`go test ./asyncapi -update` rewrites it), the same
// bytes every time it is written; .ci/run has the AsyncAPI initiative's parser read it.
func TestTheExamplesDocumentIsTheGoldenFile(t *testing.T) {
	ix, plan := example(t)
	var first, second bytes.Buffer
	if err := Write(&first, ix, plan, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := Write(&second, ix, plan, Options{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Fatal("two writings of one catalogue differ")
	}
	if *update {
		if err := os.WriteFile(goldenFile, first.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), want) {
		t.Fatalf("the example's document differs from %s: run `go test ./asyncapi -update` and review the diff", goldenFile)
	}
}

// The document's structure, read back from its JSON as a consumer of it reads it: an AsyncAPI
// 3.0 document; every event subject the catalogue derives, every tool, every seat's work a
// channel with that address; every operation's channel and reply a channel the document has; a
// tool served in its module's queue group by the NATS binding; every receive from a stream
// naming the durable consumers it reads through, each one the plan has.
func TestTheDocumentHasAChannelPerDerivedSubject(t *testing.T) {
	ix, plan := example(t)
	var buf bytes.Buffer
	if err := Write(&buf, ix, plan, Options{}); err != nil {
		t.Fatal(err)
	}
	var d Document
	if err := json.Unmarshal(buf.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if d.AsyncAPI != "3.0.0" || d.Info.Title != "novox" || d.Info.Version == "" || len(d.Servers) != 1 {
		t.Fatalf("not an AsyncAPI 3.0 document of novox with one server: %+v", d.Info)
	}
	addresses := map[string]string{}
	for id, c := range d.Channels {
		if c.Address != nil {
			addresses[*c.Address] = id
		}
		if len(c.Messages) == 0 {
			t.Errorf("channel %s has no message", id)
		}
	}
	var want []string
	for subject := range compiler.Emitted(ix) {
		want = append(want, subject)
	}
	for _, m := range ix.Modules {
		for _, tool := range m.Tools {
			want = append(want, compiler.Tool(m.Name.Value, tool.Value))
		}
	}
	for _, s := range ix.AllSeats() {
		for _, k := range s.Accepts {
			want = append(want, compiler.Work(s.Name.Value, k.Value))
		}
	}
	if len(want) < 30 {
		t.Fatalf("the example derives %d subjects: the walk is broken", len(want))
	}
	for _, s := range want {
		if addresses[s] == "" {
			t.Errorf("no channel has the address %s", s)
		}
	}
	consumers := map[string]bool{}
	for _, c := range plan.Consumers {
		consumers[c.Stream+"/"+compiler.ConsumerName(c.Config)] = true
	}
	kinds := map[string]int{}
	for id, o := range d.Operations {
		ch, ok := d.Channels[strings.TrimPrefix(o.Channel.Ref, "#/channels/")]
		if !ok {
			t.Errorf("operation %s's channel %s is not in the document", id, o.Channel.Ref)
			continue
		}
		if o.Reply != nil {
			if _, ok := d.Channels[strings.TrimPrefix(o.Reply.Channel.Ref, "#/channels/")]; !ok {
				t.Errorf("operation %s's reply %s is not in the document", id, o.Reply.Channel.Ref)
			}
		}
		kinds[ch.Kind+" "+o.Action]++
		switch {
		case ch.Kind == "tool" && o.Action == "receive":
			if o.Bindings == nil || o.Bindings.NATS.Queue != compiler.ToolQueue(o.Module) || o.Reply == nil {
				t.Errorf("operation %s serves a tool outside its module's queue group, or without a reply: %+v", id, o)
			}
		case ch.Kind == "tool" && o.Reply == nil:
			t.Errorf("operation %s calls a tool and waits for no answer", id)
		case o.Action == "receive" && ch.Stream != "":
			if len(o.Durables) == 0 && o.Module != "" && runs(ix, o.Module) {
				t.Errorf("operation %s receives from %s through no durable consumer", id, ch.Stream)
			}
			for _, durable := range o.Durables {
				if !consumers[durable] {
					t.Errorf("operation %s reads through %s, which the plan does not have", id, durable)
				}
			}
		}
	}
	for _, k := range []string{"event send", "event receive", "tool receive", "tool send", "work send", "work receive"} {
		if kinds[k] == 0 {
			t.Errorf("no operation is a %s", k)
		}
	}
}

// runs reports whether the inventory runs a module (a module nobody runs has no consumer).
func runs(ix *catalogue.Index, module string) bool {
	return module == compiler.ControllerUser || len(ix.Running[module]) > 0
}

// --module writes one module's operations alone and the channels they use: one service's
// document.
func TestOneModulesDocument(t *testing.T) {
	ix, plan := example(t)
	d, err := Build(ix, plan, Options{Module: "catalog"})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Operations) == 0 {
		t.Fatal("catalog's document has no operation")
	}
	used := map[string]bool{}
	for id, o := range d.Operations {
		if o.Module != "catalog" {
			t.Errorf("catalog's document holds %s, an operation of %s", id, o.Module)
		}
		used[strings.TrimPrefix(o.Channel.Ref, "#/channels/")] = true
		if o.Reply != nil {
			used[strings.TrimPrefix(o.Reply.Channel.Ref, "#/channels/")] = true
		}
	}
	for id := range d.Channels {
		if !used[id] {
			t.Errorf("catalog's document holds channel %s, which none of its operations uses", id)
		}
	}
	if !slices.ContainsFunc(keys(d.Operations), func(id string) bool { return strings.HasPrefix(id, "catalog.serve.") }) {
		t.Error("catalog's document does not serve its tool")
	}
	if _, err := Build(ix, plan, Options{Module: "nope"}); err == nil {
		t.Error("a module the catalogue does not have was written")
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
