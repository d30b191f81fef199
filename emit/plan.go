package emit

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

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
}

// planConsumer has the shape of the API's own create-consumer request.
type planConsumer struct {
	Stream string                   `json:"stream_name"`
	Config jetstream.ConsumerConfig `json:"config"`
}

// PlanJSON renders golden/plan.json: every stream sorted by name, every consumer sorted by stream
// then name, 2-space indented with a trailing newline. It refuses a Plan with two streams of one
// name or two consumers of one name on one stream: apply would assert one over the other.
func PlanJSON(p *compiler.Plan) ([]byte, error) {
	f := planFile{Streams: make([]jetstream.StreamConfig, 0, len(p.Streams)), Consumers: make([]planConsumer, 0, len(p.Consumers))}
	for _, s := range p.Streams {
		f.Streams = append(f.Streams, s.Config)
	}
	for _, c := range p.Consumers {
		f.Consumers = append(f.Consumers, planConsumer{Stream: c.Stream, Config: c.Config})
	}
	slices.SortStableFunc(f.Streams, func(a, b jetstream.StreamConfig) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortStableFunc(f.Consumers, func(a, b planConsumer) int {
		return cmp.Or(cmp.Compare(a.Stream, b.Stream), cmp.Compare(compiler.ConsumerName(a.Config), compiler.ConsumerName(b.Config)))
	})
	for i := 1; i < len(f.Streams); i++ {
		if f.Streams[i].Name == f.Streams[i-1].Name {
			return nil, fmt.Errorf("two streams named %q in the plan: one name is one stream; the compiler should have refused it", f.Streams[i].Name)
		}
	}
	for i := 1; i < len(f.Consumers); i++ {
		a, b := f.Consumers[i-1], f.Consumers[i]
		if a.Stream == b.Stream && compiler.ConsumerName(a.Config) == compiler.ConsumerName(b.Config) {
			return nil, fmt.Errorf("two consumers named %q on stream %q in the plan: each needs its own durable name", compiler.ConsumerName(b.Config), b.Stream)
		}
	}

	var compact bytes.Buffer
	enc := json.NewEncoder(&compact)
	// Subjects read as subjects: `>` rather than `\u003e`.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("encode plan.json: %w", err)
	}
	// Indented in one pass into a buffer sized once: the encoder's own indenting grows its
	// buffer by doubling through the whole file, megabytes at 10,000 modules (BENCHMARKS.md).
	var out bytes.Buffer
	out.Grow(compact.Len() * 2)
	if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("indent plan.json: %w", err)
	}
	return out.Bytes(), nil
}

// ReadPlanJSON reads golden/plan.json back into the plan it was written from: its streams and
// consumers, in the file's order (which PlanJSON sorted). It is PlanJSON's reader, kept beside
// it so no command keeps a copy of the file's schema. What a file cannot mean — a consumer on a
// stream it does not list, two streams of one name, two consumers of one name on one stream — is
// refused with the command that rewrites it.
func ReadPlanJSON(data []byte) (*compiler.Plan, error) {
	var f planFile
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a plan meshc wrote (%v); run `meshc emit` to rewrite it", err)
	}
	p := &compiler.Plan{Streams: make([]compiler.Stream, 0, len(f.Streams)), Consumers: make([]compiler.Consumer, 0, len(f.Consumers))}
	streams := map[string]bool{}
	for _, s := range f.Streams {
		if streams[s.Name] {
			return nil, fmt.Errorf("two streams named %q; run `meshc emit` to rewrite it", s.Name)
		}
		streams[s.Name] = true
		p.Streams = append(p.Streams, compiler.Stream{Config: s})
	}
	consumers := map[[2]string]bool{}
	for _, c := range f.Consumers {
		name := compiler.ConsumerName(c.Config)
		if !streams[c.Stream] {
			return nil, fmt.Errorf("consumer %s is on stream %s, which the plan does not list; run `meshc emit` to rewrite it", name, c.Stream)
		}
		if consumers[[2]string{c.Stream, name}] {
			return nil, fmt.Errorf("two consumers named %q on stream %q; run `meshc emit` to rewrite it", name, c.Stream)
		}
		consumers[[2]string{c.Stream, name}] = true
		p.Consumers = append(p.Consumers, compiler.Consumer{Stream: c.Stream, Config: c.Config})
	}
	return p, nil
}
