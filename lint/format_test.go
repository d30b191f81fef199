package lint

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/internal/output"
)

// sample is out of order on purpose: every format must sort.
var sample = catalogue.Findings{
	{
		Pos: catalogue.Pos{File: "modules/photos.yaml", Line: 4, Col: 3}, Rule: "seat-duplicate", Severity: catalogue.Error,
		Message: "seat image-store is declared twice; keep one declaration",
		Related: []catalogue.Related{{Pos: catalogue.Pos{File: "modules/builder.yaml", Line: 9, Col: 5}, Message: "first declared here"}},
	},
	{
		Pos: catalogue.Pos{File: "modules/builder.yaml", Line: 7, Col: 5}, Rule: "seat-renamed", Severity: catalogue.Warning,
		Message: "git-server is mesh-git's old name; write mesh-git",
	},
	{
		Pos: catalogue.Pos{File: "modules/builder.yaml", Line: 3}, Rule: "event-unheard", Severity: catalogue.Info,
		Message: "nobody consumes builder's event image.pushed",
	},
}

func write(t *testing.T, f output.Format, findings catalogue.Findings) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, f, findings); err != nil {
		t.Fatalf("Write(%v): %v", f, err)
	}
	return buf.String()
}

func TestText(t *testing.T) {
	got := write(t, output.Text, sample)
	want := "modules/builder.yaml:3: info: event-unheard: nobody consumes builder's event image.pushed\n" +
		"modules/builder.yaml:7:5: warning: seat-renamed: git-server is mesh-git's old name; write mesh-git\n" +
		"modules/photos.yaml:4:3: error: seat-duplicate: seat image-store is declared twice; keep one declaration\n" +
		"\tmodules/builder.yaml:9:5: first declared here\n" +
		"1 error, 1 warning, 1 info\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("text output (-want +got):\n%s", diff)
	}
}

func TestTextQuiet(t *testing.T) {
	if got := write(t, output.Text, nil); got != "" {
		t.Errorf("no findings wrote %q, want nothing", got)
	}
}

func TestTextOneLinePerFinding(t *testing.T) {
	got := write(t, output.Text, catalogue.Findings{{Pos: catalogue.Pos{File: "mesh.yaml", Line: 1, Col: 1}, Rule: "yaml", Severity: catalogue.Error, Message: "bad\nmesh.yaml:2:1: error: yaml: forged"}})
	if n := strings.Count(got, "\n"); n != 2 {
		t.Errorf("a message holding a newline gave %d lines, want the finding and the summary:\n%s", n, got)
	}
}

func TestSummary(t *testing.T) {
	fs := catalogue.Findings{
		{Severity: catalogue.Error}, {Severity: catalogue.Error}, {Severity: catalogue.Warning},
	}
	if got, want := Summary(fs), "2 errors, 1 warning, 0 info"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	if got, want := Summary(nil), "0 errors, 0 warnings, 0 info"; got != want {
		t.Errorf("Summary(nil) = %q, want %q", got, want)
	}
}

// TestJSONShape pins the documented shape: key names, types, order of findings, and [] for
// "none", so a script written against it keeps working.
func TestJSONShape(t *testing.T) {
	var got any
	if err := json.Unmarshal([]byte(write(t, output.JSON, sample)), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"findings": []any{
			map[string]any{
				"file": "modules/builder.yaml", "line": 3.0, "column": 0.0, "severity": "info",
				"rule": "event-unheard", "message": "nobody consumes builder's event image.pushed", "related": []any{},
			},
			map[string]any{
				"file": "modules/builder.yaml", "line": 7.0, "column": 5.0, "severity": "warning",
				"rule": "seat-renamed", "message": "git-server is mesh-git's old name; write mesh-git", "related": []any{},
			},
			map[string]any{
				"file": "modules/photos.yaml", "line": 4.0, "column": 3.0, "severity": "error",
				"rule": "seat-duplicate", "message": "seat image-store is declared twice; keep one declaration",
				"related": []any{map[string]any{"file": "modules/builder.yaml", "line": 9.0, "column": 5.0, "message": "first declared here"}},
			},
		},
		"summary": map[string]any{"errors": 1.0, "warnings": 1.0, "info": 1.0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("json shape (-want +got):\n%s", diff)
	}
}

func TestJSONQuiet(t *testing.T) {
	got := write(t, output.JSON, nil)
	want := "{\n  \"findings\": [],\n  \"summary\": {\n    \"errors\": 0,\n    \"warnings\": 0,\n    \"info\": 0\n  }\n}\n"
	if got != want {
		t.Errorf("no findings wrote\n%s\nwant\n%s", got, want)
	}
}

func TestJSONKeepsSubjectsReadable(t *testing.T) {
	got := write(t, output.JSON, catalogue.Findings{{Pos: catalogue.Pos{File: "mesh.yaml"}, Rule: "no-subject", Message: "_INBOX.x.> & <y>"}})
	if !strings.Contains(got, `"_INBOX.x.> & <y>"`) {
		t.Errorf("message was HTML-escaped:\n%s", got)
	}
}

// readSARIF decodes written bytes the way a consumer would and validates them against the
// SARIF 2.1.0 schema. go-sarif validates a Report value, so the decoded value must re-encode
// to exactly the bytes written: otherwise the validation would be of something else.
func readSARIF(t *testing.T, out string) *sarif.Report {
	t.Helper()
	report, err := sarif.FromBytes([]byte(out), sarif.WithStrictValidation())
	if err != nil {
		t.Fatalf("decoding the SARIF written: %v", err)
	}
	again, err := json.Marshal(report)
	if err != nil {
		t.Fatal(err)
	}
	var written, reencoded any
	if err := json.Unmarshal([]byte(out), &written); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(again, &reencoded); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(written, reencoded); diff != "" {
		t.Fatalf("the decoded report is not what was written, so validating it proves nothing (-written +decoded):\n%s", diff)
	}
	if err := report.Validate(); err != nil {
		t.Fatalf("SARIF written is not valid 2.1.0: %v\n%s", err, out)
	}
	return report
}

func TestSARIF(t *testing.T) {
	out := write(t, output.SARIF, sample)
	if again := write(t, output.SARIF, sample); again != out {
		t.Fatal("SARIF output differs between two writes of the same findings")
	}
	report := readSARIF(t, out)
	if len(report.Runs) != 1 {
		t.Fatalf("%d runs, want 1", len(report.Runs))
	}
	run := report.Runs[0]
	if got := *run.Tool.Driver.Name; got != "meshc" {
		t.Errorf("driver name %q", got)
	}

	// Every rule is described, with its level, whether it fired or not.
	if len(run.Tool.Driver.Rules) != len(Rules) {
		t.Errorf("%d rules described, want all %d", len(run.Tool.Driver.Rules), len(Rules))
	}
	for i, r := range Rules {
		d := run.Tool.Driver.Rules[i]
		if *d.ID != r.ID || *d.ShortDescription.Text != r.Summary || *d.FullDescription.Text != r.Why ||
			d.DefaultConfiguration.Level != sarifLevel(r.Severity) {
			t.Errorf("rule %d described as %s/%q/%s, want %s", i, *d.ID, *d.ShortDescription.Text, d.DefaultConfiguration.Level, r.ID)
		}
	}

	type place struct {
		URI, Base    string
		Line, Column int
		Message      string
	}
	placeOf := func(l *sarif.Location) place {
		p := place{URI: *l.PhysicalLocation.ArtifactLocation.URI, Base: *l.PhysicalLocation.ArtifactLocation.URIBaseID}
		if reg := l.PhysicalLocation.Region; reg != nil {
			p.Line = *reg.StartLine
			if reg.StartColumn != nil {
				p.Column = *reg.StartColumn
			}
		}
		if l.Message != nil {
			p.Message = *l.Message.Text
		}
		return p
	}
	type result struct {
		Rule, Level, Message string
		RuleIndex            int
		At                   place
		Related              []place
	}
	var got []result
	for _, r := range run.Results {
		res := result{Rule: *r.RuleID, Level: r.Level, Message: *r.Message.Text, RuleIndex: r.RuleIndex, At: placeOf(r.Locations[0])}
		for _, rl := range r.RelatedLocations {
			res.Related = append(res.Related, placeOf(rl))
		}
		got = append(got, res)
	}
	index := func(id string) int {
		for i, r := range Rules {
			if r.ID == id {
				return i
			}
		}
		t.Fatalf("rule %s is not in the table", id)
		return -1
	}
	want := []result{
		{"event-unheard", "note", "nobody consumes builder's event image.pushed", index("event-unheard"),
			place{"modules/builder.yaml", "%SRCROOT%", 3, 0, ""}, nil},
		{"seat-renamed", "warning", "git-server is mesh-git's old name; write mesh-git", index("seat-renamed"),
			place{"modules/builder.yaml", "%SRCROOT%", 7, 5, ""}, nil},
		{"seat-duplicate", "error", "seat image-store is declared twice; keep one declaration", index("seat-duplicate"),
			place{"modules/photos.yaml", "%SRCROOT%", 4, 3, ""},
			[]place{{"modules/builder.yaml", "%SRCROOT%", 9, 5, "first declared here"}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
}

// TestSARIFUnknownPlaces checks that what is unknown is left out, not written as 0 (which the
// schema refuses), and that odd paths stay valid URIs.
func TestSARIFUnknownPlaces(t *testing.T) {
	out := write(t, output.SARIF, catalogue.Findings{
		{Pos: catalogue.Pos{File: "mesh.yaml"}, Rule: "yaml", Severity: catalogue.Error, Message: "is empty"},
		{Pos: catalogue.Pos{File: "my modules/a%b.yaml", Line: 2}, Rule: "name", Severity: catalogue.Error, Message: "bad name"},
		{Pos: catalogue.Pos{File: "/abs/cat/mesh.yaml", Line: 1, Col: 1}, Rule: "yaml", Severity: catalogue.Error, Message: "x"},
		{Pos: catalogue.Pos{}, Rule: "yaml", Severity: catalogue.Error, Message: "nowhere"},
	})
	run := readSARIF(t, out).Runs[0]
	byMessage := map[string]*sarif.Result{}
	for _, r := range run.Results {
		byMessage[*r.Message.Text] = r
	}
	if reg := byMessage["is empty"].Locations[0].PhysicalLocation.Region; reg != nil {
		t.Errorf("a position with no line has a region: %+v", reg)
	}
	odd := byMessage["bad name"].Locations[0].PhysicalLocation
	if *odd.ArtifactLocation.URI != "my%20modules/a%25b.yaml" || odd.Region.StartColumn != nil {
		t.Errorf("odd path written as %q, column %v", *odd.ArtifactLocation.URI, odd.Region.StartColumn)
	}
	abs := byMessage["x"].Locations[0].PhysicalLocation.ArtifactLocation
	if *abs.URI != "file:///abs/cat/mesh.yaml" || abs.URIBaseID != nil {
		t.Errorf("absolute path written as %q base %v", *abs.URI, abs.URIBaseID)
	}
	if n := len(byMessage["nowhere"].Locations); n != 0 {
		t.Errorf("a finding with no file has %d locations", n)
	}
}

func TestSARIFQuiet(t *testing.T) {
	run := readSARIF(t, write(t, output.SARIF, nil)).Runs[0]
	if run.Results == nil || len(run.Results) != 0 {
		t.Errorf("no findings gave results %v, want an empty list (an empty list means a clean scan)", run.Results)
	}
	if len(run.Tool.Driver.Rules) != len(Rules) {
		t.Errorf("no findings described %d rules, want all %d", len(run.Tool.Driver.Rules), len(Rules))
	}
}

func TestGitHub(t *testing.T) {
	got := write(t, output.GitHub, sample)
	want := "::notice file=modules/builder.yaml,line=3,title=event-unheard::nobody consumes builder's event image.pushed\n" +
		"::warning file=modules/builder.yaml,line=7,col=5,title=seat-renamed::git-server is mesh-git's old name; write mesh-git\n" +
		"::error file=modules/photos.yaml,line=4,col=3,title=seat-duplicate::seat image-store is declared twice; keep one declaration%0Amodules/builder.yaml:9:5: first declared here\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("github output (-want +got):\n%s", diff)
	}
}

// TestGitHubEscaping: an unescaped newline ends the command early and an unescaped comma or
// colon in a property starts a new property; % is escaped so the runner's unescaping gives back
// exactly what was written. A control character from the catalogue is first written as an escape
// (logSafe), so the only newline the runner decodes is ours, before a related place.
func TestGitHubEscaping(t *testing.T) {
	got := write(t, output.GitHub, catalogue.Findings{{
		Pos:  catalogue.Pos{File: "modules/a,b:c%.yaml", Line: 1, Col: 2},
		Rule: "yaml", Severity: catalogue.Error, Message: "100% wrong:\r\nnext, line",
		Related: []catalogue.Related{{Pos: catalogue.Pos{File: "mesh.yaml", Line: 3}, Message: "here"}},
	}})
	want := "::error file=modules/a%2Cb%3Ac%25.yaml,line=1,col=2,title=yaml::100%25 wrong:\\r\\nnext, line%0Amesh.yaml:3: here\n"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := write(t, output.GitHub, catalogue.Findings{{Rule: "yaml", Severity: catalogue.Error, Message: "m"}}); got != "::error title=yaml::m\n" {
		t.Errorf("a finding with no file wrote %q", got)
	}
}

func TestGitHubQuiet(t *testing.T) {
	if got := write(t, output.GitHub, nil); got != "" {
		t.Errorf("no findings wrote %q, want nothing", got)
	}
}

// TestSARIFValidationBites proves the validation above is not vacuous: the same log with a
// line SARIF forbids is refused.
func TestSARIFValidationBites(t *testing.T) {
	out := write(t, output.SARIF, sample)
	broken := strings.Replace(out, `"startLine": 3`, `"startLine": 0`, 1)
	if broken == out {
		t.Fatal("the log has no startLine 3 to break")
	}
	report, err := sarif.FromBytes([]byte(broken), sarif.WithStrictValidation())
	if err != nil {
		t.Fatal(err)
	}
	if err := report.Validate(); err == nil {
		t.Error("a region with startLine 0 validated")
	}
}

// Code scanning names the tool by its version and links each rule to its explanation.
func TestSARIFNamesTheToolAndLinksTheRules(t *testing.T) {
	report := readSARIF(t, write(t, output.SARIF, nil))
	d := report.Runs[0].Tool.Driver
	if d.Version == nil || *d.Version == "" || d.InformationURI == nil || *d.InformationURI != Home {
		t.Errorf("driver version %v, informationUri %v", d.Version, d.InformationURI)
	}
	for _, r := range d.Rules {
		if r.HelpURI == nil || *r.HelpURI != RulesDoc+"#"+*r.ID {
			t.Errorf("rule %s: helpUri %v", *r.ID, r.HelpURI)
		}
	}
}
