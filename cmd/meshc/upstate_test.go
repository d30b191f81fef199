package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/internal/testwait"
)

// A second meshc up on a state directory in use is refused, naming the first's PID, and does
// not touch the first's store; once the first stops, the directory is free again. Before, the
// two shared one JetStream store and lost acknowledged messages.
func TestASecondUpOnOneStateDirectoryIsRefused(t *testing.T) {
	t.Parallel()
	dir := cataloguetest.Extract(t, "testdata/up.txtar")
	state := filepath.Join(t.TempDir(), "state")
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		done <- runUpUntil(ctx, &invocation{stdout: &stdout, stderr: &stderr}, []string{dir, "--state", state})
	}()
	testwait.For(t, "the first up", 20*time.Second, func() bool { return strings.Contains(stderr.String(), "watching") })

	code, out, errs := meshc(t, "up", dir, "--once", "--state", state)
	if want := fmt.Sprintf("another meshc up (PID %d) is using the state directory", os.Getpid()); code != exitCantRun || out != "" || !strings.Contains(errs, want) {
		t.Errorf("second up: exit %d, stdout %q, stderr %q; want exit 2 and %q", code, out, errs, want)
	}

	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("the first up exited %d: %s", code, stderr.String())
	}
	if code, _, errs := meshc(t, "up", dir, "--once", "--state", state); code != 0 {
		t.Fatalf("after the first stopped, up --once exited %d: %s", code, errs)
	}
}

// The default state directory, DIR/.meshc, holds plaintext development passwords: `git add -A`
// in the user's repository must pick up nothing from it.
func TestNothingInTheStateDirectoryIsCommitted(t *testing.T) {
	t.Parallel()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	dir := cataloguetest.Extract(t, "testdata/up.txtar")
	gitIn := func(args ...string) string {
		cmd := exec.Command(git, append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	gitIn("init", "-q")
	if code, _, errs := meshc(t, "up", dir, "--once"); code != 0 {
		t.Fatalf("up --once exited %d: %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, ".meshc", "dev-credentials.yaml")); err != nil {
		t.Fatalf("the state directory is not where this test looks: %v", err)
	}
	gitIn("add", "-A")
	if staged := gitIn("diff", "--cached", "--name-only"); strings.Contains(staged, ".meshc") {
		t.Errorf("git add -A staged the state directory:\n%s", staged)
	}
}

// Ctrl-C is honoured between the steps of --once: cancelled as soon as the plan is applied, up
// stops before proving the sample flow; cancelled before it starts, it applies nothing. Before,
// --once ran to its end whatever was pressed.
func TestCtrlCStopsUpOnce(t *testing.T) {
	t.Parallel()
	dir := cataloguetest.Extract(t, "testdata/up.txtar")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr syncBuffer
	if code := runUpUntil(ctx, &invocation{stdout: &stdout, stderr: &stderr}, []string{dir, "--once", "--state", t.TempDir()}); code != exitCantRun || strings.Contains(stdout.String(), "applied") {
		t.Errorf("interrupted before start: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	out := &cancelOn{word: "applied:", cancel: cancel}
	var errs syncBuffer
	code := runUpUntil(ctx, &invocation{stdout: out, stderr: &errs}, []string{dir, "--once", "--state", t.TempDir()})
	if code != exitCantRun || !strings.Contains(errs.String(), "interrupted") || strings.Contains(out.String(), "sample flow") {
		t.Errorf("interrupted after the apply: exit %d, stdout %q, stderr %q", code, out.String(), errs.String())
	}
}

// cancelOn is stdout that presses Ctrl-C as soon as a word is written to it.
type cancelOn struct {
	syncBuffer
	word   string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	n, err := c.syncBuffer.Write(p)
	if strings.Contains(c.String(), c.word) {
		c.cancel()
	}
	return n, err
}

// When the embedded server cannot start, up says the system's own reason, not only that the
// server "did not become ready in 10 s".
func TestUpSaysWhyTheServerCannotStart(t *testing.T) {
	t.Parallel()
	dir := cataloguetest.Extract(t, "testdata/up.txtar")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	code, _, errs := meshc(t, "up", dir, "--once", "--state", t.TempDir(), "--port", fmt.Sprint(port))
	if code != exitCantRun || !strings.Contains(errs, "address already in use") {
		t.Errorf("port in use: exit %d: %s", code, errs)
	}

	state := t.TempDir()
	if err := os.WriteFile(filepath.Join(state, "jetstream"), []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs = meshc(t, "up", dir, "--once", "--state", state)
	if code != exitCantRun || !strings.Contains(errs, "JetStream store cannot be created") || !strings.Contains(errs, "not a directory") {
		t.Errorf("store not a directory: exit %d: %s", code, errs)
	}
}
