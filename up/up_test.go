package up

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshc-dev/meshc/apply/deliver"
	"github.com/meshc-dev/meshc/apply/wire"
	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/change"
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

// A plan against meshc up's own bus compares its users and accounts with the accounts file up
// gave its server — recorded on the bus as apply --accounts records one — leaving out the
// development passwords, which are this machine's: nothing differs after Start, and a person the
// catalogue adds is a user to create until Update delivers it.
func TestAPlanAgainstUpsBusComparesItsUsers(t *testing.T) {
	cat, _ := cataloguetest.Load(t, filepath.Join("..", "proof", "testdata", "proof.txtar"))
	plan, _ := compiler.Compile(catalogue.NewIndex(cat))
	b, _, err := Start(context.Background(), plan, Options{State: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	compare := func(plan *compiler.Plan) change.Changes {
		t.Helper()
		bus, err := wire.Connect(b.Controller())
		if err != nil {
			t.Fatal(err)
		}
		defer bus.Close()
		js, _ := bus.JetStream()
		d, err := deliver.NewRecordedDelivery(plan, "")
		if err != nil {
			t.Fatal(err)
		}
		held, err := d.Read(context.Background(), js)
		if err != nil {
			t.Fatal(err)
		}
		return change.Diff(&change.State{Principals: held}, plan, change.DiffOptions{Principals: d.Wanted()})
	}
	if cs := compare(plan); cs.PrincipalsUnknown != "" || !cs.PrincipalsEmpty() || !strings.Contains(cs.PrincipalsFrom, "development credentials") {
		t.Fatalf("after Start: %s (%s%s)", cs.PrincipalsSummary(), cs.PrincipalsFrom, cs.PrincipalsUnknown)
	}
	cat.Inventory.People = append(cat.Inventory.People, &catalogue.Person{Name: catalogue.Text{Value: "dave"}})
	more, _ := compiler.Compile(catalogue.NewIndex(cat))
	if cs := compare(more); cs.CountPrincipals(change.KindUser, change.Create) != 1 {
		t.Fatalf("a person added: %s", cs.PrincipalsSummary())
	}
	if _, _, err := b.Update(context.Background(), more); err != nil {
		t.Fatal(err)
	}
	if cs := compare(more); !cs.PrincipalsEmpty() {
		t.Fatalf("after Update: %s", cs.PrincipalsSummary())
	}
}
