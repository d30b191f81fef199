package main

import (
	"debug/buildinfo"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

func TestVersionSaysWhatABugReportNeeds(t *testing.T) {
	t.Parallel()
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
// prints it: built for real, as a user builds it, once (a build is most of the test's time). What
// the same build would print without -ldflags is the version text of the build information Go
// recorded in it, read back from the file: -ldflags sets buildinfo's variables, which this test
// binary leaves empty, and nothing else the text reads.
func TestVersionOfABuildWithoutVCS(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds meshc")
	}
	bin := filepath.Join(t.TempDir(), "meshc")
	const pkg = "github.com/meshc-dev/meshc/internal/buildinfo"
	build := exec.Command("go", "build", "-buildvcs=false", "-ldflags", "-X "+pkg+".version=v9.9.9 -X "+pkg+".commit=0123abc", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(build.Args, " "), err, out)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "meshc v9.9.9 (commit 0123abc)\n") {
		t.Errorf("built with -ldflags: %q (%v)", out, err)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if got := versionText(info); !strings.HasPrefix(got, "meshc (devel) (commit unknown: built without version control information; build in a git checkout, or give it with -ldflags -X "+pkg+".commit=SHA)") {
		t.Errorf("built without VCS information: %q", got)
	}
}
