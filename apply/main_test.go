package apply

import (
	"os"
	"testing"

	"github.com/meshc-dev/meshc/internal/natsproc"
	"github.com/meshc-dev/meshc/internal/testwait"
)

// TestMain lets the test binary be a nats-server process of its own, for the tests that stop
// or kill one (internal/natsproc), and runs eight parallel tests at once: each has its own
// server and mostly waits on it.
func TestMain(m *testing.M) {
	natsproc.RunIfServer()
	testwait.Parallel(8)
	os.Exit(m.Run())
}
