package main

import (
	"flag"
	"fmt"
	"io"
	"runtime/debug"
)

func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: meshc version\n\nPrints meshc's version: the module version it was built from, or (devel) for a build\nfrom a working tree.")
	}
	rest, exit, done := parseArgs(fs, args, stdout, stderr)
	if done {
		return exit
	}
	if len(rest) > 0 {
		return tooMany(fs, stderr, rest)
	}
	version := "(devel)"
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		version = info.Main.Version
	}
	fmt.Fprintln(stdout, "meshc", version)
	return exitOK
}
