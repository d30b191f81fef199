package lint

import (
	"embed"
	"fmt"
	"strings"

	"github.com/rogpeppe/go-internal/txtar"
)

// Every rule's example is a txtar archive of its own, examples/RULE.txtar: the catalogue that
// fires the rule under before/, the same catalogue fixed under after/, and for a breaking rule
// the catalogue the change is made from under base/. `meshc explain RULE` and docs/rules.md
// print them, and TestExamplesAreHonest lints each: before must fire the rule, after must not.
//
//go:embed examples/*.txtar
var examples embed.FS

// Example is a rule's before and after: small catalogues written as txtar archives (-- mesh.yaml
// -- then its lines, and so on), the one that fires the rule and the one that fixes it. A
// breaking rule's example also has the Base the change is made from.
type Example struct {
	Base, Before, After string
}

// ExampleOf is the rule's example; a rule no valid catalogue fires (the compiler's guards) has
// none, and its Example is empty.
func ExampleOf(r *Rule) (Example, error) {
	data, err := examples.ReadFile("examples/" + r.ID + ".txtar")
	if err != nil {
		return Example{}, nil
	}
	parts := map[string]*txtar.Archive{"base/": {}, "before/": {}, "after/": {}}
	for _, f := range txtar.Parse(data).Files {
		dir, name, _ := strings.Cut(f.Name, "/")
		a := parts[dir+"/"]
		if a == nil || name == "" {
			return Example{}, fmt.Errorf("examples/%s.txtar: %s is not under base/, before/ or after/", r.ID, f.Name)
		}
		a.Files = append(a.Files, txtar.File{Name: name, Data: f.Data})
	}
	format := func(a *txtar.Archive) string {
		if len(a.Files) == 0 {
			return ""
		}
		return string(txtar.Format(a))
	}
	return Example{Base: format(parts["base/"]), Before: format(parts["before/"]), After: format(parts["after/"])}, nil
}
