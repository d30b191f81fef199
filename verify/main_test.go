package verify

import (
	"os"
	"testing"

	"github.com/meshc-dev/meshc/internal/testwait"
)

// TestMain runs eight parallel tests at once: each proof runs its own server and mostly waits on
// it (refusals that are timeouts, pulls' expiries), so two at a time left the cores idle.
func TestMain(m *testing.M) {
	testwait.Parallel(8)
	os.Exit(m.Run())
}
