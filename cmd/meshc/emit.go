package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/golden"
	"github.com/meshc-dev/meshc/internal/output"
	"github.com/meshc-dev/meshc/lint"
)

var emitCommand = command{
	name:    "emit",
	summary: "compile the catalogue and write (or --check) its golden files",
	usage: `Usage: meshc emit [DIR] [-o OUT] [--check] [--allow-missing]
`,
	help: `Compiles the catalogue in DIR (default: the current directory) and writes its golden files
into OUT (default: DIR/golden):

  accounts.conf    the bus's users, bcrypt hashes and permissions: the accounts block the
                   server's own configuration includes by a relative path
  claims.json      instead of accounts.conf with auth: operator: every account's JWT claims
                   as meshc apply will sign and push them
  plan.json        every stream and consumer, in the JetStream API's own field names
  permissions.md   who may publish and subscribe what, for review

The same catalogue always gives the same bytes, and a file whose bytes did not change is not
rewritten. A catalogue with lint errors is not compiled: run 'meshc lint' for the fixes.

`,
	exits: `Exit status:
  0  written, or (--check) current
  1  the catalogue has errors, a user has no hash, or (--check) the golden files are stale
  2  meshc could not run: a bad flag, DIR is not a catalogue, a file cannot be written
`,
	run: runEmit,
}

func runEmit(inv *invocation, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	fs := flag.NewFlagSet("emit", flag.ContinueOnError)
	out := fs.String("o", "", "where the golden files go: `OUT` (default DIR/golden)")
	check := fs.Bool("check", false, "write nothing; exit 1 with a unified diff when the committed files are stale, 0 when they are current (for CI)")
	allowMissing := fs.Bool("allow-missing", false, "leave out users with no recorded hash in credentials.yaml, each named in a comment with the command that mints it, instead of refusing")
	rest, exit, done := parseArgs(fs, args, inv)
	if done {
		return exit
	}
	dir, exit, ok := catalogueArg(fs, rest, stderr)
	if !ok {
		return exit
	}
	if *out == "" {
		*out = filepath.Join(dir, catalogue.GoldenDir)
	}

	// Bare: nothing emit renders reads the grants' explanations, and leaving them out is a third
	// of the compiler's allocation (compiler.CompileBare).
	_, plan, code := compileLoadedWith(lint.CheckBare, "emit", dir, stderr)
	if plan == nil {
		return code
	}
	files, retired, err := render(plan, emit.AccountsOptions{AllowMissing: *allowMissing})
	if err != nil {
		fmt.Fprintf(stderr, "meshc emit: %v\n", err)
		return exitFailed
	}

	if *check {
		stale, err := golden.Check(*out, files, retired)
		if err != nil {
			fmt.Fprintf(stderr, "meshc emit: %v\n", err)
			return exitCantRun
		}
		for _, s := range stale {
			io.WriteString(stdout, s.Diff)
		}
		if len(stale) > 0 {
			fmt.Fprintf(stderr, "meshc emit: %d golden file(s) in %s are stale; run `meshc emit %s -o %s` and commit the result\n",
				len(stale), *out, dir, *out)
			return exitFailed
		}
		return exitOK
	}
	wrote, err := golden.Write(*out, files, retired)
	if err != nil {
		fmt.Fprintf(stderr, "meshc emit: %v\n", err)
		return exitCantRun
	}
	if len(wrote) == 0 {
		fmt.Fprintf(stderr, "meshc emit: %s is current\n", *out)
	}
	for _, name := range wrote {
		if name == retired {
			fmt.Fprintf(stderr, "meshc emit: removed %s, which the mesh's auth no longer writes\n", filepath.Join(*out, name))
			continue
		}
		fmt.Fprintf(stderr, "meshc emit: wrote %s\n", filepath.Join(*out, name))
	}
	return exitOK
}

// compileCatalogue loads and lints a catalogue and compiles it. A catalogue with lint errors is
// not compiled: its findings go to stderr and the plan is nil, with the exit code to return.
//
// tolerate names rules whose errors the command is the fix for, or does not depend on: mint
// replaces credentials that do not fit the mesh's auth, and up runs on development passwords.
func compileCatalogue(cmd, dir string, stderr io.Writer, tolerate ...string) (*compiler.Plan, int) {
	_, plan, exit := compileLoaded(cmd, dir, stderr, tolerate...)
	return plan, exit
}

// compileLoaded is compileCatalogue that also returns the catalogue it loaded.
func compileLoaded(cmd, dir string, stderr io.Writer, tolerate ...string) (*catalogue.Catalogue, *compiler.Plan, int) {
	return compileLoadedWith(lint.Check, cmd, dir, stderr, tolerate...)
}

// compileLoadedWith is compileLoaded linting and compiling with check: lint.Check, or
// lint.CheckBare for a command that never explains a permission.
func compileLoadedWith(check func(*catalogue.Catalogue, catalogue.Findings) (catalogue.Findings, *compiler.Plan), cmd, dir string, stderr io.Writer, tolerate ...string) (*catalogue.Catalogue, *compiler.Plan, int) {
	c, loaded, ok := loadCatalogue(cmd, dir, stderr)
	if !ok {
		return nil, nil, exitCantRun
	}
	findings, plan := check(c, loaded)
	errs := catalogue.Findings{}
	for _, f := range findings {
		if f.Severity == catalogue.Error && !slices.Contains(tolerate, f.Rule) {
			errs = append(errs, f)
		}
	}
	if len(errs) > 0 {
		lint.Write(stderr, output.Text, errs.Under(dir))
		fmt.Fprintf(stderr, "meshc %s: the catalogue has errors, so nothing was compiled; fix them (meshc lint %s)\n", cmd, dir)
		return nil, nil, exitFailed
	}
	return c, plan, exitOK
}

// loadCatalogue loads DIR, or says why it could not (exit 2): not a catalogue at all is the one
// thing that is not a finding (docs/commands.md, "Exit status").
func loadCatalogue(cmd, dir string, stderr io.Writer) (*catalogue.Catalogue, catalogue.Findings, bool) {
	c, loaded, err := catalogue.Load(dir)
	if err != nil {
		var nac *catalogue.NotACatalogue
		if errors.As(err, &nac) {
			fmt.Fprintf(stderr, "meshc %s: %v\n", cmd, nac)
		} else {
			fmt.Fprintf(stderr, "meshc %s: loading %s: %v\n", cmd, dir, err)
		}
		return nil, nil, false
	}
	return c, loaded, true
}

// render turns a plan into the golden files.
func render(plan *compiler.Plan, opts emit.AccountsOptions) ([]golden.File, string, error) {
	r, err := emit.Render(plan, opts)
	if err != nil {
		return nil, "", err
	}
	var files []golden.File
	for _, f := range r.Files {
		files = append(files, golden.File{Name: f.Name, Render: f.WriteTo})
	}
	return files, r.Retired, nil
}
