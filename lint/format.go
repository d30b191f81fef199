package lint

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/internal/buildinfo"
	"github.com/meshc-dev/meshc/internal/output"
	"github.com/meshc-dev/meshc/internal/safetext"
)

// Formats are how `meshc lint` writes its findings, in the order help text shows them:
//
//   - text: one line per finding, `file:line:col: severity: rule: message`, each related place
//     indented on the lines after it, then a summary line. No findings, no output: a clean
//     catalogue is as quiet as `go vet` on clean code, and the exit status says it was clean;
//   - json: the shape documented at writeJSON; it is stable, so scripts may rely on it;
//   - sarif: a SARIF 2.1.0 log for code scanning (GitHub's upload-sarif, editors);
//   - github: GitHub Actions workflow commands: each finding becomes an annotation on the pull
//     request's diff.
var Formats = []output.Format{output.Text, output.JSON, output.SARIF, output.GitHub}

// Write writes findings in format f. Findings are sorted and de-duplicated first, so the same
// catalogue gives the same bytes whatever order the checks ran in.
//
// A finding the catalogue silenced (lint.rules, # meshc:ignore) is left out of every format but
// SARIF, which keeps it as a suppression: code scanning then shows what was silenced, and why.
func Write(w io.Writer, f output.Format, findings catalogue.Findings) error {
	findings = findings.Sorted()
	reported := slices.DeleteFunc(slices.Clone(findings), func(f catalogue.Finding) bool { return f.Suppressed != nil })
	switch f {
	case output.Text:
		return writeText(w, reported)
	case output.JSON:
		return writeJSON(w, reported)
	case output.SARIF:
		return writeSARIF(w, findings)
	case output.GitHub:
		return writeGitHub(w, reported)
	}
	return fmt.Errorf("lint: no writer for format %v", f)
}

// Summary says how many findings of each severity there are, as the text format's last line
// does: "2 errors, 1 warning, 0 info".
func Summary(findings catalogue.Findings) string {
	plural := func(n int, word string) string {
		if n == 1 {
			return "1 " + word
		}
		return strconv.Itoa(n) + " " + word + "s"
	}
	return fmt.Sprintf("%s, %s, %d info",
		plural(findings.Count(catalogue.Error), "error"),
		plural(findings.Count(catalogue.Warning), "warning"),
		findings.Count(catalogue.Info))
}

func writeText(w io.Writer, findings catalogue.Findings) error {
	if len(findings) == 0 {
		return nil
	}
	bw := bufio.NewWriter(w)
	for _, f := range findings {
		// A message is one line by contract; a stray newline would forge a second finding, and
		// anything taken from the catalogue (a path, a quoted value) is made safe for a CI log.
		fmt.Fprintf(bw, "%s: %s: %s: %s\n", logSafe(f.Pos.String()), f.Severity, logSafe(f.Rule), logSafe(f.Message))
		for _, r := range f.Related {
			fmt.Fprintf(bw, "\t%s: %s\n", logSafe(r.Pos.String()), logSafe(r.Message))
		}
	}
	fmt.Fprintln(bw, Summary(findings))
	return bw.Flush()
}

// logSafe makes text from a catalogue safe on one line of a CI log or a terminal
// (safetext.Line). A line of ours never starts with "::" (it starts with a position), so the
// newer "::command::" form cannot be forged either.
func logSafe(s string) string { return safetext.Line(s) }

// The JSON format, written by `meshc lint --format json`. This comment is its documentation;
// the shape only grows (new fields), it never renames or removes one.
//
//	{
//	  "findings": [
//	    {
//	      "file": "modules/builder.yaml",  // slash-separated, as the text format prints it
//	      "line": 7,                        // 1-based; 0 when unknown
//	      "column": 5,                      // 1-based; 0 when unknown
//	      "severity": "error",              // "error", "warning" or "info"
//	      "rule": "consume-agreement",      // a rule id from `meshc lint --list`
//	      "message": "…",                   // what is wrong and what to do
//	      "related": [                      // other places involved; [] when none
//	        {"file": "…", "line": 3, "column": 1, "message": "…"}
//	      ]
//	    }
//	  ],
//	  "summary": {"errors": 1, "warnings": 0, "info": 0}
//	}
//
// Findings are sorted by file, line, column, rule and message. Every key is always present
// (arrays are [] rather than null), so a consumer needs no special case for a clean catalogue:
// that is {"findings": [], "summary": {"errors": 0, "warnings": 0, "info": 0}}.
type jsonReport struct {
	Findings []jsonFinding `json:"findings"`
	Summary  jsonSummary   `json:"summary"`
}

type jsonFinding struct {
	File     string        `json:"file"`
	Line     int           `json:"line"`
	Column   int           `json:"column"`
	Severity string        `json:"severity"`
	Rule     string        `json:"rule"`
	Message  string        `json:"message"`
	Related  []jsonRelated `json:"related"`
}

type jsonRelated struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Message string `json:"message"`
}

type jsonSummary struct {
	Errors   int `json:"errors"`
	Warnings int `json:"warnings"`
	Info     int `json:"info"`
}

func writeJSON(w io.Writer, findings catalogue.Findings) error {
	report := jsonReport{
		Findings: make([]jsonFinding, 0, len(findings)),
		Summary: jsonSummary{
			Errors:   findings.Count(catalogue.Error),
			Warnings: findings.Count(catalogue.Warning),
			Info:     findings.Count(catalogue.Info),
		},
	}
	for _, f := range findings {
		jf := jsonFinding{
			File: f.Pos.File, Line: f.Pos.Line, Column: f.Pos.Col,
			Severity: f.Severity.String(), Rule: f.Rule, Message: f.Message,
			Related: make([]jsonRelated, 0, len(f.Related)),
		}
		for _, r := range f.Related {
			jf.Related = append(jf.Related, jsonRelated{File: r.Pos.File, Line: r.Pos.Line, Column: r.Pos.Col, Message: r.Message})
		}
		report.Findings = append(report.Findings, jf)
	}
	return output.WriteJSON(w, report)
}

// sarifLevel maps a severity onto SARIF's result levels; info is SARIF's "note".
func sarifLevel(s catalogue.Severity) string {
	switch s {
	case catalogue.Error:
		return sarif.LevelError
	case catalogue.Warning:
		return sarif.LevelWarning
	}
	return sarif.LevelNote
}

// srcRoot is the uriBaseId code scanning resolves against the checked-out repository, so a
// relative path in the log lands on the right file whatever directory the checkout is in.
const srcRoot = "%SRCROOT%"

// Home is meshc's repository, and RulesDoc the page that explains each rule (docs/rules.md,
// generated from Rules), whose sections are named by rule id.
const (
	Home     = "https://github.com/meshc-dev/meshc"
	RulesDoc = Home + "/blob/main/docs/rules.md"
)

// writeSARIF writes one run whose driver lists every rule in Rules, not only those that fired:
// code scanning shows a rule's description beside each alert and remembers rules across runs.
func writeSARIF(w io.Writer, findings catalogue.Findings) error {
	run := sarif.NewRun()
	run.Tool = sarif.NewTool()
	run.Tool.Driver = sarif.NewToolComponent().WithName("meshc").
		WithVersion(buildinfo.Version()).
		WithInformationURI(Home)
	for _, r := range Rules {
		run.Tool.Driver.AddRule(sarif.NewRule(r.ID).
			WithName(r.ID).
			WithHelpURI(RulesDoc + "#" + r.ID).
			WithShortDescription(sarif.NewMultiformatMessageString().WithText(r.Summary)).
			WithFullDescription(sarif.NewMultiformatMessageString().WithText(r.Why)).
			WithHelp(sarif.NewMultiformatMessageString().WithText(r.Summary + ". " + r.Why)).
			WithDefaultConfiguration(sarif.NewReportingConfiguration().WithLevel(sarifLevel(r.Severity))))
	}
	for _, f := range findings {
		res := run.CreateResultForRule(f.Rule).
			WithLevel(sarifLevel(f.Severity)).
			WithMessage(sarif.NewTextMessage(f.Message))
		if loc := sarifLocation(f.Pos, ""); loc != nil {
			res.AddLocation(loc)
		}
		if s := f.Suppressed; s != nil {
			kind := "external"
			if s.InSource {
				kind = "inSource"
			}
			res.AddSuppression(sarif.NewSuppression().WithKind(kind).WithJustification(s.Reason))
		}
		for i, r := range f.Related {
			if loc := sarifLocation(r.Pos, r.Message); loc != nil {
				// A related location's id lets a message link to it; ids are unique per result.
				res.AddRelatedLocation(loc.WithID(i))
			}
		}
	}
	report := sarif.NewReport().AddRun(run)
	var buf bytes.Buffer
	if err := report.PrettyWrite(&buf); err != nil {
		return err
	}
	buf.WriteString("\n")
	_, err := w.Write(safetext.JSON(buf.Bytes()))
	return err
}

// sarifLocation is a position as a SARIF location, or nil when the file is unknown. What is
// unknown is left out rather than guessed: SARIF requires startLine ≥ 1 and startColumn ≥ 1.
func sarifLocation(p catalogue.Pos, message string) *sarif.Location {
	if p.File == "" {
		return nil
	}
	artifact := sarif.NewArtifactLocation().WithURI(fileURI(p.File))
	if !path.IsAbs(p.File) {
		artifact.WithURIBaseID(srcRoot)
	}
	phys := sarif.NewPhysicalLocation().WithArtifactLocation(artifact)
	if p.Line >= 1 {
		region := sarif.NewRegion().WithStartLine(p.Line)
		if p.Col >= 1 {
			region.WithStartColumn(p.Col)
		}
		phys.WithRegion(region)
	}
	loc := sarif.NewLocationWithPhysicalLocation(phys)
	if message != "" {
		loc.WithMessage(sarif.NewTextMessage(message))
	}
	return loc
}

// fileURI writes a slash-separated path as a URI reference: relative paths stay relative (and
// resolve against %SRCROOT%), absolute ones become file: URIs; spaces and % are escaped.
func fileURI(p string) string {
	if path.IsAbs(p) {
		return (&url.URL{Scheme: "file", Path: p}).String()
	}
	return (&url.URL{Path: p}).String()
}

// writeGitHub writes one workflow command per finding:
//
//	::error file=F,line=L,col=C,title=RULE::message
//
// warning becomes ::warning and info ::notice. Escaping follows actions/toolkit's
// packages/core/src/command.ts (escapeData, escapeProperty), which the runner reverses: in the
// message % CR LF are percent-encoded; in a property value also : and , since they delimit
// properties. Related places are appended to the message on lines of their own, because an
// annotation has one place.
func writeGitHub(w io.Writer, findings catalogue.Findings) error {
	bw := bufio.NewWriter(w)
	for _, f := range findings {
		var props []string
		if f.Pos.File != "" {
			props = append(props, "file="+escapeProperty(logSafe(f.Pos.File)))
			if f.Pos.Line >= 1 {
				props = append(props, "line="+strconv.Itoa(f.Pos.Line))
				if f.Pos.Col >= 1 {
					props = append(props, "col="+strconv.Itoa(f.Pos.Col))
				}
			}
		}
		props = append(props, "title="+escapeProperty(logSafe(f.Rule)))
		// logSafe first: the runner reverses escapeData, so a control character or "##[" in a
		// message would reach the log raw.
		msg := logSafe(f.Message)
		for _, r := range f.Related {
			msg += "\n" + logSafe(r.Pos.String()) + ": " + logSafe(r.Message)
		}
		fmt.Fprintf(bw, "::%s %s::%s\n", githubCommand(f.Severity), strings.Join(props, ","), escapeData(msg))
	}
	return bw.Flush()
}

func githubCommand(s catalogue.Severity) string {
	switch s {
	case catalogue.Error:
		return "error"
	case catalogue.Warning:
		return "warning"
	}
	return "notice"
}

// A Replacer makes one pass, so the % of an escape it writes is never escaped again.
var (
	dataEscaper     = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	propertyEscaper = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
)

func escapeData(s string) string     { return dataEscaper.Replace(s) }
func escapeProperty(s string) string { return propertyEscaper.Replace(s) }

// WriteRulesJSON writes the rule table as `meshc lint --list --format json` prints it, a stable
// shape like the findings':
//
//	{"rules": [{"id": "yaml", "severity": "error", "summary": "…", "why": "…",
//	            "configurable": false, "help": "https://…/docs/rules.md#yaml"}]}
//
// configurable says whether mesh.yaml's lint.rules and # meshc:ignore may change the rule.
func WriteRulesJSON(w io.Writer) error {
	type jsonRule struct {
		ID           string `json:"id"`
		Severity     string `json:"severity"`
		Summary      string `json:"summary"`
		Why          string `json:"why"`
		Configurable bool   `json:"configurable"`
		Help         string `json:"help"`
	}
	out := struct {
		Rules []jsonRule `json:"rules"`
	}{Rules: make([]jsonRule, 0, len(Rules))}
	for _, r := range Rules {
		out.Rules = append(out.Rules, jsonRule{ID: r.ID, Severity: r.Severity.String(), Summary: r.Summary, Why: r.Why,
			Configurable: !r.Firm && !slices.Contains(breakRules, r), Help: RulesDoc + "#" + r.ID})
	}
	return output.WriteJSON(w, out)
}
