package lint

import (
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/internal/output"
)

const settled = `
-- mesh.yaml --
name: novox
aliases: {old-store: store}
lint:
  rules:
    seat-renamed: error
    event-unheard: off
    credential-missing: off
-- modules/a.yaml --
module: a
seats: [{name: store, scope: mesh, accepts: [push]}]
emits: [built]
-- modules/b.yaml --
module: b
uses: [old-store]
# meshc:ignore call-agreement a's tool lands with its next release
calls: [a.lookup]
`

// lint.rules changes a rule's severity for the whole catalogue, and its findings fail lint as
// that severity; turned off or ignored, a finding is kept as suppressed (external or in the
// source), with the reason, and counts for nothing.
func TestTheCatalogueSettlesItsOwnFindings(t *testing.T) {
	findings := lintArchive(t, txtar.Parse([]byte(settled)))
	byRule := map[string]catalogue.Finding{}
	for _, f := range findings {
		byRule[f.Rule] = f
	}
	if f := byRule["seat-renamed"]; f.Severity != catalogue.Error || f.Suppressed != nil {
		t.Errorf("seat-renamed set to error: %+v", f)
	}
	if !findings.HasErrors() {
		t.Errorf("a warning raised to error does not fail lint")
	}
	if f := byRule["event-unheard"]; f.Suppressed == nil || f.Suppressed.InSource || !strings.Contains(f.Suppressed.Reason, "mesh.yaml:6:20") {
		t.Errorf("event-unheard turned off: %+v", f.Suppressed)
	}
	if f := byRule["call-agreement"]; f.Suppressed == nil || !f.Suppressed.InSource || f.Suppressed.Reason != "a's tool lands with its next release" {
		t.Errorf("call-agreement ignored in the source: %+v", f.Suppressed)
	}
	if n := findings.Count(catalogue.Error); n != 1 {
		t.Errorf("%d errors counted, want 1 (seat-renamed; call-agreement is ignored): %v", n, findings)
	}

	// The text format says nothing of what was silenced; SARIF keeps both, with their kinds.
	text := write(t, output.Text, findings)
	if strings.Contains(text, "call-agreement") || strings.Contains(text, "event-unheard") {
		t.Errorf("the text format prints silenced findings:\n%s", text)
	}
	report := readSARIF(t, write(t, output.SARIF, findings))
	kinds := map[string]string{}
	for _, r := range report.Runs[0].Results {
		for _, s := range r.Suppressions {
			kinds[*r.RuleID] = *s.Kind + ": " + *s.Justification
		}
	}
	if !strings.HasPrefix(kinds["event-unheard"], "external: turned off in mesh.yaml") ||
		kinds["call-agreement"] != "inSource: a's tool lands with its next release" {
		t.Errorf("SARIF suppressions: %q", kinds)
	}
}
