package up

import (
	"bytes"
	"strings"
	"testing"

	"github.com/meshc-dev/meshc/compiler"
)

// The plan line up prints runs as printed: it names the catalogue, which plan needs unless it
// runs in the catalogue's directory (". is not a catalogue" otherwise), quoted where a shell
// would split it.
func TestPrintConnectNamesTheCatalogue(t *testing.T) {
	b := &Bus{URL: "nats://127.0.0.1:4222", plan: &compiler.Plan{Users: []compiler.User{{Name: compiler.ControllerUser, Kind: compiler.KindController}}}}
	for dir, want := range map[string]string{
		"examples/mesh": "  meshc plan examples/mesh --context examples/mesh/.meshc/contexts/mesh-controller.json\n",
		"my catalogue":  "  meshc plan 'my catalogue' --context 'my catalogue/.meshc/contexts/mesh-controller.json'\n",
		"bob's/mesh":    `  meshc plan 'bob'\''s/mesh' --context 'bob'\''s/mesh/.meshc/contexts/mesh-controller.json'` + "\n",
	} {
		var out bytes.Buffer
		b.PrintConnect(&out, map[string]string{compiler.ControllerUser: dir + "/.meshc/contexts/mesh-controller.json"}, dir)
		if !strings.Contains(out.String(), want) {
			t.Errorf("up on %q prints:\n%s\nwant the line %q", dir, out.String(), want)
		}
	}
}
