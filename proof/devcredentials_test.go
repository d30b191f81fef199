package proof

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/meshc-dev/meshc/compiler"
)

// sharedCredentials is one development credentials file for every bus this test process starts.
// `meshc up` mints what its state directory lacks, a bcrypt hash a password (catalogue.MintCost),
// and the proof's buses, each in a fresh directory, minted the same users afresh every time: a
// sixth of the proof's CPU. Handing each bus what the earlier ones minted is the path `meshc up`
// takes on every start after its first.
var sharedCredentials struct {
	sync.Mutex
	users map[string]yaml.Node
}

// shareCredentials gives state the credentials minted so far, before its bus starts, and returns
// what to call once the bus has started. A bus with a user nobody has minted yet holds the
// credentials until then, so that the buses the parallel tests start at once wait for its
// minting instead of each minting the same users.
func shareCredentials(t *testing.T, state string, plan *compiler.Plan) (started func()) {
	t.Helper()
	sharedCredentials.Lock()
	known := true
	for _, u := range plan.Users {
		if _, ok := sharedCredentials.users[u.Name]; !ok {
			known = false
			break
		}
	}
	if len(sharedCredentials.users) > 0 {
		data, err := yaml.Marshal(sharedCredentials.users)
		if err != nil {
			sharedCredentials.Unlock()
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(state, "dev-credentials.yaml"), data, 0o600); err != nil {
			sharedCredentials.Unlock()
			t.Fatal(err)
		}
	}
	if known {
		sharedCredentials.Unlock()
		return func() {}
	}
	return func() {
		defer sharedCredentials.Unlock()
		keepCredentials(t, state)
	}
}

// keepCredentials adds what state's bus minted to the credentials shared; the caller holds them.
func keepCredentials(t *testing.T, state string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(state, "dev-credentials.yaml"))
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		t.Error(err)
		return
	}
	var users map[string]yaml.Node
	if err := yaml.Unmarshal(data, &users); err != nil {
		t.Error(err)
		return
	}
	if sharedCredentials.users == nil {
		sharedCredentials.users = map[string]yaml.Node{}
	}
	for name, c := range users {
		if _, ok := sharedCredentials.users[name]; !ok {
			sharedCredentials.users[name] = c
		}
	}
}
