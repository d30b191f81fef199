package review

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/synth"
	"github.com/meshc-dev/meshc/lint"
)

// The review computes the diff and the user comparison once and hands them to the breaking
// rules: what it shows is what Breaks and Users say on their own, with --prune or without, when
// the change replaces a stream, drops one, renames a machine and widens users.
func TestTheReviewShowsWhatBreaksAndUsersSay(t *testing.T) {
	files, err := synth.Files(60, 1)
	if err != nil {
		t.Fatal(err)
	}
	base := side(t, files)
	files["inventory.yaml"] = bytes.Replace(files["inventory.yaml"], []byte("name: box-0,"), []byte("name: box-zero,"), 1)
	files["inventory.yaml"] = bytes.Replace(files["inventory.yaml"], []byte("may-call: [\"*\"]"), []byte("may-call: [\"*\"]}\n  - {name: zed, may-call: [\"*\"]"), 1)
	head := side(t, files)
	// A stream the server must replace (its store changes), and one the head no longer has.
	i := slices.IndexFunc(head.Plan.Streams, func(s compiler.Stream) bool { return s.Config.Name == compiler.EventsStream })
	head.Plan.Streams[i].Config.Storage = jetstream.MemoryStorage
	head.Plan.Streams = slices.Delete(head.Plan.Streams, len(head.Plan.Streams)-1, len(head.Plan.Streams))

	c := &Comparison{Base: base, Head: head, Label: "base",
		basePos: func(p catalogue.Pos) catalogue.Pos { return p.Under("base") },
		headPos: func(p catalogue.Pos) catalogue.Pos { return p.Under("head") }}
	breaks, unmatched := c.Breaks()
	users := c.Users()
	rules := map[string]bool{}
	for _, b := range breaks {
		rules[b.Rule] = true
	}
	if !rules["replay"] || !rules["retention"] || !rules["widening"] || len(users) == 0 {
		t.Fatalf("the change should replay, cut retention, widen and change users; got breaks %v and %d users", rules, len(users))
	}
	for _, prune := range []bool{false, true} {
		r := c.Review(prune)
		if !reflect.DeepEqual(r.Breaks, breaks) || !reflect.DeepEqual(r.Unmatched, unmatched) {
			t.Errorf("prune=%v: the review's breaks differ from Breaks:\n%v\n%v", prune, r.Breaks, breaks)
		}
		if !reflect.DeepEqual(r.Users, users) {
			t.Errorf("prune=%v: the review's users differ from Users", prune)
		}
	}
}

func side(t *testing.T, files map[string][]byte) lint.Side {
	t.Helper()
	dir := t.TempDir()
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := loadSide(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
