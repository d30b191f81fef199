// Package buildinfo reads what Go recorded in the binary about the build: meshc's version, for
// `meshc version` and for the tool named in a SARIF log alike.
//
// Go records the module version for `go install …@v1.2.3` and the commit for a build in a git
// checkout. A build that has neither — from a source tarball, in a container without .git, or
// with -buildvcs=false — is told them with -ldflags (README: Install):
//
//	go build -ldflags "-X github.com/meshc-dev/meshc/internal/buildinfo.version=v1.2.3 \
//	  -X github.com/meshc-dev/meshc/internal/buildinfo.commit=$(git rev-parse HEAD)" ./cmd/meshc
package buildinfo

import "runtime/debug"

// version and commit are set with -ldflags -X where Go records neither; they win over what Go
// recorded, as the builder said them on purpose.
var version, commit string

// Version is the module version meshc was installed at (go install …@v1.2.3), the one given
// with -ldflags, or "(devel)" for a build from a working tree.
func Version() string {
	info, _ := debug.ReadBuildInfo()
	return Of(info)
}

// Of is the version in info, unless -ldflags gave one; "(devel)" when there is none.
func Of(info *debug.BuildInfo) string {
	switch {
	case version != "":
		return version
	case info == nil || info.Main.Version == "":
		return "(devel)"
	}
	return info.Main.Version
}

// Commit is the commit -ldflags gave, "" when none.
func Commit() string { return commit }
