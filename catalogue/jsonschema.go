package catalogue

import (
	"bytes"
	"encoding/json"
)

// SchemaBase is where the JSON Schemas are published: the schema/ directory of meshc's
// repository, which holds what `meshc schema --out schema` writes (a test keeps it current).
// A manifest names its schema with a first line such as
//
//	# yaml-language-server: $schema=https://raw.githubusercontent.com/meshc-dev/meshc/main/schema/module.schema.json
const SchemaBase = "https://raw.githubusercontent.com/meshc-dev/meshc/main/schema/"

// jsonSchema is the part of JSON Schema (draft 2020-12) the catalogue's format needs. Fields are
// in the order a reader expects them, and maps are written sorted, so the output is stable.
type jsonSchema struct {
	Schema               string                 `json:"$schema,omitempty"`
	ID                   string                 `json:"$id,omitempty"`
	Title                string                 `json:"title,omitempty"`
	Description          string                 `json:"description,omitempty"`
	Type                 any                    `json:"type,omitempty"`
	Enum                 []string               `json:"enum,omitempty"`
	Pattern              string                 `json:"pattern,omitempty"`
	MaxLength            *int64                 `json:"maxLength,omitempty"`
	Minimum              *int64                 `json:"minimum,omitempty"`
	Maximum              *int64                 `json:"maximum,omitempty"`
	Items                *jsonSchema            `json:"items,omitempty"`
	Properties           map[string]*jsonSchema `json:"properties,omitempty"`
	AdditionalProperties any                    `json:"additionalProperties,omitempty"`
	Required             []string               `json:"required,omitempty"`
}

// schema describes the table's mapping: its rows and nothing else (an unknown key is an error),
// each with its description. Nested mappings may be left empty (`controller:`), as the loader
// allows; a file's top level may not.
func (t *table) schema(nullable bool) *jsonSchema {
	s := &jsonSchema{Type: "object", Description: t.doc, Properties: map[string]*jsonSchema{},
		AdditionalProperties: false, Required: t.required}
	if nullable {
		s.Type = []string{"object", "null"}
	}
	for _, f := range t.fields {
		p := f.shape.schema()
		p.Description = f.doc
		s.Properties[f.key] = p
	}
	return s
}

// A SchemaFile is the JSON Schema of one kind of catalogue file.
type SchemaFile struct {
	// Name is the schema's file name: mesh.schema.json.
	Name string
	// For names the catalogue files it describes, as a reader would: "mesh.yaml".
	For  string
	Data []byte
}

// Schemas returns the JSON Schemas of mesh.yaml, a module manifest and inventory.yaml, written
// from the loader's own field tables. credentials.yaml has none: it is written by meshc mint.
func Schemas() []SchemaFile {
	files := []struct {
		name, of, title string
		t               *table
	}{
		{"mesh.schema.json", MeshFile, "meshc mesh.yaml", meshTable(&Mesh{})},
		{"module.schema.json", ModulesDir + "/**/*.yaml", "meshc module manifest", moduleTable(&Module{})},
		{"inventory.schema.json", InventoryFile, "meshc inventory.yaml", inventoryTable(&Inventory{})},
	}
	out := make([]SchemaFile, len(files))
	for i, f := range files {
		s := f.t.schema(false)
		s.Schema = "https://json-schema.org/draft/2020-12/schema"
		s.ID = SchemaBase + f.name
		s.Title = f.title
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			panic(err) // a value built above from strings and numbers always encodes
		}
		out[i] = SchemaFile{Name: f.name, For: f.of, Data: buf.Bytes()}
	}
	return out
}
