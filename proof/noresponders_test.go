package proof

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/meshc-dev/meshc/catalogue"
)

// call-agreement's and contract's reason: a call to a tool nobody serves is answered "no
// responders" at once, not by waiting out the caller's timeout. Checked as the composed user
// allowed to make the call, on the bus meshc composes, with nobody serving the tool.
func TestACallNobodyServesIsAnsweredNoRespondersAtOnce(t *testing.T) {
	t.Parallel()
	b := startBus(t, "testdata/proof.txtar", "", catalogue.IsolationShared)
	bob := b.connect(t, "person.bob")
	start := time.Now()
	_, err := bob.nc.Request("mesh.mod.catalog.tool.lookup", []byte("?"), 10*time.Second)
	if !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("a call nobody serves answered %v, want no responders", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("no responders took %s: the call waited out its timeout", d)
	}
	bob.sawNoViolation(t)
}
