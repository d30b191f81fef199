package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/catalogue.md's mesh.yaml example approves what it shows: its retention approval, given a
// base whose EVENTS kept what the approval's `from` says, approves the change to what the example
// sets (info, "approved in mesh.yaml"), and no approval is left approving nothing. It once had an
// approval without from and to, which approves nothing: a reader copying it was told so by
// approval-unmatched.
func TestTheCatalogueDocsApprovalApprovesItsBreak(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../docs/catalogue.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), "## mesh.yaml\n\n```yaml\n")
	if !ok {
		t.Fatal("docs/catalogue.md has no mesh.yaml example")
	}
	example, _, _ := strings.Cut(after, "```")
	if !strings.Contains(example, "approve:") || !strings.Contains(example, "max-age: 720h") {
		t.Fatalf("the example no longer approves a retention change of EVENTS' max-age 720h:\n%s", example)
	}
	// The base: the example as it stood before the change its approval names.
	base, head := t.TempDir(), t.TempDir()
	write := func(dir, mesh string) {
		os.MkdirAll(filepath.Join(dir, "modules"), 0o755)
		os.WriteFile(filepath.Join(dir, "mesh.yaml"), []byte(mesh), 0o644)
		// The modules the example's controller follows and its roles are held by, so the
		// catalogue's own rules stay quiet.
		os.WriteFile(filepath.Join(dir, "modules", "catalog.yaml"), []byte("module: catalog\nemits: [upgraded]\n"), 0o644)
	}
	write(base, strings.Replace(example, "max-age: 720h", "max-age: 2160h", 1))
	write(head, example)
	code, out, errs := meshc(t, "lint", head, "--against", base)
	if strings.Contains(out, "approval-unmatched") {
		t.Errorf("an approval of the example approves nothing:\n%s%s", out, errs)
	}
	if !strings.Contains(out, "info: retention: stream EVENTS keeps less: max-age 2160h → 720h") || !strings.Contains(out, "— approved in ") {
		t.Errorf("the example's retention change is not approved by its approval (exit %d):\n%s%s", code, out, errs)
	}
}
