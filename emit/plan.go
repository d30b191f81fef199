package emit

import (
	"bytes"
	"encoding/json"
	"fmt"

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
	f := planFile{Streams: make([]jetstream.StreamConfig, 0, len(p.Streams)), Consumers: make([]planConsumer, 0, len(p.Consumers)), Tools: p.Tools}
	if f.Tools == nil {
		f.Tools = []compiler.ServedTool{}
	}
	for _, s := range p.Streams {
		f.Streams = append(f.Streams, s.Config)
	}
	for _, c := range p.Consumers {
		f.Consumers = append(f.Consumers, planConsumer{Stream: c.Stream, Config: c.Config})
	}

	var compact bytes.Buffer
	compact.Grow(compactSizeHint(p))
	enc := json.NewEncoder(&compact)
	// Subjects read as subjects: `>` rather than `\u003e`.
	enc.SetEscapeHTML(false)
	if err := encodePlanFile(&compact, enc, f); err != nil {
		return nil, fmt.Errorf("encode plan.json: %w", err)
	}
	// Indented in one pass into a buffer sized once: the encoder's own indenting grows its
	// buffer by doubling through the whole file, megabytes at 10,000 modules (BENCHMARKS.md).
	// Indenting adds about half (1.48x at 10,000 modules).
	return indentJSON(make([]byte, 0, compact.Len()*3/2+4096), compact.Bytes()), nil
}

// encodePlanFile writes f as enc.Encode(f) would, byte for byte (TestPlanJSONEncodesAsOneValue),
// one stream, consumer and tool at a time: encoding/json encodes a value into a buffer of its own
// before writing it, and for the whole file that buffer grew by doubling through megabytes at
// 10,000 modules; for one object it is a small buffer the encoder reuses.
func encodePlanFile(w *bytes.Buffer, enc *json.Encoder, f planFile) error {
	w.WriteString(`{"streams":`)
	if err := encodeList(w, enc, f.Streams); err != nil {
		return err
	}
	w.WriteString(`,"consumers":`)
	if err := encodeList(w, enc, f.Consumers); err != nil {
		return err
	}
	w.WriteString(`,"tools":`)
	if err := encodeList(w, enc, f.Tools); err != nil {
		return err
	}
	w.WriteString("}\n")
	return nil
}

// encodeList writes a list as enc.Encode would inside a value: null for nil, else its elements
// between brackets, comma-separated, without the newline Encode ends each with.
func encodeList[T any](w *bytes.Buffer, enc *json.Encoder, list []T) error {
	if list == nil {
		w.WriteString("null")
		return nil
	}
	w.WriteByte('[')
	for i := range list {
		if i > 0 {
			w.WriteByte(',')
		}
		if err := enc.Encode(&list[i]); err != nil {
			return err
		}
		w.Truncate(w.Len() - 1) // Encode's newline
	}
	w.WriteByte(']')
	return nil
}

// compactSizeHint guesses plan.json's size before indenting, so the encoder's buffer is not
// grown by doubling through megabytes: about 400 bytes an object (375 at 10,000 modules).
func compactSizeHint(p *compiler.Plan) int {
	return 1024 + 400*(len(p.Streams)+len(p.Consumers))
}

// indentJSON appends src, one JSON value as encoding/json writes it (no space between tokens,
// a newline after the value), indented by two spaces: json.Indent(dst, src, "", "  ") byte for
// byte (TestIndentJSONIsJSONIndent), without its scanner's call per byte, which was a third of
// rendering plan.json at 10,000 modules. A string is copied a run at a time.
func indentJSON(dst, src []byte) []byte {
	depth, open := 0, 0
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
