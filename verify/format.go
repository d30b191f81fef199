package verify

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"

	"github.com/meshc-dev/meshc/internal/buildinfo"
	"github.com/meshc-dev/meshc/internal/output"
	"github.com/meshc-dev/meshc/internal/safetext"
)

// Formats are how `meshc verify` writes its result: text for people, JSON for scripts (the
// Result type, its shape only growing), SARIF for code scanning (a failure is an alert at the
// golden file's line that let the try through).
var Formats = []output.Format{output.Text, output.JSON, output.SARIF}

// Write writes a result in format f.
func Write(w io.Writer, f output.Format, r *Result) error {
	switch f {
	case output.Text:
		return writeText(w, r)
	case output.JSON:
		return output.WriteJSON(w, r)
	case output.SARIF:
		return writeSARIF(w, r)
	}
	return fmt.Errorf("verify: no writer for format %v", f)
}

// writeText says what was proven and how, class by class, then each failure as
// `file:line: error: class: message`, then a count.
func writeText(w io.Writer, r *Result) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "proved %s as %d principals (%s, auth: %s)\n", safetext.Line(r.Target), len(r.Principals), r.Isolation, r.Auth)
	if len(r.Unproven) > 0 {
		fmt.Fprintf(bw, "  not proven, no credentials given: %s\n", safetext.Line(strings.Join(r.Unproven, ", ")))
	}
	for _, c := range r.Classes {
		said := c.Said
		if c.Skipped != "" {
			said = "not tried: " + c.Skipped
		}
		if c.Failed > 0 {
			said = fmt.Sprintf("%d of %d tries failed", c.Failed, c.Tries)
		}
		fmt.Fprintf(bw, "  %-16s %s\n", c.Class, safetext.Line(said))
	}
	for _, f := range r.Failures {
		fmt.Fprintf(bw, "%s: error: %s: %s\n", safetext.Line(place(f)), f.Class, safetext.Line(said(f)))
	}
	switch n := len(r.Failures); n {
	case 0:
		fmt.Fprintln(bw, "no failures: least privilege holds as the catalogue derives it")
	case 1:
		fmt.Fprintln(bw, "1 failure")
	default:
		fmt.Fprintf(bw, "%d failures\n", n)
	}
	return bw.Flush()
}

// place is where a failure is, as `file:line`, slash-separated.
func place(f Failure) string {
	p := filepath.ToSlash(f.File)
	if f.Line > 0 {
		p += ":" + strconv.Itoa(f.Line)
	}
	return p
}

// said is a failure's message with the grant that let it through, when one is named.
func said(f Failure) string {
	if f.Grant == "" || strings.Contains(f.Message, f.Grant) {
		return f.Message
	}
	return fmt.Sprintf("%s (golden files: %s)", f.Message, f.Grant)
}

// writeSARIF writes one run whose driver lists every class as a rule.
func writeSARIF(w io.Writer, r *Result) error {
	run := sarif.NewRun()
	run.Tool = sarif.NewTool()
	run.Tool.Driver = sarif.NewToolComponent().WithName("meshc verify").
		WithVersion(buildinfo.Version()).
		WithInformationURI("https://github.com/meshc-dev/meshc")
	for _, c := range Classes {
		run.Tool.Driver.AddRule(sarif.NewRule(c.ID).
			WithName(c.ID).
			WithShortDescription(sarif.NewMultiformatMessageString().WithText(c.Summary)).
			WithFullDescription(sarif.NewMultiformatMessageString().WithText(c.Why)).
			WithHelp(sarif.NewMultiformatMessageString().WithText(c.Summary + ". " + c.Why)).
			WithDefaultConfiguration(sarif.NewReportingConfiguration().WithLevel(sarif.LevelError)))
	}
	for _, f := range r.Failures {
		res := run.CreateResultForRule(f.Class).
			WithLevel(sarif.LevelError).
			WithMessage(sarif.NewTextMessage(said(f)))
		res.Properties = sarif.NewPropertyBag()
		res.Properties.Add("principal", f.Principal)
		res.Properties.Add("subject", f.Subject)
		res.Properties.Add("grant", f.Grant)
		if f.File != "" {
			uri := filepath.ToSlash(f.File)
			artifact := sarif.NewArtifactLocation().WithURI((&url.URL{Path: uri}).String())
			if !filepath.IsAbs(f.File) {
				artifact.WithURIBaseID("%SRCROOT%")
			}
			phys := sarif.NewPhysicalLocation().WithArtifactLocation(artifact)
			if f.Line >= 1 {
				phys.WithRegion(sarif.NewRegion().WithStartLine(f.Line))
			}
			res.AddLocation(sarif.NewLocationWithPhysicalLocation(phys))
		}
	}
	var buf bytes.Buffer
	if err := sarif.NewReport().AddRun(run).PrettyWrite(&buf); err != nil {
		return err
	}
	buf.WriteString("\n")
	_, err := w.Write(safetext.JSON(buf.Bytes()))
	return err
}
