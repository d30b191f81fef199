package cataloguetest

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/meshc-dev/meshc/catalogue"
)

// A test catalogue may say on its offending lines which findings it expects, in the style of
// golang.org/x/tools' analysistest:
//
//	emits: [Built]   # want @Built "name: not an event name"
//
// Each expectation is an optional anchor and a Go-quoted "rule: regexp". The anchor fixes the
// column: @word or @"some text" is where that text first starts on the line, a bare @7 is
// column 7; without one the finding must carry no column. ~"file:line:col" after an expectation
// lists a related place, in order; without any, the finding must have none. A whole-line comment
// `# want-file "rule: regexp"` expects a finding about the file itself (no line).
//
// Check then requires every finding to be wanted and every want found: a check that fires where
// it should not is caught as surely as one that stays quiet where it should fire.

// Want is one expectation: a finding of Rule at File:Line:Col whose message matches.
type Want struct {
	File      string
	Line, Col int
	Rule      string
	// Related are the related places the finding must name, in order.
	Related []string
	re      *regexp.Regexp
	// text is the expectation as written, for failure messages.
	text string
}

func (w Want) String() string {
	return fmt.Sprintf("%s:%d:%d: %s", w.File, w.Line, w.Col, w.text)
}

var wantRE = regexp.MustCompile(`#\s*want(-file)?\s`)

// Wants reads every expectation in an archive's files.
func Wants(t testing.TB, a *txtar.Archive) []*Want {
	t.Helper()
	var out []*Want
	for _, f := range a.Files {
		for i, line := range strings.Split(string(f.Data), "\n") {
			loc := wantRE.FindStringSubmatchIndex(line)
			if loc == nil {
				continue
			}
			content, rest := line[:loc[0]], line[loc[1]:]
			fileLevel := loc[2] >= 0
			ws, err := parseExpectations(f.Name, i+1, content, rest, fileLevel)
			if err != nil {
				t.Fatalf("%s:%d: %v", f.Name, i+1, err)
			}
			out = append(out, ws...)
		}
	}
	return out
}

func parseExpectations(file string, line int, content, rest string, fileLevel bool) ([]*Want, error) {
	var out []*Want
	col := 0
	for rest = strings.TrimSpace(rest); rest != ""; rest = strings.TrimSpace(rest) {
		switch rest[0] {
		case '@':
			quoted := strings.HasPrefix(rest[1:], `"`)
			anchor, tail, err := word(rest[1:])
			if err != nil {
				return nil, err
			}
			if n, err := strconv.Atoi(anchor); err == nil && !quoted {
				col = n
			} else if i := strings.Index(content, anchor); i >= 0 {
				col = i + 1
			} else {
				return nil, fmt.Errorf("anchor %q is not on the line", anchor)
			}
			rest = tail
		case '~':
			pos, tail, err := word(rest[1:])
			if err != nil {
				return nil, err
			}
			if len(out) == 0 {
				return nil, fmt.Errorf("~%q follows no expectation", pos)
			}
			last := out[len(out)-1]
			last.Related = append(last.Related, pos)
			rest = tail
		default:
			text, tail, err := word(rest)
			if err != nil {
				return nil, err
			}
			rule, expr, ok := strings.Cut(text, ":")
			expr = strings.TrimPrefix(expr, " ")
			if !ok {
				return nil, fmt.Errorf("expectation %q is not \"rule: regexp\"", text)
			}
			re, err := regexp.Compile(expr)
			if err != nil {
				return nil, err
			}
			w := &Want{File: file, Line: line, Col: col, Rule: rule, re: re, text: text}
			if fileLevel {
				w.Line, w.Col = 0, 0
			}
			out = append(out, w)
			col = 0
			rest = tail
		}
	}
	return out, nil
}

// word reads one Go-quoted string or one bare word.
func word(s string) (string, string, error) {
	if s != "" && (s[0] == '"' || s[0] == '`') {
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return "", "", err
		}
		v, err := strconv.Unquote(q)
		return v, s[len(q):], err
	}
	end := strings.IndexAny(s, " \t")
	if end < 0 {
		end = len(s)
	}
	return s[:end], s[end:], nil
}

// Check requires findings to be exactly the wanted ones. A finding the catalogue silenced is not
// reported, so it is not wanted either.
func Check(t testing.TB, findings catalogue.Findings, wants []*Want) {
	t.Helper()
	matched := make([]bool, len(wants))
	for _, f := range findings {
		if f.Suppressed != nil {
			continue
		}
		var related []string
		for _, r := range f.Related {
			related = append(related, r.Pos.String())
		}
		i := -1
		for j, w := range wants {
			if !matched[j] && w.File == f.Pos.File && w.Line == f.Pos.Line && w.Col == f.Pos.Col &&
				w.Rule == f.Rule && w.re.MatchString(f.Message) {
				i = j
				break
			}
		}
		if i < 0 {
			t.Errorf("unexpected finding: %s", f)
			continue
		}
		matched[i] = true
		if !slices.Equal(related, wants[i].Related) {
			t.Errorf("%s: related %q, want %q", f, related, wants[i].Related)
		}
	}
	for i, w := range wants {
		if !matched[i] {
			t.Errorf("no finding matched %s", w)
		}
	}
}
