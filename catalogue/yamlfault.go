package catalogue

import (
	"regexp"
	"strconv"
	"strings"
)

// yamlFault places a YAML syntax error at the real fault where it can, and says how to fix the
// known traps. yaml.v3's errors are text with a line and no column, and for an indentation
// fault the line is often one where the parser gave up, above the line that is wrong.
type yamlFault struct {
	line, col int
	msg       string
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// bareStar is a * or ** standing alone where a value starts: YAML reads it as an alias.
var bareStar = regexp.MustCompile(`(?:^|[\[,{:]|- )\s*(\*+)\s*(?:[,\]}]|$|#)`)

func locateYAMLError(data []byte, err error) yamlFault {
	text := err.Error()
	f := yamlFault{msg: strings.TrimPrefix(text, "yaml: ")}
	if m := yamlLine.FindStringSubmatch(text); m != nil {
		f.line, _ = strconv.Atoi(m[1])
		f.msg = m[2]
	}
	lines := strings.Split(string(data), "\n")
	switch {
	case strings.Contains(f.msg, "found character that cannot start any token"):
		// Almost always a tab: the first line indented with one is the fault.
		for i, l := range lines {
			indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
			if tab := strings.IndexByte(indent, '\t'); tab >= 0 {
				return yamlFault{i + 1, tab + 1, f.msg + "; a tab indents this line, and YAML indents with spaces only"}
			}
		}
	case strings.Contains(f.msg, "did not find expected alphabetic or numeric character"):
		if f.line >= 1 && f.line <= len(lines) {
			if m := bareStar.FindStringSubmatchIndex(lines[f.line-1]); m != nil {
				star := lines[f.line-1][m[2]:m[3]]
				return yamlFault{f.line, m[2] + 1, f.msg + "; a bare " + star + " starts an alias (*name) in YAML: quote it, \"" + star + "\""}
			}
		}
	case strings.Contains(f.msg, "did not find expected key"),
		strings.Contains(f.msg, "mapping values are not allowed"),
		strings.Contains(f.msg, "did not find expected '-' indicator"),
		strings.Contains(f.msg, "block sequence entries are not allowed"):
		hint := f.msg + "; this line is indented differently from the lines it belongs with: line it up with its siblings, or under the key that opens it"
		if line, col := indentFault(lines); line >= f.line && line > 0 {
			return yamlFault{line, col, hint}
		}
		f.msg = hint
	}
	return f
}

// indentFault finds the first line whose indentation fits no open block: deeper than the line
// before although that line opened nothing, or shallower than its block but not back at the
// level of an enclosing one. It returns 0 when every line fits.
func indentFault(lines []string) (line, col int) {
	var levels []int
	opens := true // the first line may be indented however it likes
	for i, l := range lines {
		content := strings.TrimLeft(l, " ")
		if content == "" || strings.HasPrefix(content, "#") {
			continue
		}
		ind := len(l) - len(content)
		switch {
		case len(levels) == 0 || ind > levels[len(levels)-1]:
			if !opens {
				return i + 1, ind + 1
			}
			levels = append(levels, ind)
		default:
			for len(levels) > 0 && levels[len(levels)-1] > ind {
				levels = levels[:len(levels)-1]
			}
			if len(levels) == 0 || levels[len(levels)-1] != ind {
				return i + 1, ind + 1
			}
		}
		body := content
		if c := strings.Index(body, " #"); c >= 0 {
			body = body[:c]
		}
		body = strings.TrimRight(body, " ")
		// A sequence item's mapping continues at the column after "- ".
		if rest, ok := strings.CutPrefix(body, "- "); ok && strings.Contains(rest, ": ") || ok && strings.HasSuffix(rest, ":") {
			levels = append(levels, ind+2)
		}
		opens = strings.HasSuffix(body, ":") || body == "-" || strings.HasSuffix(body, "[") || strings.HasSuffix(body, "{") || strings.HasSuffix(body, ",")
	}
	return 0, 0
}
