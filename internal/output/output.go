// Package output is how every command writes what it produces: one type for the formats a
// --format flag offers, read the same way by every command (in any case, with a did-you-mean),
// and one way to write JSON that a person, a script and a CI log can all read.
package output

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/meshc-dev/meshc/internal/safetext"
	"github.com/meshc-dev/meshc/internal/suggest"
)

// Format is an output format, by the name --format takes.
type Format string

// The formats meshc writes. Each command offers the ones that fit what it produces.
const (
	Text     Format = "text"
	JSON     Format = "json"
	Markdown Format = "markdown"
	SARIF    Format = "sarif"
	GitHub   Format = "github"
	Mermaid  Format = "mermaid"
	Dot      Format = "dot"
)

func (f Format) String() string { return string(f) }

// Parse reads a --format value among the formats offered, in any case (SARIF, sarif); an
// unknown one is refused naming the nearest and every one offered.
func Parse(s string, offered ...Format) (Format, error) {
	i, err := suggest.Choose("format", s, Names(offered...))
	if err != nil {
		return "", err
	}
	return offered[i], nil
}

// Names are the formats' names, in the order given: what help text lists.
func Names(fs ...Format) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = string(f)
	}
	return out
}

// WriteJSON writes v as JSON indented by two spaces, with a final newline. A subject's `>` is
// written as itself, not `\u003e`, so the JSON reads like the rest of meshc's output; and what
// came from outside meshc (a name a bus reported, a catalogue's value) is made safe for a CI log
// without changing what it decodes to (safetext.JSON).
func WriteJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(safetext.JSON(buf.Bytes()))
	return err
}
