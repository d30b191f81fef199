package catalogue

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the generated parts of docs/catalogue.md from the field tables")

// docs/catalogue.md's field tables are written from the loader's own, between markers, so the
// reference says exactly what the loader reads; the prose around them is written by hand.
func TestCatalogueReferenceIsCurrent(t *testing.T) {
	const page = "../docs/catalogue.md"
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	updated := doc
	for _, kind := range []string{"mesh.yaml", "module", "inventory.yaml"} {
		begin := "<!-- fields: " + kind + " (generated from the loader's field tables by `go test ./catalogue -run TestCatalogueReference -update-docs`) -->\n"
		const end = "<!-- /fields -->"
		i := strings.Index(updated, begin)
		j := strings.Index(updated[i+len(begin):], end)
		if i < 0 || j < 0 {
			t.Fatalf("docs/catalogue.md has no generated part for %s: add %q and %q", kind, begin, end)
		}
		j += i + len(begin)
		updated = updated[:i+len(begin)] + FieldReference(kind) + updated[j:]
	}
	const begin, end = "<!-- limits (generated from the catalogue's defaults by `go test ./catalogue -run TestCatalogueReference -update-docs`) -->\n", "<!-- /limits -->"
	i := strings.Index(updated, begin)
	j := strings.Index(updated[max(i, 0)+len(begin):], end)
	if i < 0 || j < 0 {
		t.Fatalf("docs/catalogue.md has no generated part for the limits: add %q and %q", begin, end)
	}
	j += i + len(begin)
	updated = updated[:i+len(begin)] + LimitsReference() + updated[j:]
	if updated == doc {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(page, []byte(updated), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/catalogue.md is stale; run `go test ./catalogue -run TestCatalogueReference -update-docs`")
}
