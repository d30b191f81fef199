package catalogue_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"meshc/catalogue"
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
