package principal

import (
	"os"
	"testing"

	"github.com/meshc-dev/meshc/internal/natsproc"
)

// TestMain lets the test binary be a nats-server process of its own, for the test that pauses
// one (internal/natsproc).
func TestMain(m *testing.M) {
	natsproc.RunIfServer()
	os.Exit(m.Run())
}
