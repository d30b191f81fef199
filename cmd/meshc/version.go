package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/meshc-dev/meshc/internal/buildinfo"
)

var versionCommand = command{
	name:    "version",
	summary: "print meshc's version, commit, Go and the embedded nats-server",
	usage: `Usage: meshc version   (or meshc --version)
`,
	help: `Prints meshc's version — the module version it was installed at, or (devel) for a build from a
working tree — the commit it was built from and whether the tree had changes ("modified"), the
Go toolchain, and the nats-server meshc embeds (meshc up runs it). All of it is read from the
build information Go records in the binary; a build without it (-buildvcs=false, no .git) is
given the version and commit with -ldflags -X github.com/meshc-dev/meshc/internal/buildinfo.version=…
and ….commit=… (README: Install).
`,
	run: runVersion,
}

func runVersion(inv *invocation, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	rest, exit, done := parseArgs(fs, args, inv)
	if done {
		return exit
	}
	if len(rest) > 0 {
		return tooMany(fs, stderr, rest)
	}
	info, _ := debug.ReadBuildInfo()
	io.WriteString(stdout, versionText(info))
	return exitOK
}

// versionText renders the build information: what a bug report needs in three lines.
func versionText(info *debug.BuildInfo) string {
	version, commit, modified, goVersion := buildinfo.Of(info), "", false, runtime.Version()
	if info != nil {
		goVersion = info.GoVersion
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if c := buildinfo.Commit(); c != "" {
		commit, modified = c, false
	}
	line := "meshc " + version
	switch {
	case commit != "" && modified:
		line += fmt.Sprintf(" (commit %s, modified)", commit)
	case commit != "":
		line += fmt.Sprintf(" (commit %s)", commit)
	default:
		line += " (commit unknown: built without version control information; build in a git checkout, or give it with -ldflags -X github.com/meshc-dev/meshc/internal/buildinfo.commit=SHA)"
	}
	return fmt.Sprintf("%s\n%s %s/%s\nnats-server %s (embedded)\n", line, goVersion, runtime.GOOS, runtime.GOARCH, server.VERSION)
}
