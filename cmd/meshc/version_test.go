package main

import (
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

func TestVersionSaysWhatABugReportNeeds(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}}
	got := versionText(info)
	for _, want := range []string{"meshc v0.4.0 (commit abc123, modified)\n", "go1.26.8 ", "nats-server " + server.VERSION + " (embedded)"} {
		if !strings.Contains(got, want) {
			t.Errorf("version text lacks %q:\n%s", want, got)
		}
	}
	clean := versionText(&debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "false"}}})
	if !strings.HasPrefix(clean, "meshc (devel) (commit abc123)\n") {
		t.Errorf("a clean tree's version: %q", clean)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errs := meshc(t, args...)
		if code != 0 || !strings.HasPrefix(out, "meshc ") || !strings.Contains(out, "nats-server ") {
			t.Errorf("meshc %s: %d %q %q", args[0], code, out, errs)
		}
	}
}

// A binary built without version control information (-buildvcs=false, a tarball, a container
// without .git) says how to give it, and given it with -ldflags as the README's install says,
// prints it: built for real, as a user builds it.
func TestVersionOfABuildWithoutVCS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds meshc")
	}
	bin := filepath.Join(t.TempDir(), "meshc")
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	const pkg = "github.com/meshc-dev/meshc/internal/buildinfo"
	run("go", "build", "-buildvcs=false", "-ldflags", "-X "+pkg+".version=v9.9.9 -X "+pkg+".commit=0123abc", "-o", bin, ".")
	if out := run(bin, "--version"); !strings.HasPrefix(out, "meshc v9.9.9 (commit 0123abc)\n") {
		t.Errorf("built with -ldflags: %q", out)
	}
	run("go", "build", "-buildvcs=false", "-o", bin, ".")
	if out := run(bin, "--version"); !strings.HasPrefix(out, "meshc (devel) (commit unknown: built without version control information; build in a git checkout, or give it with -ldflags -X "+pkg+".commit=SHA)") {
		t.Errorf("built without VCS information: %q", out)
	}
}
