package catalogue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"go.yaml.in/yaml/v3"
)

// The schemas are the loader's field tables written out, and these tests hold them to that: a
// document the loader reads cleanly is valid, and one it refuses for an unknown key, a wrong
// type or a missing required key is invalid. A JSON Schema validator made for draft 2020-12
// judges, not a reading of our own.

// compiled compiles every schema meshc writes, by its file name.
func compiled(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	for _, f := range Schemas() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(f.Data))
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if err := c.AddResource(SchemaBase+f.Name, doc); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
	}
	out := map[string]*jsonschema.Schema{}
	for _, f := range Schemas() {
		s, err := c.Compile(SchemaBase + f.Name)
		if err != nil {
			t.Fatalf("%s is not a valid draft 2020-12 schema: %v", f.Name, err)
		}
		out[f.Name] = s
	}
	return out
}

// instance reads YAML as the JSON value a schema validator (and an editor) sees. A document
// JSON cannot hold — a key that is not a string — is returned as an error.
func instance(data []byte) (any, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(j))
}

// schemaFor names the schema of a catalogue file, or "" for one that has none.
func schemaFor(rel string) string {
	switch {
	case rel == MeshFile:
		return "mesh.schema.json"
	case rel == InventoryFile:
		return "inventory.schema.json"
	case strings.HasPrefix(rel, ModulesDir+"/") && path.Ext(rel) == ".yaml":
		return "module.schema.json"
	}
	return ""
}

// Every file of every catalogue in the repository — the example and the test catalogues — that
// the loader reads without a structural finding validates against its schema.
func TestEveryCatalogueFileTheLoaderAcceptsValidates(t *testing.T) {
	schemas := compiled(t)
	dirs := []string{"../examples/mesh"}
	archives, _ := filepath.Glob("../*/testdata/*.txtar")
	more, _ := filepath.Glob("../*/testdata/*/*.txtar")
	deeper, _ := filepath.Glob("../*/*/testdata/*/*.txtar")
	for _, a := range slices.Concat(archives, more, deeper) {
		ar, err := txtar.ParseFile(a)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		for _, f := range ar.Files {
			p := filepath.Join(dir, filepath.FromSlash(f.Name))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, f.Data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		dirs = append(dirs, dir)
	}
	validated := 0
	for _, dir := range dirs {
		_, findings, err := Load(dir)
		if err != nil {
			continue // an archive that is not a catalogue (a script's other files)
		}
		refused := map[string]bool{}
		for _, f := range findings {
			if f.Rule == RuleYAML.ID {
				refused[f.Pos.File] = true
			}
		}
		filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			rel = filepath.ToSlash(rel)
			name := schemaFor(rel)
			if name == "" || refused[rel] {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(string(data)) == "" {
				return nil // an empty inventory.yaml is no document at all
			}
			v, err := instance(data)
			if err != nil {
				t.Errorf("%s (in %s): the loader reads it, but as JSON it is %v", rel, dir, err)
				return nil
			}
			// A name outside its grammar is lint's name (or event-local) finding, which the schema
			// carries too (TestSchemasCheckNames): only that may refuse a file the loader reads.
			if err := schemas[name].Validate(v); err != nil && !onlyGrammar(err) {
				t.Errorf("%s (in %s): the loader reads it cleanly, but %s refuses it: %v", rel, dir, name, err)
			}
			validated++
			return nil
		})
	}
	if validated < 50 {
		t.Errorf("only %d files validated: the walk is not reaching the catalogues", validated)
	}
}

// sample is a value of a shape the loader accepts.
func sample(t *testing.T, s shape) any {
	switch s := s.(type) {
	case textShape:
		if len(s.words) > 0 {
			return s.words[0]
		}
		return "x"
	case textsShape:
		return []any{"x"}
	case boolShape:
		return true
	case wholeShape:
		return s.least
	case durationShape:
		return "1h"
	case mappingShape:
		return sampleOf(t, s.t)
	case listShape:
		item, _ := s.item()
		return []any{sampleOf(t, item)}
	case pairsShape:
		if len(s.words) > 0 {
			return map[string]any{"k": s.words[0]}
		}
		return map[string]any{"k": "v"}
	}
	t.Fatalf("no sample value for a shape %T: add one here", s)
	return nil
}

// wrong are values of a shape the loader refuses for their type or value.
func wrong(t *testing.T, s shape) []any {
	switch s := s.(type) {
	case textShape:
		out := []any{[]any{"x"}, 7, true, map[string]any{"k": "v"}}
		if s.refuse {
			out = append(out, "not-"+s.words[0])
		}
		return out
	case textsShape:
		return []any{"x", map[string]any{"k": "v"}, []any{7}, []any{[]any{"x"}}}
	case boolShape:
		return []any{"yes", 1, []any{true}}
	case wholeShape:
		out := []any{"x", 1.5, []any{1}, s.least - 1}
		if s.most > 0 {
			out = append(out, s.most+1)
		}
		return out
	case durationShape:
		return []any{10, "10 days", []any{"1h"}}
	case mappingShape:
		return []any{"x", []any{"x"}, 7}
	case listShape:
		return []any{"x", map[string]any{"k": "v"}, []any{"x"}, []any{7}}
	case pairsShape:
		out := []any{"x", []any{"x"}, map[string]any{"k": []any{"v"}}, map[string]any{"k": 7}}
		if len(s.words) > 0 {
			out = append(out, map[string]any{"k": "not-" + s.words[0]})
		}
		return out
	}
	t.Fatalf("no wrong values for a shape %T: add them here", s)
	return nil
}

// sampleOf is a mapping with every row of the table set to a sample value.
func sampleOf(t *testing.T, tb *table) map[string]any {
	out := map[string]any{}
	for _, f := range tb.fields {
		out[f.key] = sample(t, f.shape)
	}
	return out
}

// A variant is a document made from the sample by one change, and what the change was.
type variant struct {
	says string
	doc  map[string]any
}

// variants makes, for the mapping at doc (described by tb, reached by path), one document per
// unknown key, per wrong value of each row and per required key left out, recursing into nested
// mappings and list items; root rebuilds the whole document around a changed mapping.
func variants(t *testing.T, tb *table, doc map[string]any, where string, root func(map[string]any) map[string]any) []variant {
	var out []variant
	with := func(says string, change func(m map[string]any)) {
		m := clone(doc)
		change(m)
		out = append(out, variant{where + says, root(m)})
	}
	with(": an unknown key", func(m map[string]any) { m["no-such-key"] = "x" })
	for _, k := range tb.required {
		with(": "+k+" left out", func(m map[string]any) { delete(m, k) })
	}
	for _, f := range tb.fields {
		for _, w := range wrong(t, f.shape) {
			with(fmt.Sprintf(".%s: %v", f.key, w), func(m map[string]any) { m[f.key] = w })
		}
		switch s := f.shape.(type) {
		case mappingShape:
			inner := doc[f.key].(map[string]any)
			out = append(out, variants(t, s.t, inner, where+"."+f.key, func(changed map[string]any) map[string]any {
				m := clone(doc)
				m[f.key] = changed
				return root(m)
			})...)
		case listShape:
			item, _ := s.item()
			inner := doc[f.key].([]any)[0].(map[string]any)
			out = append(out, variants(t, item, inner, where+"."+f.key+"[0]", func(changed map[string]any) map[string]any {
				m := clone(doc)
				m[f.key] = []any{changed}
				return root(m)
			})...)
		}
	}
	return out
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// decodeAs runs the loader's decoder for one kind of file over a document.
func decodeAs(t *testing.T, name string, doc map[string]any) Findings {
	data, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		t.Fatal(err)
	}
	var findings Findings
	d := newDecoder("f.yaml", &findings)
	switch name {
	case "mesh.schema.json":
		d.mesh(n.Content[0], &Mesh{})
	case "module.schema.json":
		d.module(n.Content[0], &Module{})
	case "inventory.schema.json":
		d.inventory(n.Content[0], &Inventory{})
	}
	return findings
}

func validates(t *testing.T, s *jsonschema.Schema, doc map[string]any) error {
	j, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}

// Every key and type the loader refuses, the schema refuses: driven from the tables, so a new
// row is covered the day it is written.
func TestTheSchemaRefusesWhatTheLoaderRefuses(t *testing.T) {
	schemas := compiled(t)
	tables := map[string]*table{
		"mesh.schema.json":      meshTable(&Mesh{}),
		"module.schema.json":    moduleTable(&Module{}),
		"inventory.schema.json": inventoryTable(&Inventory{}),
	}
	for name, tb := range tables {
		full := sampleOf(t, tb)
		if f := decodeAs(t, name, full); len(f) != 0 {
			t.Fatalf("%s: the sample with every field set is refused by the loader: %v", name, f)
		}
		if err := validates(t, schemas[name], full); err != nil {
			t.Fatalf("%s: the sample with every field set is refused by the schema: %v", name, err)
		}
		vs := variants(t, tb, full, name, func(m map[string]any) map[string]any { return m })
		for _, v := range vs {
			if f := decodeAs(t, name, v.doc); len(f) == 0 {
				t.Errorf("%s: the loader accepts it (the test's wrong value is not wrong)", v.says)
				continue
			}
			if err := validates(t, schemas[name], v.doc); err == nil {
				t.Errorf("%s: the loader refuses it, the schema accepts it", v.says)
			}
		}
		t.Logf("%s: %d refused variants", name, len(vs))
	}
}

// Every row has a description: an editor shows it on hover, and docs/catalogue.md lists it.
func TestEveryFieldIsDescribed(t *testing.T) {
	var walk func(tb *table, where string)
	walk = func(tb *table, where string) {
		if tb.doc == "" {
			t.Errorf("%s has no description", where)
		}
		for _, f := range tb.fields {
			if strings.TrimSpace(f.doc) == "" {
				t.Errorf("%s.%s has no description", where, f.key)
			}
			switch s := f.shape.(type) {
			case mappingShape:
				walk(s.t, where+"."+f.key)
			case listShape:
				item, _ := s.item()
				walk(item, where+"."+f.key+"[]")
			}
		}
	}
	walk(meshTable(&Mesh{}), "mesh.yaml")
	walk(moduleTable(&Module{}), "module")
	walk(inventoryTable(&Inventory{}), "inventory.yaml")
}

// The schemas committed under schema/ are what meshc writes today, so the published URLs
// describe the format of the code beside them.
func TestCommittedSchemasAreCurrent(t *testing.T) {
	for _, f := range Schemas() {
		got, err := os.ReadFile(filepath.Join("..", "schema", f.Name))
		if err != nil || !bytes.Equal(got, f.Data) {
			t.Errorf("schema/%s is stale or missing; run `go run ./cmd/meshc schema --out schema`", f.Name)
		}
	}
}

// onlyGrammar reports whether every leaf of a validation error is a name outside its grammar.
func onlyGrammar(err error) bool {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return false
	}
	var leaves func(*jsonschema.ValidationError) bool
	leaves = func(e *jsonschema.ValidationError) bool {
		if len(e.Causes) == 0 {
			switch e.ErrorKind.(type) {
			case *kind.Pattern, *kind.MaxLength:
				return true
			}
			return false
		}
		for _, c := range e.Causes {
			if !leaves(c) {
				return false
			}
		}
		return true
	}
	return leaves(ve)
}

// The schemas check names with the grammars lint checks them with: an editor marks
// `module: Catalog_Bad` as lint does, and takes what lint takes.
func TestSchemasCheckNames(t *testing.T) {
	schemas := compiled(t)
	for _, c := range []struct {
		schema, doc string
		valid       bool
	}{
		{"module.schema.json", "module: catalog\nemits: [image.pushed]\ntools: [look-up]\nclaims: [image-mirror]\n", true},
		{"module.schema.json", "module: Catalog_Bad\n", false},
		{"module.schema.json", "module: " + strings.Repeat("a", 64) + "\n", false},
		{"module.schema.json", "module: catalog\nemits: [image.*]\n", false},
		{"module.schema.json", "module: catalog\ntools: [look.up]\n", false},
		{"module.schema.json", "module: catalog\nclaims: [Image-Mirror]\n", false},
		{"module.schema.json", "module: catalog\nseats:\n  - {name: mirror, scope: mesh, accepts: [Push!]}\n", false},
		{"inventory.schema.json", "nodes:\n  - {name: anchor, runs: [catalog]}\npeople:\n  - {name: bob smith}\n", false},
		{"inventory.schema.json", "nodes:\n  - {name: anchor, runs: [Catalog]}\n", false},
		{"inventory.schema.json", "nodes:\n  - {name: anchor, runs: [catalog]}\npeople:\n  - {name: bob}\n", true},
	} {
		v, err := instance([]byte(c.doc))
		if err != nil {
			t.Fatal(err)
		}
		if err := schemas[c.schema].Validate(v); (err == nil) != c.valid {
			t.Errorf("%s on %q: valid %v, want %v (%v)", c.schema, c.doc, err == nil, c.valid, err)
		}
	}
}
