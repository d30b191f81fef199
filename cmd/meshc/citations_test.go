package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// TestCommentsCiteTheRepository keeps every file of the repository citing what a maintainer can
// open: no comment, test message or page may cite the documents the project was first written
// from (their facts are in docs/), and every citation of a page's section — `(docs/nats.md,
// "Config quoting")` in code, `docs/nats.md#config-quoting` or a markdown link — names a heading
// that page has, so a renamed section breaks here rather than in a reader's hands.
func TestCommentsCiteTheRepository(t *testing.T) {
	t.Parallel()
	problems := citationProblems(t, "../..")
	for _, p := range problems {
		t.Error(p)
	}
}

// The checker fires on each kind of bad citation and passes good ones.
func TestCitationCheckFiresAndStaysQuiet(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(name, text string) { writeFile(t, root, name, text) }
	write("docs/nats.md", "# What meshc relies on\n\n## Config quoting\n\n```\n## Not a heading\n```\n\n### Ack subjects\n\n## Ack subjects\n")
	write("README.md", "# meshc\n\n### Exit status\n\nSee [quoting](docs/nats.md#config-quoting) and [here](#exit-status).\n")
	write("good/good.go", "package good\n\n// Quoted (docs/nats.md, \"Config\n// quoting\"), acked (docs/nats.md, \"Ack subjects\"), exited (README.md, \"Exit status\").\n"+
		"// Twice: docs/nats.md#ack-subjects and docs/nats.md#ack-subjects-1; a URL is not ours:\n// https://example.com/docs/nats.md#nowhere.\n")
	write("docs/good.md", "# Good\n\n[ack](nats.md#ack-subjects), [top](#good), [quoting](nats.md#config-quoting). Bounded since issue 16.\n")
	write("good/issue.go", "package good\n\n// Issue mints a user; its issuer signs, the issue time stamped.\nfunc Issue() {}\n")
	if p := citationProblems(t, root); len(p) > 0 {
		t.Fatalf("good citations were refused:\n%s", strings.Join(p, "\n"))
	}

	bad := map[string]string{
		"a.go":         "// the server refuses it (NATS-FACTS §5)\n",
		"b.go":         "// the grammars of SPEC §1\n",
		"c.go":         "// what it takes (§12)\n",
		"d.txtar":      "the crash loop of seed 003\n",
		"e.md":         "told in [the seeds](seeds/003.txt)\n",
		"f.go":         "// as design 29 decided\n",
		"g.go":         "// (docs/nats.md, \"Config quotes\")\n",
		"h.go":         "// (docs/nats.md, \"Config quoting\" and \"Ack subject\")\n",
		"i.go":         "// docs/nats.md#config-quotes\n",
		"j.go":         "// (docs/natz.md, \"Config quoting\")\n",
		"docs/k.md":    "[quoting](nats.md#quoting)\n",
		"l.md":         "[exit](README.md#exit)\n",
		"README.md":    "# meshc\n\n### Exit status\n\n[here](#exit-codes)\n",
		"m.go":         "// (README.md, \"Not a heading\")\n",
		"n/deep/o.yml": "# (docs/nats.md, \"Reload\")\n",
		"p_test.go":    "// The issue's case: a stream left behind\n",
		"q.go":         "// bounded since issue 16\n",
	}
	for name, text := range bad {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			writeFile(t, root, "docs/nats.md", "# What meshc relies on\n\n## Config quoting\n\n```\n## Not a heading\n```\n\n## Ack subjects\n")
			writeFile(t, root, "README.md", "# meshc\n\n### Exit status\n")
			writeFile(t, root, name, text)
			p := citationProblems(t, root)
			if len(p) == 0 {
				t.Errorf("%s (%q) passed", name, text)
			}
			for _, p := range p {
				if !strings.HasPrefix(p, name+":") {
					t.Errorf("%s (%q): a problem elsewhere: %s", name, text, p)
				}
			}
		})
	}
}

func writeFile(t *testing.T, root, name, text string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// outside are the ways the documents outside the repository were cited.
var outside = []*regexp.Regexp{
	regexp.MustCompile(`NATS-FACTS`),
	regexp.MustCompile(`\bSPEC(\.md| ?§)`),
	regexp.MustCompile(`§ ?\d+`),
	regexp.MustCompile(`\bseeds/`),
	regexp.MustCompile(`\bseed 0\d\d\b`),
	regexp.MustCompile(`\bdesign \d+\b`),
	regexp.MustCompile(`/work/shared|\bSTYLE\.md|facts/operator-mode`),
}

// anIssue is how code and tests cited the issue they were written for. The history pages
// (docs/history.md, BENCHMARKS.md) may date a change by its issue; code says what it handles.
var anIssue = regexp.MustCompile(`\b[Tt]he issue\b|\b[Ii]ssue \d+\b`)

var (
	// page is a page a citation may name: the README, BENCHMARKS.md, or one under docs/.
	page = `((?:docs/)?[A-Za-z0-9_-]+\.md)`
	// (docs/nats.md, "Config quoting"), and in a Go string (docs/nats.md, \"Config quoting\"); more
	// than one section as (docs/nats.md, "Streams" and "Consumers").
	bySection = regexp.MustCompile(`(?:^|[^A-Za-z0-9_/.-])` + page + `, ((?:\\?"[^"\\]+\\?"(?:,? and |, )?)+)`)
	quoted    = regexp.MustCompile(`\\?"([^"\\]+)\\?"`)
	// docs/nats.md#config-quoting, never inside a URL.
	byAnchor = regexp.MustCompile(`(?:^|[^A-Za-z0-9_/.:-])` + page + `#([A-Za-z0-9_-]+)`)
	// [text](nats.md#config-quoting) or [text](#config-quoting), relative to the page it is in.
	mdLink = regexp.MustCompile(`\]\(([A-Za-z0-9_./-]*\.md)?#([A-Za-z0-9_-]+)\)`)
	// A comment's or a paragraph's line break, so a citation wrapped across lines is read whole.
	lineBreak = regexp.MustCompile(`[ \t]*\n[ \t]*(?://[ \t]?|#[ \t]?)?`)
)

// citationProblems reads every text file under root and says where one cites a document outside
// the repository or a section a page does not have.
func citationProblems(t *testing.T, root string) []string {
	t.Helper()
	pages := map[string]*headings{}
	section := func(name string) *headings {
		if h, ok := pages[name]; ok {
			return h
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		var h *headings
		if err == nil {
			h = readHeadings(string(data))
		}
		pages[name] = h
		return h
	}
	self := "cmd/meshc/citations_test.go" // holds the patterns it looks for
	var problems []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (d.Name() == ".git" || d.Name() == ".meshc" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == self {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.IndexByte(data, 0) >= 0 || len(data) > 4<<20 {
			return nil // not text
		}
		text, lineOf := flatten(string(data))
		say := func(at int, format string, args ...any) {
			problems = append(problems, fmt.Sprintf("%s:%d: ", rel, lineOf(at))+fmt.Sprintf(format, args...))
		}
		for _, re := range outside {
			for _, m := range re.FindAllStringIndex(text, -1) {
				say(m[0], "%q cites a document outside the repository: cite the docs/ page and section that holds the fact (add it there if it is missing)", text[m[0]:m[1]])
			}
		}
		if strings.HasSuffix(rel, ".go") {
			for _, m := range anIssue.FindAllStringIndex(text, -1) {
				if strings.HasPrefix(text[m[1]:], " time") {
					continue // a JWT's issue time
				}
				say(m[0], "%q cites an issue, which a reader of the code cannot open: say the case (what happens, to whom), or cite the docs/ section that tells it", text[m[0]:m[1]])
			}
		}
		for _, m := range bySection.FindAllStringSubmatchIndex(text, -1) {
			name := text[m[2]:m[3]]
			h := section(name)
			for _, q := range quoted.FindAllStringSubmatch(text[m[4]:m[5]], -1) {
				switch {
				case h == nil:
					say(m[2], "cites %s, which is not a page of the repository", name)
				case !slices.Contains(h.texts, q[1]):
					say(m[2], "cites %s, %q, a section that page does not have%s", name, q[1], h.nearest(q[1]))
				}
			}
		}
		var anchors [][]int
		if strings.HasSuffix(rel, ".md") {
			anchors = mdLink.FindAllStringSubmatchIndex(text, -1)
		} else {
			anchors = byAnchor.FindAllStringSubmatchIndex(text, -1)
		}
		for _, m := range anchors {
			name, anchor := rel, text[m[4]:m[5]]
			if m[2] >= 0 {
				name = text[m[2]:m[3]]
				if strings.HasSuffix(rel, ".md") {
					name = path.Join(path.Dir(rel), name)
				}
			}
			switch h := section(name); {
			case h == nil:
				say(m[0], "links to %s, which is not a page of the repository", name)
			case !slices.Contains(h.anchors, anchor):
				say(m[0], "links to %s#%s, an anchor that page does not have%s", name, anchor, h.nearest(anchor))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return problems
}

// flatten joins a file's lines, dropping the comment marker that starts each, so that a citation
// wrapped across lines reads as one; lineOf maps an offset in the result back to a line.
func flatten(src string) (text string, lineOf func(int) int) {
	var b strings.Builder
	var starts []int // offsets in b at which each line after the first begins
	last := 0
	for _, m := range lineBreak.FindAllStringIndex(src, -1) {
		b.WriteString(src[last:m[0]])
		b.WriteByte(' ')
		starts = append(starts, b.Len())
		last = m[1]
	}
	b.WriteString(src[last:])
	return b.String(), func(at int) int {
		n, _ := slices.BinarySearch(starts, at+1)
		return n + 1
	}
}

// headings are a markdown page's section headings and the anchors GitHub gives them.
type headings struct{ texts, anchors []string }

func readHeadings(md string) *headings {
	h := &headings{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~") {
			fenced = !fenced
			continue
		}
		level := len(line) - len(strings.TrimLeft(line, "#"))
		if fenced || level == 0 || level > 6 || !strings.HasPrefix(line[level:], " ") {
			continue
		}
		text := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(line[level:]), "#"))
		a := anchorOf(text)
		if n := seen[a]; n > 0 {
			seen[a] = n + 1
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		h.texts = append(h.texts, text)
		h.anchors = append(h.anchors, a)
	}
	return h
}

// anchorOf is the anchor GitHub gives a heading: lower case, spaces as hyphens, and nothing but
// letters, digits, hyphens and underscores kept. A repeated heading's anchor gets -1, -2, ….
func anchorOf(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// nearest names the page's sections whose anchor shares the cited one's first word, as a hint.
func (h *headings) nearest(cited string) string {
	first, _, _ := strings.Cut(anchorOf(cited), "-")
	var near []string
	for i, a := range h.anchors {
		if strings.HasPrefix(a, first) {
			near = append(near, fmt.Sprintf("%q", h.texts[i]))
		}
	}
	if len(near) == 0 {
		return ""
	}
	return " (it has " + strings.Join(near, ", ") + ")"
}
