// Package asyncapi writes a catalogue as an AsyncAPI 3.0 document (`meshc export asyncapi`), for
// the tools teams describe their events in: a server for the bus, a channel per derived subject —
// each module's and seat's events, each tool and its replies, each seat's work — and each
// module's operations: sending its events, receiving what it consumes, replying to its tools in
// its queue group, calling the tools it calls, submitting and taking seat work. What AsyncAPI's
// NATS binding cannot say (it has a queue group and nothing else) is said in `x-meshc-*`
// extensions: the JetStream stream a channel lands in, the durable consumer each machine reads it
// through, who emits and who may call. Every name comes from the compiler's own derivation, so
// the document says what the bus does.
package asyncapi

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/output"
	"github.com/meshc-dev/meshc/internal/suggest"
)

// Version is the AsyncAPI version the document is written in.
const Version = "3.0.0"

// natsBinding is the version of AsyncAPI's NATS bindings the operations' bindings follow.
const natsBinding = "0.1.0"

// Options say what to write beside what the catalogue holds.
type Options struct {
	// Server is where the bus is, host:port; default localhost:4222 (meshc up's, as near as a
	// document can say).
	Server string
	// Version is the document's info.version; default 0.0.0. A CI job gives its release's.
	Version string
	// Module, when set, writes that module's operations alone, and the channels they use: the
	// document of one service, as EventCatalog's AsyncAPI generator reads one per service.
	Module string
}

// Document is an AsyncAPI document, in the order and with the fields meshc writes.
type Document struct {
	AsyncAPI   string               `json:"asyncapi"`
	Info       Info                 `json:"info"`
	Servers    map[string]Server    `json:"servers"`
	Channels   map[string]Channel   `json:"channels"`
	Operations map[string]Operation `json:"operations"`
}

// Info is the document's info object.
type Info struct {
	Title       string `json:"title"`
	Version     string `json:"version"`
	Description string `json:"description"`
	// Catalogue is mesh.yaml's id.
	Catalogue string `json:"x-meshc-catalogue,omitempty"`
}

// Server is the bus.
type Server struct {
	Host        string `json:"host"`
	Protocol    string `json:"protocol"`
	Description string `json:"description"`
}

// Channel is one derived subject, or a reply channel (no address: the reply subject is the
// call's own).
type Channel struct {
	Address     *string            `json:"address"`
	Title       string             `json:"title"`
	Description string             `json:"description,omitempty"`
	Messages    map[string]Message `json:"messages"`
	// Kind is event, tool, reply or work.
	Kind string `json:"x-meshc-kind"`
	// Stream is the JetStream stream the channel's messages land in ("" for tools: never stored).
	Stream string `json:"x-meshc-stream,omitempty"`
	// Emitters are who publish on an event channel: a module, or a seat's holders.
	Emitters []string `json:"x-meshc-emitters,omitempty"`
	// Consumers are the durable consumers that read the channel, each machine's.
	Consumers []Consumer `json:"x-meshc-consumers,omitempty"`
	// Queue is, for a tool, the queue group its module serves it in.
	Queue string `json:"x-meshc-queue,omitempty"`
	// Callers are, for a tool, who may call it: modules and people.
	Callers []string `json:"x-meshc-callers,omitempty"`
}

// Message is a channel's message: what the catalogue knows of it is its name.
type Message struct {
	Name    string `json:"name"`
	Title   string `json:"title"`
	Summary string `json:"summary"`
}

// Consumer is one durable consumer reading a channel.
type Consumer struct {
	Stream  string `json:"stream"`
	Durable string `json:"durable"`
	// User is the bus user that reads it ("" for a seat's holder consumer, which every holder
	// shares).
	User   string `json:"user,omitempty"`
	Filter string `json:"filter"`
}

// Operation is what one module does on one channel.
type Operation struct {
	Action   string    `json:"action"`
	Channel  Ref       `json:"channel"`
	Title    string    `json:"title"`
	Summary  string    `json:"summary"`
	Reply    *Reply    `json:"reply,omitempty"`
	Bindings *Bindings `json:"bindings,omitempty"`
	// Module is the module (or mesh-controller) the operation is of.
	Module string `json:"x-meshc-module"`
	// Durables are, for a receive from a stream, the consumers this module reads it through.
	Durables []string `json:"x-meshc-durables,omitempty"`
	// Source is the manifest line that declares the operation.
	Source string `json:"x-meshc-source,omitempty"`
}

// Ref is a JSON reference.
type Ref struct {
	Ref string `json:"$ref"`
}

// Reply is a request's reply: a channel with no address, the call's own reply subject.
type Reply struct {
	Channel Ref `json:"channel"`
}

// Bindings are an operation's protocol bindings: NATS's queue group.
type Bindings struct {
	NATS NATSBinding `json:"nats"`
}

// NATSBinding is AsyncAPI's NATS operation binding.
type NATSBinding struct {
	Queue          string `json:"queue"`
	BindingVersion string `json:"bindingVersion"`
}

// Write writes the document of a compiled catalogue as JSON, the same bytes for the same
// catalogue.
func Write(w io.Writer, ix *catalogue.Index, plan *compiler.Plan, opts Options) error {
	d, err := Build(ix, plan, opts)
	if err != nil {
		return err
	}
	return output.WriteJSON(w, d)
}

// Build builds the document.
func Build(ix *catalogue.Index, plan *compiler.Plan, opts Options) (*Document, error) {
	b := &builder{ix: ix, plan: plan, channels: map[string]Channel{}, operations: map[string]Operation{}}
	if opts.Module != "" && ix.Modules[opts.Module] == nil {
		var names []string
		for _, m := range sortedModules(ix) {
			names = append(names, m.Name.Value)
		}
		hint := ""
		if near := suggest.Closest(opts.Module, names); near != "" {
			hint = "; did you mean " + near + "?"
		}
		return nil, fmt.Errorf("no module %q in the catalogue%s", opts.Module, hint)
	}
	b.channelsOf()
	for _, m := range sortedModules(ix) {
		b.moduleOperations(m)
	}
	b.controllerOperations()
	d := &Document{
		AsyncAPI: Version,
		Info: Info{
			Title:       ix.Catalogue.Mesh.Name.Value,
			Version:     cmp.Or(opts.Version, "0.0.0"),
			Description: fmt.Sprintf("The %s mesh, written by meshc from its catalogue: every subject is derived, never written in a manifest. Events and work are stored in JetStream (x-meshc-stream) and read through durable consumers (x-meshc-consumers); a tool is a request/reply served in its module's queue group.", ix.Catalogue.Mesh.Name.Value),
			Catalogue:   ix.Catalogue.Mesh.ID.Value,
		},
		Servers: map[string]Server{serverName(ix): {
			Host: cmp.Or(opts.Server, "localhost:4222"), Protocol: "nats",
			Description: fmt.Sprintf("The %s bus: one NATS server or cluster holding every account of the mesh.", ix.Catalogue.Mesh.Name.Value),
		}},
		Channels:   b.channels,
		Operations: b.operations,
	}
	if opts.Module != "" {
		d.only(opts.Module)
	}
	return d, nil
}

func serverName(ix *catalogue.Index) string { return ix.Catalogue.Mesh.Name.Value }

// only keeps one module's operations and the channels they use.
func (d *Document) only(module string) {
	used := map[string]bool{}
	for id, o := range d.Operations {
		if o.Module != module {
			delete(d.Operations, id)
			continue
		}
		used[refID(o.Channel)] = true
		if o.Reply != nil {
			used[refID(o.Reply.Channel)] = true
		}
	}
	for id := range d.Channels {
		if !used[id] {
			delete(d.Channels, id)
		}
	}
	d.Info.Title += " — " + module
}

func refID(r Ref) string { return strings.TrimPrefix(r.Ref, "#/channels/") }

type builder struct {
	ix         *catalogue.Index
	plan       *compiler.Plan
	channels   map[string]Channel
	operations map[string]Operation
}

// Channel ids are the catalogue's own words for a subject: `event.catalog.upgraded` for a
// module's or seat's event (EMITTER.EVENT, as `consumes` writes it), `tool.catalog.lookup`,
// `reply.catalog.lookup`, `work.image-store.push`.
func eventID(emitter, event string) string { return "event." + emitter + "." + event }
func toolID(module, tool string) string    { return "tool." + module + "." + tool }
func replyID(module, tool string) string   { return "reply." + module + "." + tool }
func workID(seat, kind string) string      { return "work." + seat + "." + kind }

func ref(id string) Ref { return Ref{Ref: "#/channels/" + id} }

func address(s string) *string { return &s }

// channelsOf makes a channel for every subject the catalogue derives: each module's and each
// seat's events, each tool with its reply, each seat's kinds of work.
func (b *builder) channelsOf() {
	for _, m := range sortedModules(b.ix) {
		for _, e := range m.Emits {
			subject := compiler.ModuleEvent(m.Name.Value, e.Value)
			b.channels[eventID(m.Name.Value, e.Value)] = Channel{
				Address: address(subject), Kind: "event", Stream: b.streamOf(subject),
				Title:       fmt.Sprintf("%s's event %s", m.Name.Value, e.Value),
				Description: describe(fmt.Sprintf("Emitted by module %s.", m.Name.Value), m.Description.Value),
				Messages:    map[string]Message{messageName(e.Value): {Name: e.Value, Title: e.Value, Summary: fmt.Sprintf("%s's %s", m.Name.Value, e.Value)}},
				Emitters:    []string{m.Name.Value}, Consumers: b.consumersOf(subject),
			}
		}
		for _, t := range m.Tools {
			subject := compiler.Tool(m.Name.Value, t.Value)
			b.channels[toolID(m.Name.Value, t.Value)] = Channel{
				Address: address(subject), Kind: "tool",
				Title:       fmt.Sprintf("%s's tool %s", m.Name.Value, t.Value),
				Description: describe(fmt.Sprintf("A request/reply served by module %s in queue group %s: each call is answered by one of its instances; never stored.", m.Name.Value, compiler.ToolQueue(m.Name.Value)), m.Description.Value),
				Messages:    map[string]Message{messageName(t.Value): {Name: t.Value, Title: t.Value, Summary: fmt.Sprintf("a call of %s's %s", m.Name.Value, t.Value)}},
				Queue:       compiler.ToolQueue(m.Name.Value), Callers: b.callersOf(m.Name.Value, t.Value),
			}
			b.channels[replyID(m.Name.Value, t.Value)] = Channel{
				Address: nil, Kind: "reply",
				Title:       fmt.Sprintf("the answer of %s's tool %s", m.Name.Value, t.Value),
				Description: "The call's own reply subject, the caller's inbox (_INBOX.<user>.…): known only at run time.",
				Messages:    map[string]Message{messageName(t.Value) + "Answer": {Name: t.Value + " answer", Title: t.Value + " answer", Summary: fmt.Sprintf("the answer to a call of %s's %s", m.Name.Value, t.Value)}},
			}
		}
	}
	for _, s := range b.ix.AllSeats() {
		holders := b.holdersOf(s.Name.Value)
		whose := "the mesh's role"
		if s.Declarer != nil {
			whose = "a seat module " + s.Declarer.Name.Value + " declares"
		}
		for _, e := range s.Emits {
			subject := compiler.SeatEvent(s.Name.Value, e.Value)
			b.channels[eventID(s.Name.Value, e.Value)] = Channel{
				Address: address(subject), Kind: "event", Stream: b.streamOf(subject),
				Title:       fmt.Sprintf("seat %s's event %s", s.Name.Value, e.Value),
				Description: fmt.Sprintf("Announced by whoever holds seat %s (%s).", s.Name.Value, whose),
				Messages:    map[string]Message{messageName(e.Value): {Name: e.Value, Title: e.Value, Summary: fmt.Sprintf("seat %s's %s", s.Name.Value, e.Value)}},
				Emitters:    holders, Consumers: b.consumersOf(subject),
			}
		}
		for _, k := range s.Accepts {
			subject := compiler.Work(s.Name.Value, k.Value)
			b.channels[workID(s.Name.Value, k.Value)] = Channel{
				Address: address(subject), Kind: "work", Stream: compiler.SeatStream(s.Name.Value),
				Title:       fmt.Sprintf("%s work for seat %s", k.Value, s.Name.Value),
				Description: fmt.Sprintf("Work submitted to seat %s (%s), held in its work queue %s until a holder takes it, each item once.", s.Name.Value, whose, compiler.SeatStream(s.Name.Value)),
				Messages:    map[string]Message{messageName(k.Value): {Name: k.Value, Title: k.Value, Summary: fmt.Sprintf("%s work for %s", k.Value, s.Name.Value)}},
				Consumers:   b.consumersOf(subject),
			}
		}
	}
}

// messageName is a message's id: a name the document may key, the catalogue's own.
func messageName(name string) string { return strings.ReplaceAll(name, ".", "_") }

func describe(what, description string) string {
	if description == "" {
		return what
	}
	return what + " " + strings.TrimSuffix(description, ".") + "."
}

// streamOf is the stream that stores subject, "" when none does.
func (b *builder) streamOf(subject string) string {
	for _, s := range b.plan.Streams {
		if slices.ContainsFunc(s.Config.Subjects, func(x string) bool { return compiler.Covers(x, subject) }) {
			return s.Config.Name
		}
	}
	return ""
}

// consumersOf are the plan's consumers whose filters admit subject: each machine's.
func (b *builder) consumersOf(subject string) []Consumer {
	var out []Consumer
	for _, c := range b.plan.Consumers {
		filters := c.Config.FilterSubjects
		if c.Config.FilterSubject != "" {
			filters = append(filters, c.Config.FilterSubject)
		}
		for _, f := range filters {
			if compiler.Covers(f, subject) {
				out = append(out, Consumer{Stream: c.Stream, Durable: compiler.ConsumerName(c.Config), User: c.User, Filter: f})
				break
			}
		}
	}
	return out
}

// callersOf are the modules and people the catalogue lets call a tool.
func (b *builder) callersOf(module, tool string) []string {
	subject := compiler.Tool(module, tool)
	seen := map[string]bool{}
	var out []string
	for _, u := range b.plan.Users {
		if u.Kind != compiler.KindModule && u.Kind != compiler.KindPerson {
			continue
		}
		if len(u.Why(compiler.Publish, subject)) == 0 {
			continue
		}
		who := u.Name
		if u.Kind == compiler.KindModule {
			who = "module " + u.Module
		}
		if !seen[who] {
			seen[who] = true
			out = append(out, who)
		}
	}
	slices.Sort(out)
	return out
}

// holdersOf are the modules that claim a seat.
func (b *builder) holdersOf(seat string) []string {
	var out []string
	for _, m := range sortedModules(b.ix) {
		for _, c := range m.Claims {
			if name, _ := b.ix.SeatName(c.Value); name == seat {
				out = append(out, m.Name.Value)
			}
		}
	}
	return out
}

// durablesOf are the consumers a module reads a subject through, one per machine running it.
func (b *builder) durablesOf(user func(compiler.Consumer) bool, subject string) []string {
	var out []string
	for _, c := range b.consumersOf(subject) {
		for _, pc := range b.plan.Consumers {
			if compiler.ConsumerName(pc.Config) == c.Durable && pc.Stream == c.Stream && user(pc) {
				out = append(out, c.Stream+"/"+c.Durable)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// receives adds the operations of a consumed entry: one receive per channel it admits.
func (b *builder) receives(who, written, source string, reads func(compiler.Consumer) bool) {
	consumed := compiler.Consume(b.ix, written)
	for _, id := range sortedKeys(b.channels) {
		ch := b.channels[id]
		if ch.Kind != "event" || !slices.ContainsFunc(consumed.Subjects, func(f string) bool { return compiler.Covers(f, *ch.Address) }) {
			continue
		}
		b.operations[who+".receive."+strings.TrimPrefix(id, "event.")] = Operation{
			Action: "receive", Channel: ref(id), Module: who, Source: source,
			Title:    fmt.Sprintf("%s receives %s", who, ch.Title),
			Summary:  fmt.Sprintf("%s consumes %s", who, written),
			Durables: b.durablesOf(reads, *ch.Address),
		}
	}
}

// moduleOperations adds one module's operations.
func (b *builder) moduleOperations(m *catalogue.Module) {
	name := m.Name.Value
	pos := func(t catalogue.Text) string { return t.Pos.String() }
	for _, e := range m.Emits {
		b.operations[name+".send."+e.Value] = Operation{Action: "send", Channel: ref(eventID(name, e.Value)), Module: name, Source: pos(e),
			Title: fmt.Sprintf("%s emits %s", name, e.Value), Summary: fmt.Sprintf("%s publishes its event %s; EVENTS stores it", name, e.Value)}
	}
	for _, c := range m.Consumes {
		b.receives(name, c.Value, pos(c), func(pc compiler.Consumer) bool { return b.userModule(pc.User) == name })
	}
	for _, t := range m.Tools {
		b.operations[name+".serve."+t.Value] = Operation{Action: "receive", Channel: ref(toolID(name, t.Value)), Module: name, Source: pos(t),
			Title:    fmt.Sprintf("%s serves %s", name, t.Value),
			Summary:  fmt.Sprintf("%s answers each call of its tool %s, subscribed in queue group %s", name, t.Value, compiler.ToolQueue(name)),
			Reply:    &Reply{Channel: ref(replyID(name, t.Value))},
			Bindings: &Bindings{NATS: NATSBinding{Queue: compiler.ToolQueue(name), BindingVersion: natsBinding}}}
	}
	for _, c := range m.Calls {
		module, tool := compiler.Call(c.Value)
		if b.channels[toolID(module, tool)].Address == nil {
			continue // a call nobody declares serving: lint's call-agreement
		}
		b.operations[name+".call."+module+"."+tool] = Operation{Action: "send", Channel: ref(toolID(module, tool)), Module: name, Source: pos(c),
			Title: fmt.Sprintf("%s calls %s.%s", name, module, tool), Summary: fmt.Sprintf("%s calls %s's tool %s and waits for its answer", name, module, tool),
			Reply: &Reply{Channel: ref(replyID(module, tool))}}
	}
	for _, u := range m.Uses {
		b.submits(name, u)
	}
	for _, c := range m.Claims {
		seat := b.ix.Seat(c.Value)
		if seat == nil {
			continue
		}
		for _, e := range seat.Emits {
			b.operations[name+".announce."+seat.Name.Value+"."+e.Value] = Operation{Action: "send", Channel: ref(eventID(seat.Name.Value, e.Value)), Module: name, Source: pos(c),
				Title: fmt.Sprintf("%s announces %s's %s", name, seat.Name.Value, e.Value), Summary: fmt.Sprintf("%s, holding seat %s, announces its event %s", name, seat.Name.Value, e.Value)}
		}
		for _, k := range seat.Accepts {
			stream := compiler.SeatStream(seat.Name.Value)
			b.operations[name+".take."+seat.Name.Value+"."+k.Value] = Operation{Action: "receive", Channel: ref(workID(seat.Name.Value, k.Value)), Module: name, Source: pos(c),
				Title:    fmt.Sprintf("%s takes %s work for %s", name, k.Value, seat.Name.Value),
				Summary:  fmt.Sprintf("%s, holding seat %s, takes its %s work from %s through the consumer every holder shares", name, seat.Name.Value, k.Value, stream),
				Durables: []string{stream + "/" + compiler.HolderConsumer}}
		}
	}
}

// submits adds the operations of submitting work to a used seat: one per kind it accepts.
func (b *builder) submits(who string, used catalogue.Text) {
	seat := b.ix.Seat(used.Value)
	if seat == nil {
		return
	}
	for _, k := range seat.Accepts {
		b.operations[who+".submit."+seat.Name.Value+"."+k.Value] = Operation{Action: "send", Channel: ref(workID(seat.Name.Value, k.Value)), Module: who, Source: used.Pos.String(),
			Title: fmt.Sprintf("%s submits %s work to %s", who, k.Value, seat.Name.Value), Summary: fmt.Sprintf("%s submits %s work to seat %s; its work queue keeps it until a holder takes it", who, k.Value, seat.Name.Value)}
	}
}

// controllerOperations adds the control plane's: the work it submits, the events it follows.
func (b *builder) controllerOperations() {
	c := b.ix.Catalogue.Mesh.Controller
	for _, s := range c.Submits {
		b.submits(compiler.ControllerUser, s)
	}
	for _, f := range c.Follows {
		b.receives(compiler.ControllerUser, f.Value, f.Pos.String(), func(pc compiler.Consumer) bool { return pc.User == compiler.ControllerUser })
	}
}

// userModule is the module a bus user runs, "" for another kind.
func (b *builder) userModule(user string) string {
	if u := b.plan.User(user); u != nil {
		return u.Module
	}
	return ""
}

func sortedModules(ix *catalogue.Index) []*catalogue.Module {
	out := make([]*catalogue.Module, 0, len(ix.Modules))
	for _, m := range ix.Modules {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *catalogue.Module) int { return cmp.Compare(a.Name.Value, b.Name.Value) })
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
