package catalogue

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// A table is the keys one mapping of a catalogue file may hold. It is the one description of
// the format: the loader decodes with it, `meshc schema` writes it as a JSON Schema, and
// docs/catalogue.md lists it, so a new field is a row — and its error messages, its schema and
// its documentation come with it.
type table struct {
	// what names the mapping in messages: "a seat", "mesh.yaml".
	what string
	// label is put before a key to name its value in messages: "a seat's " + "name".
	label string
	// doc says what the mapping is, for the schema and the docs.
	doc    string
	fields []field
	// required are the keys the mapping must have: the schema requires them, and check reports
	// a missing one with the fix, which differs from table to table.
	required []string
	// check runs once the mapping is decoded, with the keys it held: required keys and what
	// depends on more than one field.
	check func(d *decoder, n *yaml.Node, seen map[string]*yaml.Node)
	// at, when set, records where the mapping's key was written.
	at *Pos
}

// A field is one row: a key, the shape its value must have (which decodes it and describes it),
// and what it means.
type field struct {
	key   string
	shape shape
	doc   string
}

func (t *table) field(key string) (field, bool) {
	i := slices.IndexFunc(t.fields, func(f field) bool { return f.key == key })
	if i < 0 {
		return field{}, false
	}
	return t.fields[i], true
}

func (t *table) keys() []string {
	out := make([]string, len(t.fields))
	for i, f := range t.fields {
		out[i] = f.key
	}
	slices.Sort(out)
	return out
}

// A shape is what a field's value must look like: it decodes a value into the model, reporting
// what is wrong in the words of `what`, and says the same as a JSON Schema.
type shape interface {
	decode(d *decoder, key, value *yaml.Node, what string)
	schema() *jsonSchema
	// words says what the shape is in a line of the docs: "string", "list of strings".
	says() string
}

// A Grammar is what a name must look like: lint's name and event checks and the JSON Schemas
// an editor checks with both take it from here (docs/catalogue.md, "Names"), so an editor marks
// `module: Catalog_Bad` as lint does.
type Grammar struct {
	// Pattern is the whole value as a regular expression (RE2, which JSON Schema's ECMA-262
	// patterns agree with for these).
	Pattern string
	// MaxLen bounds the length in characters; 0 is no bound.
	MaxLen int
}

// The grammars of the catalogue's names.
var (
	// NameGrammar: modules, seats, machines, people.
	NameGrammar = Grammar{Pattern: `^[a-z][a-z0-9-]*$`, MaxLen: 63}
	// TokenGrammar: a tool, a kind of work. At most 255 characters, as an event name: with names
	// of at most 63, every subject meshc derives and the protocol line a client sends with it
	// stay far below the max_control_line meshc's servers take (compiler.MaxControlLine).
	TokenGrammar = Grammar{Pattern: `^[a-z0-9][a-z0-9_-]*$`, MaxLen: 255}
	// EventGrammar: tokens joined by dots.
	EventGrammar = Grammar{Pattern: `^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*$`, MaxLen: 255}
)

// text is a string.
func text(to *Text) shape { return textShape{to: to} }

// named is a string of a grammar: the loader takes any string (lint's name rule judges it, with
// its fix), and the schema carries the grammar so an editor marks it too.
func named(to *Text, g Grammar) shape { return textShape{to: to, grammar: &g} }

// oneOf is a string that must be one of words; the loader refuses any other.
func oneOf(to *Text, words ...string) shape { return textShape{to: to, words: words, refuse: true} }

// textIn is a string that should be one of words: the schema offers them, and lint (not the
// loader) judges the value, because a wrong one there is a finding of its own rule.
func textIn(to *Text, words ...string) shape { return textShape{to: to, words: words} }

type textShape struct {
	to      *Text
	words   []string
	refuse  bool
	grammar *Grammar
}

func (s textShape) decode(d *decoder, _, v *yaml.Node, what string) {
	t, ok := d.text(v, what)
	if !ok {
		return
	}
	if s.refuse && !slices.Contains(s.words, t.Value) {
		d.fail(v, "%s must be %s, not %q", what, or(s.words), Excerpt(t.Value))
		return
	}
	*s.to = t
}

func (s textShape) schema() *jsonSchema {
	return s.grammar.apply(&jsonSchema{Type: "string", Enum: s.words})
}

// apply puts the grammar on a string's schema.
func (g *Grammar) apply(s *jsonSchema) *jsonSchema {
	if g != nil {
		s.Pattern = g.Pattern
		if g.MaxLen > 0 {
			n := int64(g.MaxLen)
			s.MaxLength = &n
		}
	}
	return s
}

func (s textShape) says() string {
	if len(s.words) > 0 {
		return or(s.words)
	}
	return "string"
}

// texts is a list of strings; nothing (`key:` with no value) is an empty list.
func texts(to *[]Text) shape { return textsShape{to: to} }

// nameds is a list of strings of a grammar (named's list).
func nameds(to *[]Text, g Grammar) shape { return textsShape{to: to, grammar: &g} }

type textsShape struct {
	to      *[]Text
	grammar *Grammar
	unique  bool
}

// once is a list whose entries may each appear once.
func once(s shape) shape {
	t := s.(textsShape)
	t.unique = true
	return t
}

func (s textsShape) decode(d *decoder, _, v *yaml.Node, what string) {
	if s.unique {
		*s.to = d.uniqueTexts(v, what)
		return
	}
	*s.to = d.texts(v, what)
}
func (s textsShape) schema() *jsonSchema {
	return &jsonSchema{Type: []string{"array", "null"}, Items: s.grammar.apply(&jsonSchema{Type: "string"})}
}
func (textsShape) says() string { return "list of strings" }

// boolean is true or false.
func boolean(to *bool) shape { return boolShape{to} }

type boolShape struct{ to *bool }

func (s boolShape) decode(d *decoder, _, v *yaml.Node, what string) { *s.to = d.boolean(v, what) }
func (boolShape) schema() *jsonSchema                               { return &jsonSchema{Type: "boolean"} }
func (boolShape) says() string                                      { return "true or false" }

// whole is a whole number from least to most (most 0: no bound).
func whole[T int | int64](to *T, least, most int64) shape {
	return wholeShape{set: func(v int64) { *to = T(v) }, least: least, most: most}
}

type wholeShape struct {
	set         func(int64)
	least, most int64
}

func (s wholeShape) decode(d *decoder, _, v *yaml.Node, what string) {
	n := d.integer(v, what, s.least)
	if s.most > 0 && n > s.most {
		d.fail(v, "%s is %d; the server allows at most %d", what, n, s.most)
		return
	}
	s.set(n)
}

func (s wholeShape) schema() *jsonSchema {
	out := &jsonSchema{Type: "integer", Minimum: &s.least}
	if s.most > 0 {
		out.Maximum = &s.most
	}
	return out
}

func (s wholeShape) says() string {
	if s.most > 0 {
		return fmt.Sprintf("whole number, %d to %d", s.least, s.most)
	}
	return fmt.Sprintf("whole number, at least %d", s.least)
}

// duration is a positive duration in the NATS CLI's units (ParseDuration).
func duration(to *time.Duration) shape { return durationShape{to} }

type durationShape struct{ to *time.Duration }

// durationPattern is ParseDuration's grammar with its units spelt out, for editors; the loader
// also refuses zero, which a pattern cannot say simply.
const durationPattern = `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h|d|D|w|W|M|y|Y))+$`

func (s durationShape) decode(d *decoder, _, v *yaml.Node, what string) {
	*s.to = d.duration(v, what)
}
func (durationShape) schema() *jsonSchema {
	return &jsonSchema{Type: "string", Pattern: durationPattern}
}
func (durationShape) says() string { return "duration (90s, 10m, 720h, 7d, 2w, 1y)" }

// mapping is a nested mapping with keys of its own.
func mapping(t *table) shape { return mappingShape{t} }

type mappingShape struct{ t *table }

func (s mappingShape) decode(d *decoder, key, v *yaml.Node, _ string) {
	if s.t.at != nil {
		*s.t.at = d.pos(key)
	}
	d.mapping(v, s.t)
}
func (s mappingShape) schema() *jsonSchema { return s.t.schema(true) }
func (s mappingShape) says() string        { return "mapping" }

// listOf is a list of mappings. item makes a fresh table for each entry, and the function that
// keeps the entry once it is decoded (it may decline one that lacks its name).
func listOf(item func() (*table, func())) shape { return listShape{item} }

type listShape struct{ item func() (*table, func()) }

func (s listShape) decode(d *decoder, _, v *yaml.Node, what string) {
	d.list(v, what, func(n *yaml.Node) {
		t, keep := s.item()
		d.mapping(n, t)
		if d.resolve(n).Kind == yaml.MappingNode {
			keep()
		}
	})
}

// schema makes an item's table without decoding anything: its rows are all the schema needs.
func (s listShape) schema() *jsonSchema {
	t, _ := s.item()
	return &jsonSchema{Type: []string{"array", "null"}, Items: t.schema(false)}
}
func (s listShape) says() string { return "list of mappings" }

// pairs is a mapping whose keys are chosen by the author (file kinds, old seat names) and whose
// values are strings. keyWhat and valueWhat name them in messages.
func pairs(keep func(k, v Text), keyWhat, valueWhat string) shape {
	return pairsShape{keep: keep, keyWhat: keyWhat, valueWhat: valueWhat}
}

// choices is pairs whose values must be one of words.
func choices(keep func(k, v Text), keyWhat string, words ...string) shape {
	return pairsShape{keep: keep, keyWhat: keyWhat, valueWhat: or(words), words: words}
}

type pairsShape struct {
	keep               func(k, v Text)
	keyWhat, valueWhat string
	words              []string
}

func (s pairsShape) decode(d *decoder, _, n *yaml.Node, what string) {
	n = d.resolve(n)
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.fail(n, "%s must be a mapping of %s to %s, not %s", what, s.keyWhat, s.valueWhat, describe(n))
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, ok1 := d.text(n.Content[i], "a key of "+what)
		v, ok2 := d.text(n.Content[i+1], "the value of "+Excerpt(k.Value))
		if ok2 && s.words != nil && !slices.Contains(s.words, v.Value) {
			d.fail(n.Content[i+1], "the value of %s must be %s, not %q", Excerpt(k.Value), s.valueWhat, Excerpt(v.Value))
			ok2 = false
		}
		if ok1 && ok2 {
			s.keep(k, v)
		}
	}
}

func (s pairsShape) schema() *jsonSchema {
	return &jsonSchema{Type: []string{"object", "null"}, AdditionalProperties: &jsonSchema{Type: "string", Enum: s.words}}
}
func (s pairsShape) says() string { return "mapping of " + s.keyWhat + " to " + s.valueWhat }

// or writes words as "a, b or c".
func or(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
