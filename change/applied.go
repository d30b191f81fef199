package change

import (
	"cmp"
	"slices"

	"github.com/meshc-dev/meshc/compiler"
)

// Applied is the state a bus holds once the plan was applied to an empty one: what a committed
// golden plan, or the plan of a base branch, stands for when a change is compared with it.
// Metadata is the plan's own (Compile marks every object, and a plan.json read back carries
// the mark it was written with).
func Applied(p *compiler.Plan) *State {
	st := &State{Streams: make([]Stream, 0, len(p.Streams))}
	at := map[string]int{}
	for _, s := range p.Streams {
		cfg := s.Config
		at[cfg.Name] = len(st.Streams)
		st.Streams = append(st.Streams, Stream{Name: cfg.Name, Config: cfg})
	}
	for _, c := range p.Consumers {
		i, ok := at[c.Stream]
		if !ok {
			// A consumer on a stream the plan lacks was never made: the server refuses it.
			continue
		}
		cfg := c.Config
		st.Streams[i].Consumers = append(st.Streams[i].Consumers, Consumer{Stream: c.Stream, Name: compiler.ConsumerName(cfg), Config: cfg})
	}
	slices.SortFunc(st.Streams, func(a, b Stream) int { return cmp.Compare(a.Name, b.Name) })
	for i := range st.Streams {
		slices.SortFunc(st.Streams[i].Consumers, func(a, b Consumer) int { return cmp.Compare(a.Name, b.Name) })
	}
	return st
}
