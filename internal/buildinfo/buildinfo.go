// Package buildinfo reads what Go recorded in the binary about the build: meshc's version, for
// `meshc version` and for the tool named in a SARIF log alike.
package buildinfo

import "runtime/debug"

// Version is the module version meshc was installed at (go install …@v1.2.3), or "(devel)"
// for a build from a working tree.
func Version() string {
	info, _ := debug.ReadBuildInfo()
	return Of(info)
}

// Of is the version in info; "(devel)" when there is none.
func Of(info *debug.BuildInfo) string {
	if info == nil || info.Main.Version == "" {
		return "(devel)"
	}
	return info.Main.Version
}
