package catalogue_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/meshc-dev/meshc/catalogue"
)

func TestMintedPasswordsVerifyAgainstTheirHash(t *testing.T) {
	pw, hash, err := catalogue.MintPassword()
	if err != nil {
		t.Fatal(err)
	}
	if len(pw) < 40 || len(pw) > 72 {
		t.Errorf("password of %d bytes: want 256 bits, within bcrypt's 72-byte limit", len(pw))
	}
	if cost, _ := bcrypt.Cost([]byte(hash)); cost != catalogue.MintCost {
		t.Errorf("cost %d, want %d", cost, catalogue.MintCost)
	}
	if bcrypt.CompareHashAndPassword([]byte(hash), []byte(pw)) != nil {
		t.Error("the hash does not verify the password it was made from")
	}
	if bcrypt.CompareHashAndPassword([]byte(hash), []byte(pw+"x")) == nil {
		t.Error("the hash verifies a different password")
	}
	pw2, _, _ := catalogue.MintPassword()
	if pw2 == pw {
		t.Error("two mints gave one password")
	}
}

// Recording rotates one user's hash and leaves every other entry, and the comments, as they were.
func TestRecordHashesRotatesOneAndLeavesTheRest(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, catalogue.CredentialsFile)
	if err := catalogue.RecordHashes(dir, map[string]string{"node.b": "$2a$06$b", "mesh-controller": "$2a$06$c"}); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("credentials.yaml mode = %v, %v; want 0600", info.Mode().Perm(), err)
	}
	// A hand-written comment and an entry the next mint does not name.
	data, _ := os.ReadFile(path)
	edited := strings.Replace(string(data), "node.b:", "# the build machine\nnode.b:", 1)
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := catalogue.RecordHashes(dir, map[string]string{"node.a": "$2a$06$a", "mesh-controller": "$2a$06$rotated"}); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(path)
	got := string(data)
	for _, want := range []string{"# the build machine\nnode.b: \"$2a$06$b\"", `mesh-controller: "$2a$06$rotated"`, `node.a: "$2a$06$a"`} {
		if !strings.Contains(got, want) {
			t.Errorf("credentials.yaml lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "$2a$06$c") {
		t.Errorf("minting again did not rotate:\n%s", got)
	}
	// New users go in name order among the others.
	if strings.Index(got, "mesh-controller") > strings.Index(got, "node.a") || strings.Index(got, "node.a") > strings.Index(got, "node.b") {
		t.Errorf("entries out of order:\n%s", got)
	}
	// And the loader reads back exactly what was recorded.
	if err := os.WriteFile(filepath.Join(dir, "mesh.yaml"), []byte("name: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "modules"), 0o755)
	c, findings, err := catalogue.Load(dir)
	if err != nil || len(findings) != 0 {
		t.Fatalf("%v %v", findings, err)
	}
	if h, _ := c.Credentials.Hash("node.a"); h != "$2a$06$a" {
		t.Errorf("read back %q", h)
	}
}

// Recording edits the file in place: blank lines, a leading `---`, comments, quoting and a
// line comment stay byte for byte; a symlink stays a symlink to the file it named, and the
// file keeps its mode.
func TestRecordHashesKeepsTheFileAsWritten(t *testing.T) {
	dir := t.TempDir()
	shared := t.TempDir()
	before := "# Hashes of the novox bus.\n---\n\n# the controller\nmesh-controller: '$2a$06$old' # rotated in May\n\nnode.b: $2a$06$b\n\n# people\nperson.zoe:\n"
	target := filepath.Join(shared, "creds.yaml")
	if err := os.WriteFile(target, []byte(before), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, catalogue.CredentialsFile)); err != nil {
		t.Fatal(err)
	}
	if err := catalogue.RecordHashes(dir, map[string]string{"mesh-controller": "$2a$06$new", "node.a": "$2a$06$a", "person.zoe": "$2a$06$z", "zz.last": "$2a$06$l"}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(target)
	want := "# Hashes of the novox bus.\n---\n\n# the controller\nmesh-controller: \"$2a$06$new\" # rotated in May\n\nnode.a: \"$2a$06$a\"\nnode.b: $2a$06$b\n\n# people\nperson.zoe: \"$2a$06$z\"\nzz.last: \"$2a$06$l\"\n"
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if info, err := os.Lstat(filepath.Join(dir, catalogue.CredentialsFile)); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Errorf("credentials.yaml is no longer a symlink: %v", err)
	}
	if info, _ := os.Stat(target); info.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640 kept", info.Mode().Perm())
	}
}

// What cannot be rewritten faithfully is refused, and the file left exactly as it was.
func TestRecordHashesRefusesWhatItCannotRewrite(t *testing.T) {
	for name, data := range map[string]string{
		"alias":     "mesh-controller: &h \"$2a$06$a\"\nnode.a: *h\n",
		"flow":      "{mesh-controller: \"$2a$06$a\"}\n",
		"multiline": "mesh-controller: >\n  $2a$06$a\n",
		"two-docs":  "a: \"x\"\n---\nb: \"y\"\n",
		"not-yaml":  "a: [\n",
		"list":      "- a\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, catalogue.CredentialsFile)
			if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			err := catalogue.RecordHashes(dir, map[string]string{"node.b": "$2a$06$b"})
			if err == nil || !strings.Contains(err.Error(), "no hash was recorded") && !strings.Contains(err.Error(), "fix it first") {
				t.Fatalf("got %v; want a refusal", err)
			}
			if got, _ := os.ReadFile(path); string(got) != data {
				t.Errorf("the file changed:\n%s", got)
			}
		})
	}
}

// Recordings at once, each of its own user, all land: each reads, merges and writes under the
// lock, so none writes back a file from before another's write.
func TestConcurrentRecordingsLoseNothing(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			if err := catalogue.RecordHashes(dir, map[string]string{fmt.Sprintf("person.p%d", i): fmt.Sprintf("$2a$06$h%d", i)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	data, _ := os.ReadFile(filepath.Join(dir, catalogue.CredentialsFile))
	for i := range 50 {
		if !strings.Contains(string(data), fmt.Sprintf("person.p%d: \"$2a$06$h%d\"", i, i)) {
			t.Errorf("person.p%d was lost", i)
		}
	}
}

// A file written on Windows keeps its line endings, new lines included.
func TestRecordHashesKeepsCRLF(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, catalogue.CredentialsFile)
	if err := os.WriteFile(path, []byte("# hashes\r\nnode.b: \"$2a$06$b\"\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := catalogue.RecordHashes(dir, map[string]string{"node.a": "$2a$06$a", "node.b": "$2a$06$B"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "# hashes\r\nnode.a: \"$2a$06$a\"\r\nnode.b: \"$2a$06$B\"\r\n" {
		t.Errorf("got %q", got)
	}
}

// Removing a user's record deletes its line and nothing else: comments, other entries and the
// file's line endings stay as they were; a user without a record is not an error.
func TestRemoveDeletesOneLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, catalogue.CredentialsFile)
	before := "# recorded keys\r\nmesh-controller: \"AAA\"   # the controller\r\n\r\nperson.bob: BBB\r\nnode.anchor: \"CCC\"\r\n"
	os.WriteFile(path, []byte(before), 0o600)
	e, err := catalogue.EditCredentials(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	removed, err := e.Remove([]string{"person.bob", "person.ghost"})
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != "person.bob" {
		t.Errorf("removed %v", removed)
	}
	want := "# recorded keys\r\nmesh-controller: \"AAA\"   # the controller\r\n\r\nnode.anchor: \"CCC\"\r\n"
	if got, _ := os.ReadFile(path); string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if e.Recorded("person.bob") || !e.Recorded("node.anchor") {
		t.Error("the edit's view of the file is not the file")
	}
	if removed, err := e.Remove([]string{"person.bob"}); err != nil || removed != nil {
		t.Errorf("removing again: %v %v", removed, err)
	}
}

// MintEach mints on every core, and each credential it returns is the pair one mint made: a
// password with its own hash, in order, none twice; a failed mint fails it all.
func TestMintEachPairsEverySecretWithItsRecord(t *testing.T) {
	minted, err := catalogue.MintEach(40, catalogue.MintPassword)
	if err != nil {
		t.Fatal(err)
	}
	if len(minted) != 40 {
		t.Fatalf("minted %d of 40", len(minted))
	}
	seen := map[string]bool{}
	for i, m := range minted {
		if err := bcrypt.CompareHashAndPassword([]byte(m.Record), []byte(m.Secret)); err != nil {
			t.Fatalf("credential %d: its hash is not its password's: %v", i, err)
		}
		if seen[m.Secret] {
			t.Fatalf("credential %d repeats a password", i)
		}
		seen[m.Secret] = true
	}
	calls := 0
	var mu sync.Mutex
	failing := func() (string, string, error) {
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls == 7 {
			return "", "", errors.New("no entropy")
		}
		return "s", "r", nil
	}
	if _, err := catalogue.MintEach(20, failing); err == nil || err.Error() != "no entropy" {
		t.Fatalf("a failed mint was not said: %v", err)
	}
}
