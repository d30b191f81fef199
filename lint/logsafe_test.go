package lint

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/internal/output"
)

// githubCommandLine is the only line allowed to start with "::": one of ours, with its
// properties escaped so that nothing from the catalogue ends them early.
var githubCommandLine = regexp.MustCompile(`^::(error|warning|notice) [^:\n]*::[^\n]*$`)

// checkLogSafe fails when output in format f could act as a workflow command in a CI log or
// move a terminal's cursor: a line starting with "::" that is not one of ours, "##[" anywhere,
// a control character other than a line's end (and the text format's indenting tab).
func checkLogSafe(t *testing.T, f output.Format, out string, findings int) {
	t.Helper()
	if strings.Contains(out, "##[") {
		t.Errorf("%v output carries ##[:\n%s", f, out)
	}
	commands := 0
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if strings.HasPrefix(strings.TrimLeftFunc(line, unicode.IsSpace), "::") {
			if f != output.GitHub || !githubCommandLine.MatchString(line) {
				t.Errorf("%v output has a line a runner reads as a workflow command: %q", f, line)
			}
			commands++
		}
		for _, r := range line {
			if (unicode.IsControl(r) && r != '\t') || r == utf8.RuneError || r == '\u2028' || r == '\u2029' {
				t.Errorf("%v output carries %U raw: %q", f, r, line)
			}
		}
	}
	if f == output.GitHub && commands != findings {
		t.Errorf("github output has %d commands for %d findings:\n%s", commands, findings, out)
	}
}

// Whatever a manifest (and its file name) holds, no output format lets it write a workflow
// command into a CI log or an escape sequence onto a terminal. `go test` runs the seeds;
// `go test -fuzz FuzzOutputIsSafeInACILog ./lint/` explores further.
func FuzzOutputIsSafeInACILog(f *testing.F) {
	f.Add("builder", []byte("module: builder\nemits: [built]\n"))
	f.Add("forged\n::error file=x::owned", []byte("module: \"##[error]forged\"\n"))
	f.Add("esc", []byte("module: \"\\e[2J\\e[1;1Hclean\"\nemits: [\"\\r::warning::x\"]\n"))
	f.Add("c1", []byte("module: \"\\u009b2J\\x7f\\u2028::notice::x\"\n"))
	f.Add("##[group]", []byte("module: x\nconsumes: [\"a.##[error]\"]\n\"##[warning]\": 1\n"))
	f.Add("tab", []byte("module: x\n\t::error::tab\n"))
	f.Add("bad\xffutf8", []byte("module: ok\n"))
	f.Fuzz(func(t *testing.T, name string, manifest []byte) {
		if name == "" || name == "." || name == ".." || len(name) > 100 || strings.ContainsAny(name, "/\x00") {
			name = "m"
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "mesh.yaml"), []byte("name: novox\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(dir, "modules"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "modules", name+".yaml"), manifest, 0o644); err != nil {
			t.Skip("the file system refuses this name")
		}
		c, loaded, err := catalogue.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		findings := Run(c, loaded)
		for _, format := range []output.Format{output.Text, output.JSON, output.SARIF, output.GitHub} {
			var buf bytes.Buffer
			if err := Write(&buf, format, findings); err != nil {
				t.Fatal(err)
			}
			checkLogSafe(t, format, buf.String(), len(findings))
		}
	})
}

// The escaping keeps what it escapes readable, and the JSON formats decode to the value itself.
func TestLogSafeEscapes(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                "plain",
		"a\nb":                 `a\nb`,
		"\x1b[2J":              `\x1b[2J`,
		"##[error]x":           `#\x23[error]x`,
		"###[x":                `##\x23[x`,
		"bad\xff":              `bad\xff`,
		"line\u2028separator":  `line\u2028separator`,
		"\u009b":               `\u009b`,
		"modules/ünïcode.yaml": "modules/ünïcode.yaml",
	} {
		if got := logSafe(in); got != want {
			t.Errorf("logSafe(%q) = %q, want %q", in, got, want)
		}
	}
	findings := catalogue.Findings{{Pos: catalogue.Pos{File: "modules/a.yaml"}, Rule: "name", Message: "##[error]\u009b\x7f"}}
	out := write(t, output.JSON, findings)
	checkLogSafe(t, output.JSON, out, 1)
	if !strings.Contains(out, `"message": "##\u005berror]\u009b\u007f"`) {
		t.Errorf("json output:\n%s", out)
	}
}

// No message quotes more than an excerpt of a value, however long the value written: a secret
// pasted where a name belongs reaches a CI log only as its first few characters.
func TestLintMessagesQuoteOnlyAnExcerpt(t *testing.T) {
	long := strings.Repeat("s3cr3t-", 700)
	dir := t.TempDir()
	for name, data := range map[string]string{
		"mesh.yaml":        "name: " + long + "\n",
		"modules/a.yaml":   "module: a\nemits: [" + long + ", \"" + long + "*\", a." + long + "]\nconsumes: [" + long + ", x." + long + ", \"" + long + ".>\"]\ncalls: [" + long + "]\ntools: [\"" + long + ".x\"]\n",
		"modules/b.yaml":   "module: \"" + long + "\"\nclaims: [" + long + "]\n",
		"modules/c.yaml":   "module: c\nconsumes: [a.nope]\ncalls: [a.nope]\n",
		"inventory.yaml":   "nodes:\n  - {name: " + long + ", runs: [" + long + "]}\n",
		"credentials.yaml": "mesh-controller: " + long + "\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, loaded, err := catalogue.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	findings := Run(c, loaded)
	if len(findings) < 8 {
		t.Fatalf("only %d findings; the case needs the long values reported:\n%s", len(findings), findings)
	}
	for _, f := range findings {
		if len(f.Message) > 600 || strings.Contains(f.Message, long[:200]) {
			t.Errorf("%s: %s quotes %d bytes", f.Pos, f.Rule, len(f.Message))
		}
	}
}
