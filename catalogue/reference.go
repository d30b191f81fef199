package catalogue

import (
	"fmt"
	"slices"
	"strings"
)

// FieldReference writes the reference of one kind of catalogue file — "mesh.yaml", "module" or
// "inventory.yaml" — as markdown, from the same field tables the loader decodes with:
// docs/catalogue.md holds it between hand-written prose, and a test keeps it current.
func FieldReference(kind string) string {
	var t *table
	switch kind {
	case "mesh.yaml":
		t = meshTable(&Mesh{})
	case "module":
		t = moduleTable(&Module{})
	case "inventory.yaml":
		t = inventoryTable(&Inventory{})
	default:
		panic("no field table for " + kind)
	}
	type section struct {
		titles []string
		t      *table
	}
	var sections []*section
	// add queues a nested table; one described the same way as an earlier one (the four streams'
	// settings) joins its section rather than repeating it.
	add := func(title string, nt *table) string {
		for _, s := range sections {
			if s.t.doc == nt.doc && slices.Equal(s.t.keys(), nt.keys()) {
				s.titles = append(s.titles, title)
				return s.titles[0]
			}
		}
		sections = append(sections, &section{titles: []string{title}, t: nt})
		return title
	}
	add(kind, t)
	// Nested tables are titled by their path from the file's top: controller, streams.events.
	path := func(s *section, key string) string {
		if s == sections[0] {
			return key
		}
		return s.titles[0] + "." + key
	}
	var b strings.Builder
	for i := 0; i < len(sections); i++ {
		s := sections[i]
		if i > 0 {
			fmt.Fprintf(&b, "\n#### `%s`\n\n", s.titles[0])
		}
		fmt.Fprintf(&b, "%s", markdown(s.t.doc))
		if len(s.titles) > 1 {
			fmt.Fprintf(&b, " The same keys for %s.", strings.Join(quoted(s.titles[1:]), ", "))
		}
		b.WriteString("\n\n| key | value | what it means |\n| --- | --- | --- |\n")
		for _, f := range s.t.fields {
			value := f.shape.says()
			switch sh := f.shape.(type) {
			case mappingShape:
				value = "mapping: see " + anchor(add(path(s, f.key), sh.t))
			case listShape:
				item, _ := sh.item()
				value = "list of mappings: see " + anchor(add(item.what, item))
			}
			if slices.Contains(s.t.required, f.key) {
				value += ", **required**"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", f.key, value, markdown(f.doc))
		}
	}
	return b.String()
}

// mdEscaper keeps a description's text as written in markdown: <seat> is not an HTML tag, and
// mesh-* and node-* are not emphasis.
var mdEscaper = strings.NewReplacer("<", "&lt;", ">", "&gt;", "*", `\*`, "|", `\|`)

// markdown escapes a description outside its `code spans`, where text is already literal (a
// | is escaped in a code span too: the table would end there otherwise).
func markdown(s string) string {
	parts := strings.Split(s, "`")
	for i := range parts {
		if i%2 == 0 {
			parts[i] = mdEscaper.Replace(parts[i])
		} else {
			parts[i] = strings.ReplaceAll(parts[i], "|", `\|`)
		}
	}
	return strings.Join(parts, "`")
}

func quoted(titles []string) []string {
	out := make([]string, len(titles))
	for i, t := range titles {
		out[i] = "`" + t + "`"
	}
	return out
}

// anchor links to a section by its first title, the way GitHub makes heading anchors: lower
// case, spaces to -, punctuation but - and _ dropped.
func anchor(title string) string {
	var id strings.Builder
	for _, r := range strings.ToLower("`" + title + "`") {
		switch {
		case r == ' ':
			id.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			id.WriteRune(r)
		}
	}
	return fmt.Sprintf("[%s](#%s)", title, id.String())
}
