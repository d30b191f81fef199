package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/internal/atomicfile"
	"github.com/meshc-dev/meshc/internal/suggest"
)

var schemaCommand = command{
	name:    "schema",
	summary: "print or write the JSON Schemas of the catalogue's files, for editors",
	usage: `Usage: meshc schema mesh|module|inventory      print one JSON Schema
       meshc schema --out DIR [mesh|module|inventory]   write them to DIR
`,
	help: `Prints or writes the JSON Schemas (draft 2020-12) of the catalogue's files: mesh.yaml
(mesh.schema.json), a module manifest (module.schema.json) and inventory.yaml
(inventory.schema.json). They are written from the same field tables the loader reads with,
so an editor completes, describes and checks exactly the keys meshc reads.

The published schemas are at ` + catalogue.SchemaBase + `; name one on a file's first line
for yaml-language-server (VS Code's YAML extension, Neovim, Helix):

  # yaml-language-server: $schema=` + catalogue.SchemaBase + `module.schema.json

`,
	run: runSchema,
}

// schemaNames are the names `meshc schema` takes, in the order of catalogue.Schemas.
var schemaNames = []string{"mesh", "module", "inventory"}

func runSchema(inv *invocation, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	fs := flag.NewFlagSet("schema", flag.ContinueOnError)
	out := fs.String("out", "", "write the schemas (all three, or the one named) into `DIR`, creating it")
	rest, exit, done := parseArgs(fs, args, inv)
	if done {
		return exit
	}
	if len(rest) > 1 {
		return tooMany(fs, stderr, rest[1:])
	}
	schemas := catalogue.Schemas()
	if len(rest) == 1 {
		i, err := suggest.Choose("schema", rest[0], schemaNames)
		if err != nil {
			fmt.Fprintf(stderr, "meshc schema: %v\n", err)
			return exitCantRun
		}
		schemas = schemas[i : i+1]
	} else if *out == "" {
		// Three documents on one stdout would be no document a tool could read.
		fmt.Fprintf(stderr, "meshc schema: name the schema to print (%s), or write them all with --out DIR\n", strings.Join(schemaNames, ", "))
		return exitCantRun
	}
	if *out == "" {
		stdout.Write(schemas[0].Data)
		return exitOK
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintf(stderr, "meshc schema: %v\n", err)
		return exitCantRun
	}
	for _, s := range schemas {
		if err := atomicfile.Write(filepath.Join(*out, s.Name), s.Data, 0o644); err != nil {
			fmt.Fprintf(stderr, "meshc schema: %v\n", err)
			return exitCantRun
		}
	}
	return exitOK
}
