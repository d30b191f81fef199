package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
)

// The bash script, loaded into a real bash, completes commands, a command's flags (from the
// command itself: a flag added later completes too) and directories.
func TestBashCompletionCompletes(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash here")
	}
	code, script, errs := meshc(t, "completion", "bash")
	if code != 0 {
		t.Fatalf("completion bash: %d %s", code, errs)
	}
	path := filepath.Join(t.TempDir(), "meshc.bash")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	complete := func(words ...string) string {
		t.Helper()
		line := "source " + path + "; COMP_WORDS=(" + strings.Join(quoteAll(words), " ") + "); COMP_CWORD=" +
			strconv.Itoa(len(words)-1) + "; _meshc; echo \"${COMPREPLY[*]}\""
		out, err := exec.Command(bash, "-c", line).CombinedOutput()
		if err != nil {
			t.Fatalf("bash: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := complete("meshc", "pl"); got != "plan" {
		t.Errorf("meshc pl<TAB> = %q, want plan", got)
	}
	if got := complete("meshc", "apply", "--lock-t"); got != "--lock-timeout" {
		t.Errorf("meshc apply --lock-t<TAB> = %q", got)
	}
	if got := complete("meshc", "plan", "--inbox"); got != "--inbox-prefix" {
		t.Errorf("meshc plan --inbox<TAB> = %q", got)
	}
	if got := complete("meshc", "help", "vers"); got != "version" {
		t.Errorf("meshc help vers<TAB> = %q", got)
	}
	if got := complete("meshc", "verify", "--cred"); got != "--credentials" {
		t.Errorf("meshc verify --cred<TAB> = %q", got)
	}
	// Values, from the commands' own tables: a flag's formats, explain's rule ids, and the
	// catalogue's own modules and users, asked of meshc as the user types.
	if got := complete("meshc", "lint", "--format", ""); got != "text json sarif github" {
		t.Errorf("meshc lint --format <TAB> = %q", got)
	}
	if got := complete("meshc", "plan", "--format", "m"); got != "markdown" {
		t.Errorf("meshc plan --format m<TAB> = %q", got)
	}
	if got := complete("meshc", "graph", "--format", ""); got != "mermaid dot svg" {
		t.Errorf("meshc graph --format <TAB> = %q", got)
	}
	if got := complete("meshc", "explain", "seat-u"); got != "seat-unknown seat-use-nothing seat-unheld" {
		t.Errorf("meshc explain seat-u<TAB> = %q", got)
	}
	if got := complete("meshc", "explain", "approval"); got != "approval-unmatched" {
		t.Errorf("meshc explain approval<TAB> = %q", got)
	}
	dir := cataloguetest.Extract(t, "testdata/up.txtar")
	for _, flag := range []string{"--module", "--focus"} {
		if got := complete("meshc", "graph", dir, flag, ""); got != "builder catalog" {
			t.Errorf("meshc graph DIR %s <TAB> = %q", flag, got)
		}
	}
	if got := complete("meshc", "can", "--dir", dir, "mod.anchor.c"); got != "mod.anchor.catalog" {
		t.Errorf("meshc can --dir DIR mod.anchor.c<TAB> = %q", got)
	}
	if got := complete("meshc", "can", "--dir", dir, "mod.anchor.catalog", ""); got != "pub sub" {
		t.Errorf("meshc can --dir DIR USER <TAB> = %q", got)
	}
	if got := complete("meshc", "completion", "f"); got != "fish" {
		t.Errorf("meshc completion f<TAB> = %q", got)
	}
	for _, shell := range []string{"zsh", "fish"} {
		if code, out, errs := meshc(t, "completion", shell); code != 0 || !strings.Contains(out, "lock-timeout") {
			t.Errorf("completion %s: %d %s", shell, code, errs)
		}
	}
	if code, _, errs := meshc(t, "completion", "tcsh"); code != 2 || !strings.Contains(errs, `unknown shell "tcsh"`) {
		t.Errorf("completion tcsh: %d %s", code, errs)
	}
}

func quoteAll(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = "'" + w + "'"
	}
	return out
}
