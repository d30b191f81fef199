package catalogue

import (
	"bytes"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ignoreComment is a `# meshc:ignore RULE reason` comment: the rule, then the reason.
// The reason runs to the end of the line, or to a further comment (" # ...") after it.
var ignoreComment = regexp.MustCompile(`#[ \t]*meshc:ignore(?:[ \t]+([^\s#]+))?(?:[ \t]+([^#]*[^\s#]))?[ \t]*(?:#.*)?$`)

// ignoresIn finds the meshc:ignore comments of one file. The lines are read as text, for the
// place of each comment and the line it silences; a match is kept only when YAML read a comment
// there too, so "# meshc:ignore" inside a quoted value or a block of text is not taken for one.
func ignoresIn(rel string, data []byte, doc *yaml.Node) []Ignore {
	// Looked for in the bytes: converting every file to a string only to search it copied the
	// whole catalogue once more.
	if !bytes.Contains(data, []byte("meshc:ignore")) {
		return nil
	}
	comments := map[string]bool{}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		for _, c := range []string{n.HeadComment, n.LineComment, n.FootComment} {
			for _, l := range strings.Split(c, "\n") {
				comments[strings.TrimSpace(l)] = true
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(doc)

	lines := strings.Split(string(data), "\n")
	var out []Ignore
	for i, line := range lines {
		m := ignoreComment.FindStringSubmatchIndex(line)
		if m == nil || !comments[strings.TrimSpace(line[m[0]:])] {
			continue
		}
		ig := Ignore{Pos: Pos{File: rel, Line: i + 1, Col: m[0] + 1}, Line: i + 1}
		if m[2] >= 0 {
			ig.Rule = line[m[2]:m[3]]
		}
		if m[4] >= 0 {
			ig.Reason = line[m[4]:m[5]]
		}
		if strings.TrimSpace(line[:m[0]]) == "" {
			// On a line of its own: the next line that holds YAML.
			ig.Line = 0
			for j := i + 1; j < len(lines); j++ {
				if t := strings.TrimSpace(lines[j]); t != "" && !strings.HasPrefix(t, "#") {
					ig.Line = j + 1
					break
				}
			}
		}
		out = append(out, ig)
	}
	return out
}
