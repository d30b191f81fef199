package apply

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
)

// A mesh with more consuming modules than a stream may have consumers by default applies on a
// default server: the compiler gives EVENTS a max_consumers of its own (nats-server caps a stream
// at 1,000 consumers unless the stream says otherwise, and -1 does not lift it).
func TestAMeshPastTheServersConsumerLimitApplies(t *testing.T) {
	const modules = 1100
	c := &catalogue.Catalogue{Mesh: &catalogue.Mesh{File: "mesh.yaml", Name: catalogue.Text{Value: "big"}}}
	emitter := &catalogue.Module{File: "modules/source.yaml", Name: catalogue.Text{Value: "source"},
		Emits: []catalogue.Text{{Value: "done"}}}
	c.Modules = append(c.Modules, emitter)
	node := &catalogue.Node{Name: catalogue.Text{Value: "anchor"}}
	for i := range modules {
		name := fmt.Sprintf("m%04d", i)
		c.Modules = append(c.Modules, &catalogue.Module{File: "modules/" + name + ".yaml", Name: catalogue.Text{Value: name},
			Consumes: []catalogue.Text{{Value: "source.done"}}})
		node.Runs = append(node.Runs, catalogue.Text{Value: name, Pos: catalogue.Pos{File: "inventory.yaml", Line: 2, Col: i + 1}})
	}
	c.Inventory = &catalogue.Inventory{File: "inventory.yaml", Nodes: []*catalogue.Node{node}}
	// Hashes are not this test's subject: the one finding it may have is that it has none.
	plan, findings := compiler.Compile(catalogue.NewIndex(c))
	for _, f := range findings {
		if f.Rule != compiler.RuleCredentialMissing.ID {
			t.Fatal(findings)
		}
	}
	for i := range plan.Streams {
		// Memory, so the test does not wait on the disk for a thousand consumer files.
		plan.Streams[i].Config.Storage = jetstream.MemoryStorage
	}

	s := runServer(t)
	nc, js := connect(t, s.ClientURL())
	if _, _, err := converge(t, nc, js, plan, change.DiffOptions{}, Options{Concurrency: 32}); err != nil {
		t.Fatalf("applying %d consumers on EVENTS: %v", modules, err)
	}
	requireEmpty(t, diffNow(t, nc, plan, change.DiffOptions{}), "after applying past the default consumer limit")
	info, err := js.Stream(t.Context(), compiler.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.CachedInfo().State.Consumers; got != modules {
		t.Fatalf("EVENTS holds %d consumers, want %d", got, modules)
	}
}
