package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/verify"
)

// meshc verify examples/mesh proves the example's golden files as committed, says what each class
// tried, and exits 0; the same golden files with one grant added by hand exit 1, naming the
// principal, the subject and the line of accounts.conf that let it through — in text, JSON and
// SARIF alike.
func TestVerifyTheExampleAndAHandWidenedCopy(t *testing.T) {
	code, out, errs := meshc(t, "verify", "../../examples/mesh")
	if code != exitOK {
		t.Fatalf("meshc verify examples/mesh exited %d:\n%s%s", code, out, errs)
	}
	for _, c := range verify.Classes {
		if !strings.Contains(out, "  "+c.ID+" ") || strings.Contains(out, c.ID+" not tried") {
			t.Errorf("the output does not say what class %s tried:\n%s", c.ID, out)
		}
	}
	if !strings.Contains(out, "no failures") {
		t.Errorf("the output does not say it found nothing:\n%s", out)
	}
	if testing.Short() {
		t.Skip("-short: the example once")
	}

	dir := copyCatalogue(t, "../../examples/mesh", false)
	if err := os.CopyFS(filepath.Join(dir, catalogue.GoldenDir), os.DirFS("../../examples/mesh/golden")); err != nil {
		t.Fatal(err)
	}
	accounts := filepath.Join(dir, catalogue.GoldenDir, emit.AccountsFile)
	data, err := os.ReadFile(accounts)
	if err != nil {
		t.Fatal(err)
	}
	// bob may call builder's build-now and audit-log's search; by hand, registry's prune too.
	at := strings.Index(string(data), `user: "person.bob"`)
	widened := string(data[:at]) + strings.Replace(string(data[at:]), `"mesh.mod.builder.tool.build-now"`, `"mesh.mod.builder.tool.build-now"
              "mesh.mod.registry.tool.prune"`, 1)
	if err := os.WriteFile(accounts, []byte(widened), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = meshc(t, "verify", dir, "--format", "json")
	if code != exitFailed {
		t.Fatalf("meshc verify on a hand-widened accounts.conf exited %d, want 1:\n%s%s", code, out, errs)
	}
	var r verify.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("the JSON: %v\n%s", err, out)
	}
	found := false
	for _, f := range r.Failures {
		if f.Class == verify.Refusal.ID && f.Principal == "person.bob" && f.Subject == "mesh.mod.registry.tool.prune" &&
			f.Grant == "mesh.mod.registry.tool.prune" && f.Line > 0 && strings.HasSuffix(f.File, "accounts.conf") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no refusal failure names person.bob, its subject, grant and line: %s", out)
	}
	_, sarif, _ := meshc(t, "verify", dir, "--format", "sarif")
	for _, want := range []string{`"ruleId": "refusal"`, `"principal": "person.bob"`, `"startLine"`} {
		if !strings.Contains(sarif, want) {
			t.Errorf("the SARIF holds no %s:\n%s", want, sarif)
		}
	}
}

// A flag verify would ignore is refused: it connects as each principal, never as one user (it has
// no --user), and --credentials means nothing without a live bus.
func TestVerifyRefusesFlagsItWouldIgnore(t *testing.T) {
	for _, args := range [][]string{
		{"verify", "--user", "mesh-controller", "../../examples/mesh"},
		{"verify", "--credentials", t.TempDir(), "../../examples/mesh"},
		{"verify", "--credentials", t.TempDir(), "-o", t.TempDir(), "--server", "nats://127.0.0.1:1", "../../examples/mesh"},
		{"verify", "--server", "nats://127.0.0.1:1", "../../examples/mesh"},
		{"verify", "--sample", "0", "../../examples/mesh"},
	} {
		if code, _, errs := meshc(t, args...); code != exitCantRun || errs == "" {
			t.Errorf("meshc %s exited %d (%q), want 2 and why", strings.Join(args, " "), code, errs)
		}
	}
}
