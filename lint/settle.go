package lint

import (
	"fmt"
	"slices"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/internal/suggest"
)

var ruleIgnore = &catalogue.Rule{ID: "ignore", Severity: catalogue.Warning,
	Summary: "a `# meshc:ignore` without a rule or a reason, or one that silences nothing; a lint.rules setting meshc cannot apply",
	Why: "A silenced finding is a decision someone will want to revisit: without its reason nobody can, and an ignore " +
		"whose finding is gone would quietly silence the next, unrelated one written on that line."}

// breakRules are judged between two catalogues and approved one break at a time in approve:,
// with its reason; a catalogue-wide switch or an inline ignore would approve every break at once.
var breakRules = []*Rule{ruleReplay, ruleRetention, ruleWidening, ruleCredential, ruleContract}

// severityWords are what lint.rules sets a rule to; "off" silences it.
var severityWords = map[string]catalogue.Severity{"info": catalogue.Info, "warning": catalogue.Warning, "error": catalogue.Error}

// settle applies what the catalogue says about its own findings: mesh.yaml's lint.rules, which
// turn a rule off (its findings are kept as suppressed, for SARIF) or set its severity, and the
// `# meshc:ignore RULE reason` comments, each of which silences the finding of RULE on its line.
// What cannot be applied is a finding of rule ignore, and so is an ignore that silences nothing.
func settle(c *catalogue.Catalogue, findings catalogue.Findings) catalogue.Findings {
	out := slices.Clone(findings)
	var own catalogue.Findings
	// refusal says why a rule may not be silenced or lowered by the catalogue, or "".
	refusal := func(r *Rule) string {
		switch {
		case slices.Contains(breakRules, r):
			return fmt.Sprintf("%s is a breaking rule: approve each break in mesh.yaml's approve: list, with its reason", r.ID)
		case r.Firm:
			return fmt.Sprintf("%s cannot be silenced or lowered: its finding means the plan meshc would write is wrong", r.ID)
		}
		return ""
	}

	settings := map[string]catalogue.RuleSetting{}
	for _, s := range c.Mesh.Lint.Rules {
		r := Lookup(s.Rule.Value)
		switch {
		case r == nil:
			own = append(own, ruleIgnore.At(s.Rule.Pos, "lint.rules names %q, which is not a rule of meshc's%s", catalogue.Excerpt(s.Rule.Value), didYouMean(suggest.Closest(s.Rule.Value, ruleIDs()))))
		case refusal(r) != "" && (s.Severity.Value == "off" || severityWords[s.Severity.Value] < r.Severity):
			own = append(own, ruleIgnore.At(s.Severity.Pos, "%s; the setting is not applied", refusal(r)))
		default:
			settings[r.ID] = s
		}
	}

	// Findings by the line they are on, so a catalogue with many ignores costs no more than one
	// pass over its findings.
	type line struct {
		file string
		n    int
	}
	onLine := map[line][]int{}
	if len(c.Ignores) > 0 {
		for i, f := range out {
			onLine[line{f.Pos.File, f.Pos.Line}] = append(onLine[line{f.Pos.File, f.Pos.Line}], i)
		}
	}
	for _, ig := range c.Ignores {
		r := Lookup(ig.Rule)
		switch {
		case ig.Rule == "":
			own = append(own, ruleIgnore.At(ig.Pos, "meshc:ignore names no rule: write `# meshc:ignore RULE reason`"))
			continue
		case r == nil:
			own = append(own, ruleIgnore.At(ig.Pos, "meshc:ignore names %q, which is not a rule of meshc's%s", catalogue.Excerpt(ig.Rule), didYouMean(suggest.Closest(ig.Rule, ruleIDs()))))
			continue
		case refusal(r) != "":
			own = append(own, ruleIgnore.At(ig.Pos, "%s; this ignore silences nothing", refusal(r)))
			continue
		case ig.Reason == "":
			own = append(own, ruleIgnore.At(ig.Pos, "meshc:ignore %s gives no reason, so it silences nothing: say why after the rule (`# meshc:ignore %s REASON`)", r.ID, r.ID))
			continue
		}
		silenced := false
		for _, i := range onLine[line{ig.Pos.File, ig.Line}] {
			f := &out[i]
			// Line 0 is a finding about a whole file, which no comment is above.
			if f.Rule == r.ID && f.Suppressed == nil && ig.Line > 0 {
				f.Suppressed = &catalogue.Suppression{InSource: true, Reason: ig.Reason}
				silenced = true
			}
		}
		if !silenced {
			own = append(own, ruleIgnore.At(ig.Pos, "meshc:ignore %s silences nothing: there is no %s finding on line %d; delete the comment", r.ID, r.ID, ig.Line))
		}
	}

	out = append(out, own...)
	for i := range out {
		f := &out[i]
		s, ok := settings[f.Rule]
		if !ok || f.Suppressed != nil {
			continue
		}
		if s.Severity.Value == "off" {
			f.Suppressed = &catalogue.Suppression{Reason: fmt.Sprintf("turned off in %s (lint.rules)", s.Severity.Pos)}
		} else {
			f.Severity = severityWords[s.Severity.Value]
		}
	}
	return out
}

func ruleIDs() []string {
	out := make([]string, len(Rules))
	for i, r := range Rules {
		out[i] = r.ID
	}
	slices.Sort(out)
	return out
}
