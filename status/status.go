// Package status says what a live bus holds, per module and machine (`meshc status`): which of
// the catalogue's principals are connected, how far each consumer is behind (pending, awaiting an
// ack, pulls waiting, redeliveries), and whether each stream and consumer matches the plan — what
// natscli's reports give per server and per connection, given in the catalogue's own words. It
// reads as mesh-controller, with that user's grants: the JetStream API for streams and consumers,
// and the server's monitoring endpoint for connections (no grant of the controller's reaches
// them: docs/nats.md, "What the bus says of its accounts").
package status

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/apply/wire"
	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/output"
	"github.com/meshc-dev/meshc/internal/safetext"
)

// Report is the bus as a catalogue's principals see it.
type Report struct {
	// Bus is where it was read, as connected to.
	Bus string `json:"bus"`
	// Connections says where who is connected came from, or why nobody could say.
	Connections string `json:"connections"`
	// Machines are the inventory's machines, each with its agent and the modules it runs.
	Machines []Machine `json:"machines"`
	// Others are the principals on no machine: the controller, enrolling machines, people.
	Others []Principal `json:"others"`
	// Streams are the plan's streams and what the bus holds of each.
	Streams []Object `json:"streams"`
}

// Machine is one machine of the inventory.
type Machine struct {
	Name    string      `json:"name"`
	Agent   Principal   `json:"agent"`
	Modules []Principal `json:"modules"`
}

// Principal is one bus user, its connections and its consumers.
type Principal struct {
	User   string `json:"user"`
	Module string `json:"module,omitempty"`
	// Connected is nil when nobody could say (no monitoring endpoint).
	Connected   *bool        `json:"connected"`
	Connections []Connection `json:"connections"`
	Consumers   []Consumer   `json:"consumers"`
}

// Connection is one connection of a principal, as the server's /connz gives it.
type Connection struct {
	Name          string `json:"name,omitempty"`
	Server        string `json:"server,omitempty"`
	Uptime        string `json:"uptime"`
	InMsgs        int64  `json:"in_msgs"`
	OutMsgs       int64  `json:"out_msgs"`
	Subscriptions uint32 `json:"subscriptions"`
}

// Consumer is one consumer a principal reads.
type Consumer struct {
	Stream string `json:"stream"`
	Name   string `json:"name"`
	// Pending are stored messages not yet delivered, AckPending delivered and not acknowledged,
	// Waiting pulls waiting, Redelivered deliveries made more than once.
	Pending     uint64 `json:"pending"`
	AckPending  int    `json:"ack_pending"`
	Waiting     int    `json:"waiting"`
	Redelivered int    `json:"redelivered"`
	// Plan says whether the bus holds it as the plan says: "matches", "missing", or "differs:"
	// and the fields.
	Plan string `json:"plan"`
}

// Object is one stream and what the bus holds of it.
type Object struct {
	Name     string `json:"name"`
	Messages uint64 `json:"messages"`
	Plan     string `json:"plan"`
}

// Connz lists the server's connections: who they are (their authorized user) and what they did.
type Connz func(ctx context.Context) ([]*server.ConnInfo, error)

// FromMonitor reads connections from a server's monitoring endpoint, /connz with auth=true
// (which names each connection's user), a page at a time.
func FromMonitor(url string) Connz {
	return func(ctx context.Context) ([]*server.ConnInfo, error) {
		var out []*server.ConnInfo
		for offset := 0; ; {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/connz?auth=true&limit=1024&offset=%d", strings.TrimSuffix(url, "/"), offset), nil)
			if err != nil {
				cancel()
				return nil, err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				cancel()
				return nil, fmt.Errorf("--monitor %s: %w: who is connected is the server's monitoring endpoint's to say (nats-server -m PORT, or http: in its configuration)", url, err)
			}
			var page server.Connz
			err = json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&page)
			resp.Body.Close()
			cancel()
			if err != nil {
				return nil, fmt.Errorf("--monitor %s: /connz: %v", url, err)
			}
			out = append(out, page.Conns...)
			offset += len(page.Conns)
			if len(page.Conns) == 0 || offset >= page.Total {
				return out, nil
			}
		}
	}
}

// FromServer reads connections from a server in this process: meshc up's.
func FromServer(s *server.Server) Connz {
	return func(context.Context) ([]*server.ConnInfo, error) {
		c, err := s.Connz(&server.ConnzOptions{Username: true, Limit: 1 << 20})
		if err != nil {
			return nil, err
		}
		return c.Conns, nil
	}
}

// Read reads the bus as the connection's user (mesh-controller) and says it per principal of
// the plan. connz may be nil: connections are then unknown, and said so.
func Read(ctx context.Context, bus *wire.Bus, plan *compiler.Plan, connz Connz) (*Report, error) {
	live, err := wire.Read(ctx, bus, wire.ReadOptions{APIPrefix: bus.APIPrefix})
	if err != nil {
		return nil, err
	}
	changes := change.Diff(live, plan, change.DiffOptions{})
	planOf := map[string]string{}
	for _, c := range changes.Items {
		planOf[c.Stream+"/"+c.Consumer] = planWord(c)
	}
	js, err := bus.JetStream()
	if err != nil {
		return nil, err
	}
	r := &Report{Bus: bus.Server, Machines: []Machine{}, Others: []Principal{}, Streams: []Object{}}
	infos := map[string]*jetstream.ConsumerInfo{}
	for _, s := range plan.Streams {
		o := Object{Name: s.Config.Name, Plan: planOf[s.Config.Name+"/"]}
		if st, err := js.Stream(ctx, s.Config.Name); err == nil {
			o.Messages = st.CachedInfo().State.Msgs
			lister := st.ListConsumers(ctx)
			for info := range lister.Info() {
				infos[s.Config.Name+"/"+info.Name] = info
			}
			if err := lister.Err(); err != nil {
				return nil, fmt.Errorf("listing the consumers of %s: %w", s.Config.Name, err)
			}
		}
		r.Streams = append(r.Streams, o)
	}
	byUser := map[string][]*server.ConnInfo{}
	r.Connections = "unknown: give the server's monitoring endpoint (--monitor URL) to say who is connected"
	if connz != nil {
		conns, err := connz(ctx)
		if err != nil {
			return nil, err
		}
		for _, c := range conns {
			byUser[c.AuthorizedUser] = append(byUser[c.AuthorizedUser], c)
		}
		r.Connections = "the server's /connz"
	}
	principal := func(u compiler.User) Principal {
		p := Principal{User: u.Name, Module: u.Module, Connections: []Connection{}, Consumers: []Consumer{}}
		if connz != nil {
			connected := len(byUser[u.Name]) > 0
			p.Connected = &connected
		}
		for _, c := range byUser[u.Name] {
			p.Connections = append(p.Connections, Connection{Name: c.Name, Server: c.IP, Uptime: c.Uptime, InMsgs: c.InMsgs, OutMsgs: c.OutMsgs, Subscriptions: c.NumSubs})
		}
		for _, c := range plan.Consumers {
			name := compiler.ConsumerName(c.Config)
			// A seat's holder consumer is every holder's: shown under each.
			if c.User != u.Name && (c.User != "" || !slices.Contains(u.Publish.Allow, compiler.PullNext(c.Stream, name))) {
				continue
			}
			cs := Consumer{Stream: c.Stream, Name: name, Plan: planOf[c.Stream+"/"+name]}
			if info := infos[c.Stream+"/"+name]; info != nil {
				cs.Pending, cs.AckPending, cs.Waiting, cs.Redelivered = info.NumPending, info.NumAckPending, info.NumWaiting, info.NumRedelivered
			}
			p.Consumers = append(p.Consumers, cs)
		}
		return p
	}
	var current *Machine
	for _, u := range plan.Users {
		switch {
		case u.Kind == compiler.KindNode:
			r.Machines = append(r.Machines, Machine{Name: strings.TrimPrefix(u.Name, compiler.NodeUser("")), Agent: principal(u), Modules: []Principal{}})
			current = &r.Machines[len(r.Machines)-1]
		case u.Kind == compiler.KindModule && current != nil:
			current.Modules = append(current.Modules, principal(u))
		default:
			r.Others = append(r.Others, principal(u))
		}
	}
	return r, nil
}

// planWord says a change as status reports it: whether the bus holds the object as planned.
func planWord(c change.Change) string {
	switch c.Action {
	case change.NoOp:
		if c.Unreadable {
			return "unreadable: the server reports it missing or offline"
		}
		return "matches"
	case change.Create:
		return "missing"
	case change.Delete:
		return "not in the plan"
	}
	var fields []string
	for _, f := range c.Fields {
		fields = append(fields, f.Name)
	}
	slices.Sort(fields)
	return "differs: " + strings.Join(fields, ", ")
}

// Formats are how `meshc status` writes its report.
var Formats = []output.Format{output.Text, output.JSON}

// Write writes a report in format f.
func Write(w io.Writer, f output.Format, r *Report) error {
	switch f {
	case output.JSON:
		return output.WriteJSON(w, r)
	case output.Text:
		return writeText(w, r)
	}
	return fmt.Errorf("status: no writer for format %v", f)
}

// writeText says the bus machine by machine: the agent, then each module it runs, each with its
// connections and its consumers; then the principals on no machine, and the streams.
func writeText(w io.Writer, r *Report) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s (connections: %s)\n", safetext.Line(r.Bus), r.Connections)
	line := func(indent, name string, p Principal) {
		fmt.Fprintf(bw, "%s%-22s %s\n", indent, safetext.Line(name), connected(p))
		for _, c := range p.Consumers {
			fmt.Fprintf(bw, "%s  consumer %s/%s: %s; %s\n", indent, c.Stream, c.Name, lag(c), c.Plan)
		}
	}
	for _, m := range r.Machines {
		fmt.Fprintf(bw, "machine %s\n", safetext.Line(m.Name))
		line("  ", m.Agent.User, m.Agent)
		for _, p := range m.Modules {
			line("  ", p.Module, p)
		}
	}
	if len(r.Others) > 0 {
		fmt.Fprintln(bw, "on no machine")
		for _, p := range r.Others {
			line("  ", p.User, p)
		}
	}
	fmt.Fprintln(bw, "streams")
	for _, s := range r.Streams {
		fmt.Fprintf(bw, "  %-22s %d messages; %s\n", s.Name, s.Messages, s.Plan)
	}
	return bw.Flush()
}

func connected(p Principal) string {
	switch {
	case p.Connected == nil:
		return "connection unknown"
	case !*p.Connected:
		return "not connected"
	}
	var in, out int64
	for _, c := range p.Connections {
		in, out = in+c.InMsgs, out+c.OutMsgs
	}
	n := "1 connection"
	if len(p.Connections) != 1 {
		n = fmt.Sprintf("%d connections", len(p.Connections))
	}
	return fmt.Sprintf("connected (%s, up %s, %d messages in, %d out)", n, p.Connections[0].Uptime, in, out)
}

// lag says how far a consumer is behind.
func lag(c Consumer) string {
	if c.Pending == 0 && c.AckPending == 0 {
		return "caught up"
	}
	s := fmt.Sprintf("behind: %d pending, %d awaiting an ack", c.Pending, c.AckPending)
	if c.Redelivered > 0 {
		s += fmt.Sprintf(", %d redelivered", c.Redelivered)
	}
	return s
}
