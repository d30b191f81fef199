package catalogue

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/meshc-dev/meshc/internal/suggest"
)

// RuleYAML is the rule of every structural finding the loader makes: unreadable YAML, unknown
// keys, wrong types, a file that is not the catalogue's own.
var RuleYAML = &Rule{ID: "yaml", Severity: Error, Firm: true,
	Summary: "unreadable YAML, unknown keys, wrong types",
	Why:     "A misspelt key is otherwise a field silently left empty: a module that consumes nothing because it wrote `consume:`."}

// decoder walks one file's YAML node tree into the model, recording a finding for every
// structural fault instead of stopping at the first, so a user fixes a file in one pass.
//
// It follows aliases without counting: the loader measured the file's expanded size before
// handing it over (expandedSize), so an alias bomb never reaches the walk.
type decoder struct {
	file     string
	findings *Findings
}

func newDecoder(file string, findings *Findings) *decoder {
	return &decoder{file: file, findings: findings}
}

func (d *decoder) pos(n *yaml.Node) Pos { return Pos{File: d.file, Line: n.Line, Col: n.Column} }

func (d *decoder) fail(n *yaml.Node, format string, args ...any) {
	*d.findings = append(*d.findings, RuleYAML.At(d.pos(n), format, args...))
}

// failFile records a finding about the file as a whole, such as a required key it lacks.
func (d *decoder) failFile(format string, args ...any) {
	*d.findings = append(*d.findings, RuleYAML.At(Pos{File: d.file}, format, args...))
}

// resolve follows aliases to the value they stand for.
func (d *decoder) resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// mapping walks a mapping node through its table, decoding each known key with its row's shape,
// then runs the table's check. An unknown key is a finding with the nearest known key as a hint;
// a repeated key is a finding naming the first.
func (d *decoder) mapping(n *yaml.Node, t *table) {
	seen := map[string]*yaml.Node{}
	n = d.resolve(n)
	if n.Kind != yaml.MappingNode {
		if !isNull(n) {
			d.fail(n, "%s must be a mapping of keys to values, not %s", t.what, describe(n))
		}
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := d.resolve(n.Content[i]), n.Content[i+1]
		if key.Kind != yaml.ScalarNode {
			d.fail(key, "a key in %s must be a plain word, not %s", t.what, describe(key))
			continue
		}
		if key.Tag == "!!merge" {
			d.fail(key, "merge keys (<<) are not read in a catalogue; write the keys of %s out", t.what)
			continue
		}
		if first, ok := seen[key.Value]; ok {
			d.fail(key, "%q is set twice in %s (first at line %d); keep one", Excerpt(key.Value), t.what, first.Line)
			continue
		}
		seen[key.Value] = key
		f, ok := t.field(key.Value)
		if !ok {
			d.unknownKey(key, t)
			continue
		}
		f.shape.decode(d, key, value, t.label+f.key)
	}
	if t.check != nil {
		t.check(d, n, seen)
	}
}

func (d *decoder) unknownKey(key *yaml.Node, t *table) {
	known := t.keys()
	if near := suggest.Closest(key.Value, known); near != "" {
		d.fail(key, "unknown key %q in %s; did you mean %q?", Excerpt(key.Value), t.what, near)
		return
	}
	d.fail(key, "unknown key %q in %s; the keys are: %s", Excerpt(key.Value), t.what, strings.Join(known, ", "))
}

// text decodes a string scalar. Numbers and booleans are refused rather than turned into text:
// `name: true` is far more often a mistake than a module called "true".
func (d *decoder) text(n *yaml.Node, what string) (Text, bool) {
	n = d.resolve(n)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		d.fail(n, "%s must be a string, not %s%s", what, describe(n), quoteHint(n))
		return Text{}, false
	}
	return Text{Value: n.Value, Pos: d.pos(n)}, true
}

// texts decodes a list of strings. A single string where a list belongs is refused with the fix,
// because `emits: built` silently meaning `[built]` would hide a misplaced key.
func (d *decoder) texts(n *yaml.Node, what string) []Text { return d.textList(n, what, false) }

// uniqueTexts is texts where an entry may appear once: a repeat is a finding, and dropped.
func (d *decoder) uniqueTexts(n *yaml.Node, what string) []Text { return d.textList(n, what, true) }

func (d *decoder) textList(n *yaml.Node, what string, unique bool) []Text {
	n = d.resolve(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		hint := ""
		if n.Kind == yaml.ScalarNode {
			hint = fmt.Sprintf("; write [%s]", Excerpt(n.Value))
		}
		d.fail(n, "%s must be a list, not %s%s", what, describe(n), hint)
		return nil
	}
	out := make([]Text, 0, len(n.Content))
	// Where each value first stands in out, once the list is long enough that scanning it for
	// every entry would be quadratic (a manifest of 100,000 entries took 23 s): most lists are
	// a few entries, which a scan answers faster than a map.
	var first map[string]int
	for _, item := range n.Content {
		t, ok := d.text(item, "each entry of "+what)
		if !ok {
			continue
		}
		// The same entry twice in a manifest says nothing more and often hides a typo meant as
		// another entry: one finding, and the repeat is dropped so nothing downstream reports it
		// again. (A machine's runs keep theirs: the user derived twice is user-duplicate's.)
		if unique {
			i := -1
			if first != nil {
				if at, seen := first[t.Value]; seen {
					i = at
				}
			} else {
				i = slices.IndexFunc(out, func(x Text) bool { return x.Value == t.Value })
			}
			if i >= 0 {
				d.fail(item, "%s lists %s twice (first at line %d); keep one", what, Excerpt(t.Value), out[i].Pos.Line)
				continue
			}
			if first == nil && len(out) == scannedEntries {
				first = make(map[string]int, len(n.Content))
				for j, x := range out {
					first[x.Value] = j
				}
			}
			if first != nil {
				first[t.Value] = len(out)
			}
		}
		out = append(out, t)
	}
	return out
}

// scannedEntries is how long a list is searched entry by entry for a repeat before a map takes
// over.
const scannedEntries = 16

func (d *decoder) boolean(n *yaml.Node, what string) bool {
	n = d.resolve(n)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		d.fail(n, "%s must be true or false, not %s", what, describe(n))
		return false
	}
	return n.Value == "true"
}

func (d *decoder) integer(n *yaml.Node, what string, least int64) int64 {
	n = d.resolve(n)
	var v int64
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&v) != nil {
		d.fail(n, "%s must be a whole number, not %s", what, describe(n))
		return 0
	}
	if v < least {
		d.fail(n, "%s must be at least %d, not %d", what, least, v)
		return 0
	}
	return v
}

func (d *decoder) duration(n *yaml.Node, what string) time.Duration {
	t, ok := d.text(n, what)
	if !ok {
		return 0
	}
	v, err := ParseDuration(t.Value)
	if err != nil || v <= 0 {
		d.fail(n, "%s must be a positive duration such as 90s, 10m, 720h, 7d, 2w or 1y (the NATS CLI's units), not %q", what, Excerpt(t.Value))
		return 0
	}
	return v
}

// list walks a sequence, calling each for every item.
func (d *decoder) list(n *yaml.Node, what string, each func(*yaml.Node)) {
	n = d.resolve(n)
	if isNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.fail(n, "%s must be a list, not %s", what, describe(n))
		return
	}
	for _, item := range n.Content {
		each(item)
	}
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// describe names what a node is, in words a manifest's author uses.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			return fmt.Sprintf("the string %q", Excerpt(n.Value))
		case "!!int", "!!float":
			return "the number " + Excerpt(n.Value)
		case "!!bool":
			return "the boolean " + n.Value
		case "!!null":
			return "nothing"
		}
		return fmt.Sprintf("%q (%s)", Excerpt(n.Value), Excerpt(strings.TrimPrefix(n.Tag, "!!")))
	}
	return "an unexpected value"
}

func quoteHint(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		return fmt.Sprintf("; quote it (\"%s\") if that is the name you mean", Excerpt(n.Value))
	}
	return ""
}
