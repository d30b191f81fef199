package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// module is this repository's module path: imports under it are meshc's own.
const module = "github.com/meshc-dev/meshc/"

// TestTheImportRule enforces the README's table of which package may import which: every import
// of every package, tests apart, must be one its row names; and no package's tests may import a
// package that imports it back (emit's proof once reached apply through a third package while
// apply's tests imported emit: a loop nobody could see from either end). The table is read from
// the README, so the rule a reader sees is the rule CI enforces.
func TestTheImportRule(t *testing.T) {
	t.Parallel()
	allowed := importTable(t)
	pkgs := meshcPackages(t)
	if len(pkgs) < 10 {
		t.Fatalf("found %d packages: the walk is broken", len(pkgs))
	}
	rowOf := func(pkg string) (string, bool) {
		if _, ok := allowed[pkg]; ok {
			return pkg, true
		}
		if strings.HasPrefix(pkg, "internal/") {
			return "internal/", true
		}
		return "", false
	}
	for pkg, imp := range pkgs {
		row, ok := rowOf(pkg)
		if !ok {
			t.Errorf("package %s has no row in the README's import table: add one saying what lives there and what it may import", pkg)
			continue
		}
		for _, dep := range imp.code {
			if !mayImport(allowed[row], dep) {
				t.Errorf("%s imports %s, which the README's table does not allow it (%s may import %s)", pkg, dep, row, strings.Join(allowed[row], ", "))
			}
		}
	}
	// One library a job: the second YAML library once came in with meshc up.
	for pkg, imp := range pkgs {
		for _, dep := range imp.other {
			if use, ok := insteadOf[dep]; ok {
				t.Errorf("%s imports %s: meshc uses %s for that", pkg, dep, use)
			}
		}
	}
	// A test importing a package that (through any number of others) imports the package under
	// test is a loop in the tests. A package's own helper for tests (catalogue/cataloguetest)
	// imports it by design, as net/http/httptest imports net/http.
	for pkg, imp := range pkgs {
		for _, dep := range imp.tests {
			if dep != pkg && dep != ownHelper(pkg) && reaches(pkgs, dep, pkg) {
				t.Errorf("%s's tests import %s, which imports %s: a loop through the tests", pkg, dep, pkg)
			}
		}
	}
}

// mayImport reports whether a row's list admits dep: a package named, its own helper packages
// (compiler's compiler/compilertest), or any ground-floor helper where the row names `internal/`.
func mayImport(row []string, dep string) bool {
	for _, a := range row {
		switch {
		case a == "everything but cmd/meshc":
			return dep != "cmd/meshc"
		case a == "internal/" && strings.HasPrefix(dep, "internal/"):
			return true
		case a == dep:
			return true
		}
	}
	return false
}

// reaches reports whether from imports to, directly or through others (code, not tests).
func reaches(pkgs map[string]imports, from, to string) bool {
	seen := map[string]bool{}
	var walk func(string) bool
	walk = func(p string) bool {
		if p == to {
			return true
		}
		if seen[p] {
			return false
		}
		seen[p] = true
		return slices.ContainsFunc(pkgs[p].code, walk)
	}
	return walk(from)
}

// importTable reads the README's import table: each row's packages (a row may name several) and
// what they may import.
func importTable(t *testing.T) map[string][]string {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), "<!-- import rule: read by TestTheImportRule -->")
	if !ok {
		t.Fatal("the README has no import table marked for this test")
	}
	code := regexp.MustCompile("`([^`]+)`")
	out := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(table), "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 3 || strings.Contains(cells[0], "---") || strings.TrimSpace(cells[0]) == "package" {
			continue
		}
		var may []string
		if strings.Contains(cells[2], "everything but") {
			may = []string{"everything but cmd/meshc"}
		}
		for _, m := range code.FindAllStringSubmatch(cells[2], -1) {
			may = append(may, m[1])
		}
		for _, p := range code.FindAllStringSubmatch(cells[0], -1) {
			row := slices.Clone(may)
			// "their parent": a helper package may import the package it helps.
			if strings.Contains(cells[2], "their parent") {
				row = append(row, filepath.Dir(p[1]))
			}
			out[p[1]] = row
		}
	}
	if len(out) < 10 {
		t.Fatalf("read %d rows from the README's import table: its shape changed", len(out))
	}
	return out
}

// ownHelper is a package's own helper for tests: catalogue's catalogue/cataloguetest.
func ownHelper(pkg string) string { return pkg + "/" + filepath.Base(pkg) + "test" }

// insteadOf are libraries meshc does not import, each with the one it uses for the same job.
var insteadOf = map[string]string{
	"gopkg.in/yaml.v3": "go.yaml.in/yaml/v3",
}

// imports are a package's imports of meshc's own packages, from its code and from its tests,
// and of everything else, from either.
type imports struct{ code, tests, other []string }

// meshcPackages reads every package of the repository and its imports of meshc's own packages,
// by parsing each file's import block.
func meshcPackages(t *testing.T) map[string]imports {
	t.Helper()
	root := "../.."
	out := map[string]imports{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		imp := out[pkg]
		for _, s := range f.Imports {
			p := strings.Trim(s.Path.Value, `"`)
			dep, ok := strings.CutPrefix(p, module)
			if !ok {
				imp.other = appendOnce(imp.other, p)
				continue
			}
			if strings.HasSuffix(path, "_test.go") {
				imp.tests = appendOnce(imp.tests, dep)
			} else {
				imp.code = appendOnce(imp.code, dep)
			}
		}
		out[pkg] = imp
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
