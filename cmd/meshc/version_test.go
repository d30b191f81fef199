package main

import (
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
