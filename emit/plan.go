package emit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/compiler"
)

// planFile is golden/plan.json. The configurations are nats.go's own types, marshalled with their
// own json tags: the file reads in the JetStream API's field names (`num_replicas`,
// `durable_name`, `filter_subjects`) and durations in its nanoseconds, so what a reviewer reads
// is what apply sends.
type planFile struct {
	Streams   []jetstream.StreamConfig `json:"streams"`
	Consumers []planConsumer           `json:"consumers"`
	// Tools are the tools running modules serve and the accounts that may call each: what a
	// tool server checks the server's Nats-Request-Info against (compiler.ServedTool.Caller).
	Tools []compiler.ServedTool `json:"tools"`
}

// planConsumer has the shape of the API's own create-consumer request.
type planConsumer struct {
	Stream string                   `json:"stream_name"`
	Config jetstream.ConsumerConfig `json:"config"`
}

// PlanJSON renders golden/plan.json: every stream sorted by name, every consumer sorted by stream
// then name, every served tool with its callers sorted by subject, 2-space indented with a trailing newline. It refuses a Plan with two streams of one
// name or two consumers of one name on one stream: apply would assert one over the other.
func PlanJSON(p *compiler.Plan) ([]byte, error) {
	if err := checked(p); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Grow(planSizeHint(p))
	if err := writePlan(&out, p); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// writePlan writes plan.json to w as it renders it, a checked plan's (PlanJSON).
func writePlan(to io.Writer, p *compiler.Plan) error {
	w := planWriter{to: to, out: make([]byte, 0, 2*bufferSize)}
	w.enc = json.NewEncoder(&w.one)
	// Subjects read as subjects: `>` rather than `\u003e`.
	w.enc.SetEscapeHTML(false)
	w.out = append(w.out, "{\n  \"streams\": "...)
	w.list(len(p.Streams), func(i int) any { return &p.Streams[i].Config })
	w.out = append(w.out, ",\n  \"consumers\": "...)
	var c planConsumer
	w.list(len(p.Consumers), func(i int) any {
		c = planConsumer{Stream: p.Consumers[i].Stream, Config: p.Consumers[i].Config}
		return &c
	})
	w.out = append(w.out, ",\n  \"tools\": "...)
	w.list(len(p.Tools), func(i int) any { return &p.Tools[i] })
	w.out = append(w.out, "\n}\n"...)
	w.flush(0)
	return w.err
}

// planWriter writes plan.json as encoding the whole planFile and indenting it would, byte for
// byte (TestPlanJSONEncodesAsOneValue), one stream, consumer and tool at a time, each indented
// where it stands, straight into the file: the whole file encoded first and indented after took a
// buffer as large as the file and a copy of every configuration, megabytes at 10,000 modules.
type planWriter struct {
	to  io.Writer
	out []byte // what is not yet written to to
	one bytes.Buffer
	enc *json.Encoder
	err error
}

// flush writes what the file holds so far to w.to once it is over above bytes, so the buffer
// never grows past about bufferSize and one element.
func (w *planWriter) flush(above int) {
	if len(w.out) <= above {
		return
	}
	if w.err == nil {
		if _, err := w.to.Write(w.out); err != nil {
			w.err = err
		}
	}
	w.out = w.out[:0]
}

// list writes a list of n elements, each as element(i) encodes, as a value in the file's object:
// `[]` when empty (the file never holds null: PlanJSON renders nil lists empty).
func (w *planWriter) list(n int, element func(i int) any) {
	if n == 0 {
		w.out = append(w.out, "[]"...)
		return
	}
	w.out = append(w.out, '[')
	for i := range n {
		if i > 0 {
			w.out = append(w.out, ',')
		}
		w.out = appendNewline(w.out, 2)
		w.one.Reset()
		if err := w.enc.Encode(element(i)); err != nil && w.err == nil {
			w.err = fmt.Errorf("encode plan.json: %w", err)
		}
		w.out = indentJSONAt(w.out, bytes.TrimSuffix(w.one.Bytes(), []byte("\n")), 2)
		w.flush(bufferSize)
	}
	w.out = appendNewline(w.out, 1)
	w.out = append(w.out, ']')
}

// planSizeHint guesses plan.json's size, so the file is not grown by doubling through
// megabytes: about 750 bytes an object indented at 10,000 modules, and a tool's callers.
func planSizeHint(p *compiler.Plan) int {
	n := 1024 + 800*(len(p.Streams)+len(p.Consumers))
	for _, t := range p.Tools {
		n += 128 + len(t.Subject)
		for _, c := range t.Callers {
			n += 12 + len(c)
		}
	}
	return n
}

// indentJSON appends src, one JSON value as encoding/json writes it (no space between tokens,
// a newline after the value), indented by two spaces: json.Indent(dst, src, "", "  ") byte for
// byte (TestIndentJSONIsJSONIndent), without its scanner's call per byte, which was a third of
// rendering plan.json at 10,000 modules. A string is copied a run at a time.
func indentJSON(dst, src []byte) []byte { return indentJSONAt(dst, src, 0) }

// indentJSONAt is indentJSON for a value that stands at depth in the value it is part of.
func indentJSONAt(dst, src []byte, depth int) []byte {
	open := 0
	needIndent, ended := false, false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			// Space between tokens goes; what follows the value stays, as json.Indent keeps it.
			if ended {
				dst = append(dst, c)
			}
			continue
		}
		if needIndent && c != '}' && c != ']' {
			needIndent = false
			depth++
			dst = appendNewline(dst, depth)
		}
		switch c {
		case '"':
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j, len(src)-1)
			dst = append(dst, src[i:j+1]...)
			i = j
		case '{', '[':
			needIndent = true
			open++
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			dst = appendNewline(dst, depth)
		case ':':
			dst = append(dst, c, ' ')
		case '}', ']':
			if needIndent {
				needIndent = false // an empty object or array stays {} or []
			} else {
				depth--
				dst = appendNewline(dst, depth)
			}
			dst = append(dst, c)
			if open--; open == 0 {
				ended = true
			}
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

func appendNewline(dst []byte, depth int) []byte {
	dst = append(dst, '\n')
	for range depth {
		dst = append(dst, ' ', ' ')
	}
	return dst
}

// ReadPlanJSON reads golden/plan.json back into the plan it was written from: its streams,
// consumers and served tools, in the file's order (which PlanJSON sorted). It is PlanJSON's reader, kept beside
// it so no command keeps a copy of the file's schema. What a file cannot mean — a consumer on a
// stream it does not list, two streams of one name, two consumers of one name on one stream — is
// refused with the command that rewrites it.
func ReadPlanJSON(data []byte) (*compiler.Plan, error) {
	var f planFile
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a plan meshc wrote (%v); run `meshc emit` to rewrite it", err)
	}
	p := &compiler.Plan{Streams: make([]compiler.Stream, 0, len(f.Streams)), Consumers: make([]compiler.Consumer, 0, len(f.Consumers)), Tools: f.Tools}
	for _, s := range f.Streams {
		p.Streams = append(p.Streams, compiler.Stream{Config: s})
	}
	for _, c := range f.Consumers {
		p.Consumers = append(p.Consumers, compiler.Consumer{Stream: c.Stream, Config: c.Config})
	}
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("%w; run `meshc emit` to rewrite it", err)
	}
	return p, nil
}
