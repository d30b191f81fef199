package main

import (
	"os"
	"path"
	"regexp"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/emit"
)

// Each pre-commit hook runs only when a file its `files` pattern matches is committed, so a
// catalogue file the pattern leaves out commits unchecked: keys.yaml was, and a corrupted key
// committed cleanly. Every file the loader reads must wake both hooks, wherever the catalogue
// sits in its repository; the golden files wake the emit check.
func TestTheHooksSeeEveryCatalogueFile(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../.pre-commit-hooks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var hooks []struct {
		ID    string `yaml:"id"`
		Files string `yaml:"files"`
	}
	if err := yaml.Unmarshal(data, &hooks); err != nil {
		t.Fatal(err)
	}
	read := []string{catalogue.MeshFile, catalogue.InventoryFile, catalogue.CredentialsFile, catalogue.KeysFile,
		catalogue.ModulesDir + "/builder.yaml", catalogue.ModulesDir + "/apps/catalog.yml"}
	var golden []string
	for _, f := range []string{emit.AccountsFile, emit.PlanFile, emit.PermissionsFile, emit.ClaimsFile} {
		golden = append(golden, catalogue.GoldenDir+"/"+f)
	}
	want := map[string][]string{"meshc-lint": read, "meshc-emit-check": append(read, golden...)}
	for _, h := range hooks {
		files, ok := want[h.ID]
		if !ok {
			t.Errorf("hook %s is not one this test knows what to expect of", h.ID)
			continue
		}
		delete(want, h.ID)
		re, err := regexp.Compile(h.Files)
		if err != nil {
			t.Fatalf("hook %s: files: %v", h.ID, err)
		}
		for _, f := range files {
			for _, p := range []string{f, path.Join("infra/mesh", f)} {
				if !re.MatchString(p) {
					t.Errorf("hook %s does not run when %s is committed (files: %s)", h.ID, p, h.Files)
				}
			}
		}
		if re.MatchString("README.md") {
			t.Errorf("hook %s runs on a README", h.ID)
		}
	}
	for id := range want {
		t.Errorf("no hook %s in .pre-commit-hooks.yaml", id)
	}
}
