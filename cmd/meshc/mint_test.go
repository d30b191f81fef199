package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"

	"github.com/meshc-dev/meshc/catalogue"
)

// recorded reads the hashes credentials.yaml holds.
func recorded(t *testing.T, dir string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, catalogue.CredentialsFile))
	if err != nil {
		t.Fatal(err)
	}
	hashes := map[string]string{}
	if err := yaml.Unmarshal(data, &hashes); err != nil {
		t.Fatalf("credentials.yaml no longer parses: %v\n%s", err, data)
	}
	return hashes
}

// Mints running at once, each naming its own user, plus two `--missing` racing them, lose no
// hash: every password printed verifies against what credentials.yaml ends up holding. Before
// the lock, a mint's write dropped the hashes another had recorded since it read the file.
func TestConcurrentMintsLoseNoHash(t *testing.T) {
	t.Parallel()
	dir := copyCatalogue(t, "../../examples/mesh", false)
	os.Remove(filepath.Join(dir, catalogue.CredentialsFile))
	// Forty people, forty users to race over.
	inv, err := os.OpenFile(filepath.Join(dir, catalogue.InventoryFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for i := range 40 {
		fmt.Fprintf(inv, "  - {name: p%d, may-call: [builder.build-now]}\n", i)
		users = append(users, fmt.Sprintf("person.p%d", i))
	}
	inv.Close()

	var mu sync.Mutex
	printed := map[string][]string{} // user → every password printed for it
	var wg sync.WaitGroup
	runs := [][]string{{"--missing"}, {"--missing"}}
	for _, u := range users {
		runs = append(runs, []string{u})
	}
	for _, args := range runs {
		wg.Go(func() {
			code, out, errs := meshc(t, append([]string{"mint", "--dir", dir}, args...)...)
			if code != 0 {
				t.Errorf("mint %v: %d %s", args, code, errs)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if user, pw, ok := strings.Cut(line, " "); ok {
					printed[user] = append(printed[user], pw)
				}
			}
		})
	}
	wg.Wait()

	hashes := recorded(t, dir)
	for u, pws := range printed {
		// A user both --missing and a named mint minted is minted twice, one after the other:
		// the second rotates the first out, as minting again means. The recorded hash must be the
		// last one printed, so it matches one password somebody saw.
		ok := false
		for _, pw := range pws {
			ok = ok || bcrypt.CompareHashAndPassword([]byte(hashes[u]), []byte(pw)) == nil
		}
		if !ok {
			t.Errorf("%s: the recorded hash matches none of the %d password(s) printed", u, len(pws))
		}
	}
	for _, u := range users {
		if len(printed[u]) == 0 {
			t.Errorf("%s: never printed", u)
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// `meshc mint … > /dev/full`: the password cannot be printed, so its hash is not recorded, and
// the exit status says so. Before, mint exited 0 with the hash recorded and the password lost.
func TestAPasswordThatCannotBePrintedIsNotRecorded(t *testing.T) {
	t.Parallel()
	dir := copyCatalogue(t, "../../examples/mesh", false)
	path := filepath.Join(dir, catalogue.CredentialsFile)
	before, _ := os.ReadFile(path)
	var errs strings.Builder
	code := run([]string{"mint", "--dir", dir, "mesh-controller"}, failingWriter{}, &errs)
	if code != exitCantRun || !strings.Contains(errs.String(), "nothing was recorded") {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Errorf("credentials.yaml changed although the password was never printed")
	}
}

// A credentials.yaml that cannot be recorded into is found before any password is printed: it is
// a finding of the catalogue (exit 1), and EditCredentials refuses it too (catalogue's tests).
func TestMintRefusesACredentialsFileItCannotRewrite(t *testing.T) {
	t.Parallel()
	dir := copyCatalogue(t, "../../examples/mesh", false)
	path := filepath.Join(dir, catalogue.CredentialsFile)
	h := recorded(t, dir)["mesh-controller"]
	data := "mesh-controller: &h \"" + h + "\"\nenrol.laptop: *h\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := meshc(t, "mint", "--dir", dir, "mesh-controller")
	if code != exitFailed || out != "" || !strings.Contains(errs, "anchor") {
		t.Fatalf("exit %d, stdout %q: %s", code, out, errs)
	}
	if after, _ := os.ReadFile(path); string(after) != data {
		t.Errorf("credentials.yaml changed:\n%s", after)
	}
}

// afterWrite is stdout that runs a function once the first write has landed.
type afterWrite struct {
	b    strings.Builder // a field, not embedded: its WriteString would bypass Write
	then func()
}

func (a *afterWrite) String() string { return a.b.String() }

func (a *afterWrite) Write(p []byte) (int, error) {
	n, err := a.b.Write(p)
	if a.then != nil {
		a.then()
		a.then = nil
	}
	return n, err
}

// Printed, then not recorded (the catalogue's directory vanished in between): mint says the
// printed passwords will not work, and fails, rather than exit 0 over passwords nobody can use.
func TestARecordingThatFailsAfterPrintingSaysSo(t *testing.T) {
	t.Parallel()
	dir := copyCatalogue(t, "../../examples/mesh", false)
	out := &afterWrite{then: func() {
		os.RemoveAll(dir)
		os.WriteFile(dir, []byte("not a directory any more"), 0o600)
	}}
	var errs strings.Builder
	code := run([]string{"mint", "--dir", dir, "mesh-controller"}, out, &errs)
	if code != exitCantRun || !strings.HasPrefix(out.String(), "mesh-controller ") ||
		!strings.Contains(errs.String(), "the passwords printed above were NOT recorded and will not work") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errs.String())
	}
}
