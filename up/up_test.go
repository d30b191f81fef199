package up

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/compiler"
)

// A state directory made before meshc derived a stream's limits starts again: the limits a newer
// catalogue sets are changes the server makes by dropping what no longer fits, which a
// development bus makes and says, where apply asks for --allow-discard. Failing here once left a
// state directory that could only be deleted, losing everything in it.
func TestAStateDirectoryFromBeforeALimitStartsAgain(t *testing.T) {
	cat, _ := cataloguetest.Load(t, filepath.Join("..", "proof", "testdata", "proof.txtar"))
	plan, _ := compiler.Compile(catalogue.NewIndex(cat))
	state := t.TempDir()

	// The bus as an older meshc left it: EVENTS without its byte and message-size limits.
	older, _ := compiler.Compile(catalogue.NewIndex(cat))
	for i := range older.Streams {
		if older.Streams[i].Config.Name == compiler.EventsStream {
			older.Streams[i].Config.MaxBytes, older.Streams[i].Config.MaxMsgSize = -1, -1
		}
	}
	first, _, err := Start(context.Background(), older, Options{State: state})
	if err != nil {
		t.Fatal(err)
	}
	first.Stop()

	again, changes, err := Start(context.Background(), plan, Options{State: state})
	if err != nil {
		t.Fatalf("the state directory of an older meshc did not start again: %v", err)
	}
	defer again.Stop()
	dropped := Dropped(changes)
	if len(dropped) != 1 || !strings.Contains(dropped[0], "stream EVENTS") || !strings.Contains(dropped[0], "max_bytes") {
		t.Fatalf("the limits set on the older bus were not said: %q (%s)", dropped, changes.Summary())
	}
	if more, err := again.Apply(context.Background()); err != nil || !more.Empty() {
		t.Fatalf("a second apply: %v, %s", err, more.Summary())
	}
}
