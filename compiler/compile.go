package compiler

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/catalogue"
)

// The rules only the compiled plan can check (docs/rules.md: stream-overlap, user-duplicate,
// credential-missing).
var (
	RuleStreamOverlap = &catalogue.Rule{ID: "stream-overlap", Severity: catalogue.Error, Firm: true,
		Summary: "two streams whose subjects overlap",
		Why:     "The server refuses the second stream at apply; said here, naming both, before anything touches a bus."}
	RuleUserDuplicate = &catalogue.Rule{ID: "user-duplicate", Severity: catalogue.Error, Firm: true,
		Summary: "two bus users with one name",
		Why:     "The server refuses a duplicate user; which of two sources wins must never depend on the order a file was read."}
	RuleCredentialMissing = &catalogue.Rule{ID: "credential-missing", Severity: catalogue.Warning,
		Summary: "a bus user with no recorded hash in credentials.yaml, or no credentials.yaml at all",
		Why:     "A user with no hash cannot connect; named so it is minted, never dropped in silence or written as a user anybody is."}
)

// withRelated is f naming other places it involves.
func withRelated(f catalogue.Finding, related []catalogue.Related) catalogue.Finding {
	f.Related = related
	return f
}

// NodeAckWait is how long a machine has to apply a declaration and report before it is
// redelivered: minutes on a machine pulling images, and the stream holds one message per machine,
// so there is nothing to dead-letter, only one message to redeliver while that machine is away.
const NodeAckWait = 5 * time.Minute

// Compile derives the plan of a catalogue. It never fails on a catalogue lint has findings about:
// what cannot be derived (a machine running a module with no manifest, a claim on a seat nobody
// declares) is left out, and lint says why. Its own findings are the three rules that need the
// plan: stream-overlap, user-duplicate and credential-missing.
func Compile(ix *catalogue.Index) (*Plan, catalogue.Findings) {
	c := newCompilation(ix, false)
	c.explain = true
	c.compile()
	return c.plan, c.findings.Sorted()
}

// CompileBare is Compile without the plan's explanations: no user's Grants and no consumer's
// Reads, which only explaining a permission or reviewing a change reads (`meshc can`, `plan
// --against`). It is the plan emit renders and apply asserts, the same bytes and the same
// objects, for about a third less of the compiler's allocation at 10,000 modules, and of the
// collector's work on it (BENCHMARKS.md); TestABarePlanRendersAsTheWholeOne holds the two to the
// same golden files.
func CompileBare(ix *catalogue.Index) (*Plan, catalogue.Findings) {
	c := newCompilation(ix, false)
	c.compile()
	c.plan.bare = true
	return c.plan, c.findings.Sorted()
}

// Findings are Compile's findings without the plan: the same derivation, leaving out what only
// the plan's readers need and no finding comes from (a user's grants sorted for review, the
// accounts' exports and imports and the served tools when no operator's keys are checked
// against them, the ownership mark, the order and check). It is what `meshc lint` reports when
// it emits nothing, a third less of the compiler's work at 10,000 modules (BENCHMARKS.md);
// TestFindingsAreCompilesFindings holds the two to the same findings.
func Findings(ix *catalogue.Index) catalogue.Findings {
	c := newCompilation(ix, true)
	c.compile()
	return c.findings.Sorted()
}

func newCompilation(ix *catalogue.Index, findingsOnly bool) *compilation {
	c := &compilation{ix: ix, findingsOnly: findingsOnly,
		plan: &Plan{Account: ix.Catalogue.Mesh.Name.Value, NKeys: ix.Catalogue.Mesh.NKeys(), Operator: operatorKeys(ix.Catalogue), Catalogue: ix.Catalogue.Mesh.ID.Value}}
	users, consumers := planSizes(ix)
	c.plan.Users = make([]User, 0, users)
	c.users = make(map[string]catalogue.Pos, users)
	c.plan.Consumers = make([]Consumer, 0, consumers)
	return c
}

// planSizes is how many users and consumers a plan of ix holds at most, so that each list is
// made once: a user is hundreds of bytes and a consumer's configuration more, and growing a
// list of hundreds of thousands by doubling copies them over and over.
func planSizes(ix *catalogue.Index) (users, consumers int) {
	users, consumers = 1, 3+len(ix.Seats)
	if inv := ix.Catalogue.Inventory; inv != nil {
		users += 2*len(inv.Nodes) + len(inv.People)
		consumers += len(inv.Nodes)
		for _, n := range inv.Nodes {
			users += len(n.Runs)
			consumers += len(n.Runs)
			for _, r := range n.Runs {
				if m := ix.Modules[r.Value]; m != nil && len(m.Tools) > 0 {
					users++ // its serving user: left out, the list grew once more, by half
				}
			}
		}
	}
	return users, consumers
}

func (c *compilation) compile() {
	// The streams and consumers are derived beside the users and accounts: neither reads the
	// other until the limits, and each has steps on one core (the accounts' gathering, sorting
	// the mesh's exports, the streams' overlaps), which the other's fill. The streams' findings
	// are added where they were when one followed the other, so the findings are the same.
	var streamFindings catalogue.Findings
	var streams sync.WaitGroup
	streams.Go(func() {
		c.streams()
		c.consumers()
		streamFindings = streamOverlaps(c.plan.Streams)
		c.roomForConsumers()
	})
	c.controller()
	c.planner()
	c.machines()
	c.people()
	c.credentials()
	// In operator mode every account's key is checked (accountKeys), so the accounts and the
	// tools they serve are derived for findings too.
	accounts := !c.findingsOnly || c.plan.Operator != nil
	if accounts {
		c.serveTools()
		c.isolate()
		c.toolCallers()
	}
	c.accountKeys()
	streams.Wait()
	c.findings = append(c.findings, streamFindings...)
	c.limits()
	if c.findingsOnly {
		return
	}
	c.plan.Mark()

	// Sorted and checked once, here: emit and apply trust a checked plan. What fails the check
	// has a finding of its own (user-duplicate, name, stream-overlap), so the error adds nothing.
	_ = c.plan.Check()
}

type compilation struct {
	ix       *catalogue.Index
	plan     *Plan
	findings catalogue.Findings
	// users maps each username to where it was first derived from, for user-duplicate.
	users map[string]catalogue.Pos
	// findingsOnly derives what the findings need, not the whole plan (Findings).
	findingsOnly bool
	// toolAt maps each served tool's subject to its place in the plan's Tools (serveTools).
	toolAt map[string]int
	// eventSubjects are the event subjects some running principal may publish (publishedEvents).
	eventSubjects []string
	// explain gives each user its Grants and each consumer its Reads (Compile).
	explain bool
}

// addUser finishes a user and admits it.
func (c *compilation) addUser(u User) {
	c.admit(c.finish(u))
}

// finish makes a derived user what the server reads: its permissions minimised, its grants
// sorted, its recorded credential. It reads only the user and the catalogue, so users are
// finished on several goroutines at once.
func (c *compilation) finish(u User) User {
	u.Publish = permission(u.Publish.Allow)
	u.Subscribe = permission(u.Subscribe.Allow)
	if c.explain {
		u.Grants.Publish, u.Grants.Subscribe = sortedGrants(u.Grants.Publish), sortedGrants(u.Grants.Subscribe)
	}
	// credentials.yaml records what the server checks: a bcrypt hash, or with auth: nkey the
	// user's public key.
	switch recorded, _ := c.ix.Catalogue.Credentials.Hash(u.Name); {
	case c.plan.NKeys:
		u.NKey = recorded
	case c.plan.Operator != nil:
		u.SigningKey = recorded
	default:
		u.Hash = recorded
	}
	return u
}

// admit appends a finished user unless one by that name exists, which is refused naming both
// sources rather than left to whichever the server happened to read last.
func (c *compilation) admit(u User) {
	if first, dup := c.users[u.Name]; dup {
		later, earlier := u.Source, first
		if later.Compare(earlier) < 0 {
			later, earlier = earlier, later
		}
		c.findings = append(c.findings, withRelated(RuleUserDuplicate.At(later, "bus user %s is derived twice; remove the repeated entry so the user comes from one declaration", u.Name), []catalogue.Related{{Pos: earlier, Message: "first derived here"}}))
		return
	}
	c.users[u.Name] = u.Source
	c.plan.Users = append(c.plan.Users, u)
}

// permission makes an allow list into a permission that means exactly it: sorted, without
// duplicates or subjects a wider one covers, and deny [">"] when it is empty — because to the
// server an empty allow list means everything (docs/nats.md, "An empty allow list means
// everything").
func permission(allow []string) Permission {
	allow = minimiseOwn(allow) // the user's own list, gathered for it alone
	if len(allow) == 0 {
		return Permission{Deny: []string{">"}}
	}
	return Permission{Allow: allow}
}

// consumerGrants are what pulling from and acknowledging one consumer takes: the pull request,
// the info request nats.go's jetstream client makes before it consumes (without it the client
// times out instead of reporting a permission error), and both forms of ack subject — the newer
// `$JS.ACK.<domain>.<account hash>.…` form is what a server with js_ack_fc_v2 sends (docs/nats.md,
// "Ack subjects").
func consumerGrants(stream, consumer string) []string {
	return []string{PullNext(stream, consumer), ConsumerInfo(stream, consumer), Ack(stream, consumer), AckV2(stream, consumer)}
}

func ackGrants(stream, consumer string) []string {
	return []string{Ack(stream, consumer), AckV2(stream, consumer)}
}

// controller derives the control plane's user. It owns the JetStream API (it is the only writer
// of stream and consumer definitions) and the control plane; everything else is named.
func (c *compilation) controller() {
	m := c.ix.Catalogue.Mesh
	pub, sub := c.granted(12), c.granted(2)
	pub.add(m.Name.Pos, said("the control plane", "manage every stream and consumer (the JetStream API)"), "$JS.API.>")
	// It tells every machine what to run.
	pub.add(m.Name.Pos, said("the control plane", "declare what every machine runs"), "mesh.node.*.declare")
	// It answers an enrolment at the address the request carries in its payload: a request a
	// stream captures gets the stream's PubAck as its reply, so the transport's reply subject
	// cannot carry the answer (docs/nats.md, "A stream answers the requests it captures").
	// Nothing but an enrolling machine subscribes under this prefix, each to its own.
	pub.add(m.Name.Pos, said("the control plane", "answer every machine's enrolment"), EnrolmentAnswers("*"))
	// apply's lock is a key of a bucket on the bus, and writing a key is a publish ($JS.API.>
	// covers reading it).
	pub.add(m.Name.Pos, said("the control plane", "keep apply's lock"), ApplyBucketSubjects())
	pub.add(m.Name.Pos, said("the control plane reads reports and enrolments", readsOwn(ControlStream, ReportsConsumer)), ackGrants(ControlStream, ReportsConsumer)...)
	pub.add(m.Name.Pos, said("the control plane reads reports and enrolments", readsOwn(ControlStream, EnrolmentsConsumer)), ackGrants(ControlStream, EnrolmentsConsumer)...)
	if len(c.follows()) > 0 {
		pub.add(m.Controller.Follows[0].Pos, said("controller follows events", readsOwn(EventsStream, ControllerUser)), ackGrants(EventsStream, ControllerUser)...)
	}
	for _, s := range m.Controller.Submits {
		if seat := c.ix.Seat(s.Value); seat != nil {
			for _, k := range seat.Accepts {
				pub.add(s.Pos, func() (string, string) {
					return "controller submits " + k.Value + " work to " + seat.Name.Value, submits(seat.Name.Value, k.Value)
				}, Work(seat.Name.Value, k.Value))
			}
		}
	}
	sub.add(m.Name.Pos, said("its own inbox", ownInbox), Inbox(ControllerUser))
	// Heartbeats are heard live and never stored.
	sub.add(m.Name.Pos, said("the control plane hears heartbeats", "hear every machine's heartbeat"), Heartbeat("*"))
	c.addUser(User{
		Name: ControllerUser, Kind: KindController, Source: m.Name.Pos,
		Publish: Permission{Allow: pub.subjects}, Subscribe: Permission{Allow: sub.subjects},
		Grants: Grants{Publish: pub.grants, Subscribe: sub.grants},
	})
}

// planner derives mesh-planner, when mesh.yaml asks for it: what `meshc plan` reads, and no
// more. Every grant is a JetStream API read — the streams' and consumers' names and infos (their
// configuration, metadata and counts; never a message), and apply's bucket read key by key, which
// holds the lock's holder and the digests of what apply delivered — so a leaked planner password
// shows the bus's shape and changes nothing (docs/nats.md, "A read-only planner").
func (c *compilation) planner() {
	m := c.ix.Catalogue.Mesh
	if !m.Controller.Planner {
		return
	}
	pub, sub := c.granted(9), c.granted(1)
	pub.add(m.Name.Pos, said("controller.planner", "read the account's JetStream limits and use"), "$JS.API.INFO")
	pub.add(m.Name.Pos, said("controller.planner", "read every stream's configuration and counts"), PlannerStreamReads()...)
	pub.add(m.Name.Pos, said("controller.planner", "read every consumer's configuration and counts"), PlannerConsumerReads()...)
	pub.add(m.Name.Pos, said("controller.planner", "read apply's lock and records"), PlannerBucketReads()...)
	sub.add(m.Name.Pos, said("its own inbox", ownInbox), Inbox(PlannerUser))
	c.addUser(User{
		Name: PlannerUser, Kind: KindPlanner, Source: m.Name.Pos,
		Publish: Permission{Allow: pub.subjects}, Subscribe: Permission{Allow: sub.subjects},
		Grants: Grants{Publish: pub.grants, Subscribe: sub.grants},
	})
}

// follows returns the derived subjects of the controller's followed events.
func (c *compilation) follows() []string {
	var out []string
	for _, f := range c.ix.Catalogue.Mesh.Controller.Follows {
		out = append(out, Consume(c.ix, f.Value).Subjects...)
	}
	return Minimise(out)
}

// machines derives, per machine in name order, its host agent's user and one user per module it
// runs; then an enrolment user per machine holding a live token.
func (c *compilation) machines() {
	inv := c.ix.Catalogue.Inventory
	if inv == nil {
		return
	}
	nodes := slices.Clone(inv.Nodes)
	slices.SortStableFunc(nodes, func(a, b *catalogue.Node) int { return cmp.Compare(a.Name.Value, b.Name.Value) })
	// Each machine's users are derived and finished on their own, on every core (deriving them is
	// most of the compiler's time on a large mesh), and admitted in machine order: the plan and
	// its user-duplicate findings are the same whichever machine finished first.
	// Each writes its users into the plan's own list, at a place counted here, and admitting
	// them moves each down over the duplicates dropped before it, if any: no user (hundreds of
	// bytes each) is gathered into a list of its own and copied.
	at := make([]int, len(nodes)+1)
	for i, n := range nodes {
		at[i+1] = at[i] + 1
		for _, r := range n.Runs {
			if m := c.ix.Modules[r.Value]; m != nil {
				at[i+1]++
				if len(m.Tools) > 0 {
					at[i+1]++ // its serving user
				}
			}
		}
	}
	start := len(c.plan.Users)
	c.plan.Users = slices.Grow(c.plan.Users, at[len(nodes)])
	derived := c.plan.Users[start : start+at[len(nodes)]]
	inParallel(len(nodes), func(i int) { c.machine(nodes[i], derived[at[i]:at[i+1]]) })
	for i := range derived {
		c.admit(derived[i]) // writes at or before derived[i]'s own place
	}
	clear(derived[len(c.plan.Users)-start:]) // what duplicates left behind
	for _, n := range nodes {
		if !n.Enrolling || n.Name.Value == "" {
			// A nameless enrolment user would subscribe `_INBOX.enrol..>`, an inbox every nameless
			// one shares: one machine able to read the credentials sealed to another.
			continue
		}
		user := EnrolmentUser(n.Name.Value)
		pub, sub := c.granted(1), c.granted(1)
		pub.add(n.Name.Pos, func() (string, string) {
			return "machine " + n.Name.Value + " is enrolling", "ask to enrol machine " + n.Name.Value
		}, Enrolment(n.Name.Value))
		sub.add(n.Name.Pos, said("its own inbox", ownInbox), Inbox(user))
		c.addUser(User{
			Name: user, Kind: KindEnrolment, Source: n.Name.Pos,
			Publish: Permission{Allow: pub.subjects}, Subscribe: Permission{Allow: sub.subjects},
			Grants: Grants{Publish: pub.grants, Subscribe: sub.grants},
		})
	}
}

// machine derives one machine's users, finished, into users: its host agent's, then one per
// module it runs that has a manifest, in module name order, each followed by its serving user
// when the module serves tools.
func (c *compilation) machine(n *catalogue.Node, users []User) {
	name := n.Name.Value
	pub, sub := c.granted(5), c.granted(2) // the grants added below
	pub.add(n.Name.Pos, func() (string, string) {
		return "machine " + name + " reports and beats", "report and beat as machine " + name
	}, Report(name), Heartbeat(name))
	declaration := func() (string, string) {
		return "machine " + name + " reads its declaration", readsOwn(NodesStream, name)
	}
	pub.add(n.Name.Pos, declaration, ConsumerInfo(NodesStream, name))
	pub.add(n.Name.Pos, declaration, ackGrants(NodesStream, name)...)
	sub.add(n.Name.Pos, func() (string, string) {
		return "machine " + name + " reads its declaration", "receive machine " + name + "'s declaration"
	}, DeliverNodes(name))
	sub.add(n.Name.Pos, said("its own inbox", ownInbox), Inbox(NodeUser(name)))
	users[0] = c.finish(User{
		Name: NodeUser(name), Kind: KindNode, Source: n.Name.Pos,
		Publish: Permission{Allow: pub.subjects}, Subscribe: Permission{Allow: sub.subjects},
		Grants: Grants{Publish: pub.grants, Subscribe: sub.grants},
		// The info request of its NODES consumer.
		jetStream: true,
	})
	runs := slices.Clone(n.Runs)
	slices.SortStableFunc(runs, func(a, b catalogue.Text) int { return cmp.Compare(a.Value, b.Value) })
	k := 1
	for _, r := range runs {
		if m := c.ix.Modules[r.Value]; m != nil {
			users[k] = c.finish(c.module(name, m, r.Pos))
			k++
			if len(m.Tools) > 0 {
				users[k] = c.finish(c.server(name, m, r.Pos))
				k++
			}
		}
	}
}

// module derives one module's user on one machine: exactly what its manifest declares, but for
// serving its tools, which its serving user does (server).
func (c *compilation) module(node string, m *catalogue.Module, source catalogue.Pos) User {
	name := m.Name.Value
	user := ModuleUserName(node, name)
	// Sized once, from the grants counted below: a grant is about a hundred bytes, and growing
	// every module instance's list by doubling was the compiler's largest allocation.
	npub := len(m.Emits) + len(m.Calls)
	for _, claim := range m.Claims {
		if seat := c.ix.Seat(claim.Value); seat != nil {
			npub += len(seat.Emits)
			if len(seat.Accepts) > 0 {
				npub += 4 // consumerGrants
			}
		}
	}
	for _, use := range m.Uses {
		if seat := c.ix.Seat(use.Value); seat != nil {
			npub += len(seat.Accepts)
		}
	}
	if len(m.Consumes) > 0 {
		npub += 4 // consumerGrants
	}
	pub, sub := c.granted(npub), c.granted(1)
	jetStream := len(m.Consumes) > 0
	for _, e := range m.Emits {
		pub.addOf(name, e.Pos, func() (string, string) { return "emits " + e.Value, "publish its event " + e.Value }, ModuleEvent(name, e.Value))
	}
	for _, claim := range m.Claims {
		seat := c.ix.Seat(claim.Value)
		if seat == nil {
			continue
		}
		// The holder announces the seat's events, whoever holds it.
		for _, e := range seat.Emits {
			pub.add(claim.Pos, func() (string, string) {
				return "claims seat " + seat.Name.Value + ", which emits " + e.Value, "publish seat " + seat.Name.Value + "'s event " + e.Value
			}, SeatEvent(seat.Name.Value, e.Value))
		}
		if len(seat.Accepts) > 0 {
			pub.add(claim.Pos, func() (string, string) {
				return "claims seat " + seat.Name.Value + " and takes its work", "take seat " + seat.Name.Value + "'s work"
			}, consumerGrants(SeatStream(seat.Name.Value), HolderConsumer)...)
			jetStream = true
		}
	}
	for _, use := range m.Uses {
		if seat := c.ix.Seat(use.Value); seat != nil {
			for _, k := range seat.Accepts {
				pub.add(use.Pos, func() (string, string) {
					return "uses seat " + seat.Name.Value + ", which accepts " + k.Value, submits(seat.Name.Value, k.Value)
				}, Work(seat.Name.Value, k.Value))
			}
		}
	}
	var called []string
	if len(m.Calls) > 0 {
		called = make([]string, 0, len(m.Calls))
	}
	for _, call := range m.Calls {
		module, tool := Call(call.Value)
		pub.addOf(module, call.Pos, func() (string, string) { return "calls " + call.Value, calls(module, tool) }, Tool(module, tool))
		called = append(called, Tool(module, tool))
	}
	// A module that consumes nothing has no consumer and no JetStream grant.
	if len(m.Consumes) > 0 {
		consumer := ModuleConsumer(node, name)
		pub.add(m.Consumes[0].Pos, func() (string, string) {
			return "consumes events, through its consumer " + consumer, readsOwn(EventsStream, consumer)
		}, consumerGrants(EventsStream, consumer)...)
	}
	sub.add(source, said("its own inbox", ownInbox), Inbox(user))
	return User{
		Name: user, Kind: KindModule, Source: source, Module: name,
		Publish: Permission{Allow: pub.subjects}, Subscribe: Permission{Allow: sub.subjects},
		Grants:    Grants{Publish: pub.grants, Subscribe: sub.grants},
		calls:     called,
		jetStream: jetStream,
	}
}

// server derives the serving user of one module's instance on one machine, for a module that
// serves tools: it subscribes each tool in the module's queue group only, so wherever the module
// runs each call is served once, and answers the calls it receives. Nothing else: no events, no
// calls, no inbox. In one account it answers by allow_responses, one reply to a request it
// received. With an account per principal every call reaches it across an import, with the reply
// the server wrote (`_R_.…`), so it is granted exactly those: no reply a caller chose is one it
// may publish on, and the calls arrive in an account none of the module's own users make requests
// in (docs/nats.md, "Answering calls without allow_responses").
func (c *compilation) server(node string, m *catalogue.Module, source catalogue.Pos) User {
	name := m.Name.Value
	perModule := c.ix.Catalogue.Mesh.PerModule()
	pub := c.granted(1)
	sub, responses := c.granted(len(m.Tools)), c.granted(len(m.Tools))
	for _, t := range m.Tools {
		sub.addQueued(name, ToolQueue(name), t.Pos, func() (string, string) {
			return "serves tool " + t.Value + " in queue group " + ToolQueue(name), "serve its tool " + t.Value
		}, Tool(name, t.Value))
		if !perModule {
			responses.addOf(name, t.Pos, func() (string, string) {
				return "answers requests to tool " + t.Value, "answer requests to its tool " + t.Value
			}, Tool(name, t.Value))
		}
	}
	if perModule {
		pub.addOf(name, m.Tools[0].Pos, said("answers calls to its tools", "answer the calls to its tools"), ServiceReplies)
		responses = c.granted(0)
	}
	return User{
		Name: ServingUser(node, name), Kind: KindServer, Source: source, Module: name,
		Publish: Permission{Allow: pub.subjects}, Subscribe: Permission{Allow: sub.subjects},
		Grants: Grants{Publish: pub.grants, Subscribe: sub.grants, Responses: responses.grants},
		// One reply to a request it actually received: only a tool server, in one account,
		// answers this way.
		AllowResponses: responses.count() > 0,
	}
}

// people derives a user per person: the tools they may ask, and their inbox. No events, no
// control, no ack subjects, no allow_responses — a person who could answer a request would be
// impersonating a module.
func (c *compilation) people() {
	inv := c.ix.Catalogue.Inventory
	if inv == nil {
		return
	}
	people := slices.Clone(inv.People)
	slices.SortStableFunc(people, func(a, b *catalogue.Person) int { return cmp.Compare(a.Name.Value, b.Name.Value) })
	for _, p := range people {
		pub, sub := c.granted(len(p.MayCall)), c.granted(1)
		var called []string
		every := false
		for _, t := range p.MayCall {
			if t.Value == EveryTool {
				pub.addOf("*", t.Pos, said("may-call every tool", "call every tool"), everyTool)
				every = true
				continue
			}
			module, tool := Call(t.Value)
			pub.addOf(module, t.Pos, func() (string, string) { return "may-call " + t.Value, calls(module, tool) }, Tool(module, tool))
			called = append(called, Tool(module, tool))
		}
		user := PersonUserName(p.Name.Value)
		sub.add(p.Name.Pos, said("its own inbox", ownInbox), Inbox(user))
		c.addUser(User{
			Name: user, Kind: KindPerson, Source: p.Name.Pos,
			Publish: Permission{Allow: pub.subjects}, Subscribe: Permission{Allow: sub.subjects},
			Grants: Grants{Publish: pub.grants, Subscribe: sub.grants},
			calls:  called, callsEvery: every,
		})
	}
}

// credentials names every user with no recorded hash, when credentials.yaml exists: named, never
// dropped in silence, never written as a user anybody is. A catalogue with no credentials.yaml
// at all gets one finding instead of one per user: a new catalogue otherwise linted clean, and
// then `meshc emit` refused it until someone ran mint.
func (c *compilation) credentials() {
	// No credentials.yaml and one recording nothing (empty, or comments only) are the same
	// state: one finding, not one per user.
	if cr := c.ix.Catalogue.Credentials; cr == nil || len(cr.Users) == 0 {
		if len(c.plan.Users) > 0 {
			what := "has no " + catalogue.CredentialsFile
			if cr != nil {
				what = "records nothing in " + catalogue.CredentialsFile
			}
			fix := "hash and `meshc emit` will refuse to write accounts.conf: run `meshc mint --missing` (it prints each password once and records only hashes)"
			if c.plan.Operator != nil {
				fix = "signing key and `meshc emit` will refuse to write claims.json: run `meshc mint --missing --out CREDS` (it writes each user's credentials once and records only public keys)"
			}
			c.findings = append(c.findings, RuleCredentialMissing.At(catalogue.Pos{File: catalogue.MeshFile}, "the catalogue %s, so none of its %d bus users has a recorded %s",
				what, len(c.plan.Users), fix))
		}
		return
	}
	what := "hash"
	if c.plan.Operator != nil {
		what = "signing key"
	}
	for _, u := range c.plan.Users {
		if u.Credential() == "" {
			c.findings = append(c.findings, RuleCredentialMissing.At(u.Source, "bus user %s has no recorded %s in credentials.yaml, so it cannot connect; run `meshc mint %s` (or `meshc mint --missing`)", u.Name, what, u.Name))
		}
	}
}

// streams derives the mesh's streams and one work queue per seat that accepts work — held or
// not, because work waits in the queue until a holder appears. Each is bounded
// (docs/catalogue.md, "Limits and their defaults"): its bytes, its largest message and, where one
// subject is one principal's, its messages per subject, so no principal stores without bound.
func (c *compilation) streams() {
	mesh := c.ix.Catalogue.Mesh
	s := mesh.Streams
	meshPos := catalogue.Pos{File: mesh.File}

	// A history: each event subject keeps its newest, up to its cap, and every subject at its cap
	// fits in the stream, so the stream never fills: a full stream drops its oldest message
	// whoever's it is, and one emitter within its caps would push out another's unread events
	// (docs/nats.md, "Limits and floods").
	events := streamConfig(EventsStream, s.Events, catalogue.EventsDefaults, jetstream.LimitsPolicy,
		// The event token is why EVENTS can store events without storing tool calls.
		"mesh.mod.*.event.>", "mesh.seat.*.event.>")
	c.eventSubjects = c.publishedEvents()
	if s.Events.MaxMsgsPerSubject == 0 {
		events.MaxMsgsPerSubject = eventsPerSubject(events.MaxBytes, int64(events.MaxMsgSize), c.eventSubjects)
	}
	c.plan.Streams = append(c.plan.Streams, Stream{Config: events, Source: orPos(s.Events.Pos, meshPos)})

	// CONTROL names its subjects rather than taking mesh.control.>, because heartbeats live under
	// that prefix and must not compete for retention with reports and enrolments. Each subject is
	// one machine's, so its cap bounds what one machine (or one enrolment token) can store, and a
	// machine's newest reports are the ones that matter.
	control := streamConfig(ControlStream, s.Control, catalogue.ControlDefaults, jetstream.WorkQueuePolicy, Report("*"), Enrolment("*"))
	c.plan.Streams = append(c.plan.Streams, Stream{Config: control, Source: orPos(s.Control.Pos, meshPos)})

	// Only the newest declaration per machine matters.
	nodes := streamConfig(NodesStream, s.Nodes, catalogue.NodesDefaults, jetstream.LimitsPolicy, Declaration("*"))
	nodes.MaxMsgsPerSubject = 1
	c.plan.Streams = append(c.plan.Streams, Stream{Config: nodes, Source: orPos(s.Nodes.Pos, meshPos)})

	for _, seat := range c.ix.AllSeats() {
		if len(seat.Accepts) == 0 {
			continue
		}
		// A full queue refuses new work, to its submitter, rather than dropping work it accepted.
		cfg := streamConfig(SeatStream(seat.Name.Value), s.Seats, catalogue.SeatsDefaults, jetstream.WorkQueuePolicy, SeatWork(seat.Name.Value))
		c.plan.Streams = append(c.plan.Streams, Stream{Config: cfg, Source: seat.Name.Pos})
	}
}

// publishedEvents are the event subjects some running principal may publish, sorted: each
// running module's own events and the events of each seat a running module claims. These are
// the subjects EVENTS stores (a grant names each exactly), so they are what its bytes must hold.
func (c *compilation) publishedEvents() []string {
	inv := c.ix.Catalogue.Inventory
	if inv == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	add := func(subject string) {
		if !seen[subject] {
			seen[subject] = true
			out = append(out, subject)
		}
	}
	running := map[string]bool{}
	for _, n := range inv.Nodes {
		for _, r := range n.Runs {
			m := c.ix.Modules[r.Value]
			if m == nil || running[m.Name.Value] {
				continue
			}
			running[m.Name.Value] = true
			for _, e := range m.Emits {
				add(ModuleEvent(m.Name.Value, e.Value))
			}
			for _, claim := range m.Claims {
				if seat := c.ix.Seat(claim.Value); seat != nil {
					for _, e := range seat.Emits {
						add(SeatEvent(seat.Name.Value, e.Value))
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// StoredOverhead is what a stream stores around each message beside its subject, headers and
// body: a file store's record adds its length, sequence, time, the subject's and the headers'
// lengths and a checksum, 34 bytes (server/filestore.go, fileStoreMsgSizeRaw); a memory store
// less. A stream's max_bytes counts the records.
const StoredOverhead = 34

// EventsBytes is what EVENTS holds when every subject keeps perSubject messages of up to size
// bytes: what its max_bytes must hold for no emitter to push out another's events.
func EventsBytes(perSubject, size int64, subjects []string) int64 {
	var n int64
	for _, s := range subjects {
		n += size + int64(len(s)) + StoredOverhead
	}
	return perSubject * n
}

// eventsPerSubject is how many messages each event subject keeps when mesh.yaml sets none: the
// default, or fewer so that every subject at its cap fits in maxBytes, rounded down to 1, 2 or 5
// times a power of ten so that an event added changes it rarely (a lowered cap drops what a
// subject holds beyond it: docs/nats.md, "Changes that drop messages"). At least one: to the
// server 0 is no cap at all, and limit-too-low says when not even one fits.
func eventsPerSubject(maxBytes, size int64, subjects []string) int64 {
	def := catalogue.EventsDefaults.MaxMsgsPerSubject
	one := EventsBytes(1, size, subjects)
	if one == 0 {
		return def
	}
	return max(1, min(def, roundDown125(maxBytes/one)))
}

// roundDown125 is the largest of 1, 2, 5, 10, 20, 50, … not above n (0 for n < 1).
func roundDown125(n int64) int64 {
	if n < 1 {
		return 0
	}
	var best int64 = 1
	for p := int64(1); p <= n; p *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if m*p <= n {
				best = m * p
			}
		}
		if p > n/10 {
			break
		}
	}
	return best
}

// streamConfig is one stream's configuration: the mesh's settings, and def where it sets none.
func streamConfig(name string, s catalogue.StreamSettings, def catalogue.StreamDefaults, retention jetstream.RetentionPolicy, subjects ...string) jetstream.StreamConfig {
	discard := jetstream.DiscardOld
	if def.DiscardNew {
		discard = jetstream.DiscardNew
	}
	storage := jetstream.FileStorage
	if s.Storage.Value == "memory" {
		storage = jetstream.MemoryStorage
	}
	return jetstream.StreamConfig{
		Name:              name,
		Subjects:          subjects,
		Retention:         retention,
		Discard:           discard,
		Storage:           storage,
		Replicas:          max(s.Replicas, 1),
		MaxAge:            s.MaxAge,
		MaxBytes:          orDefault(s.MaxBytes, def.MaxBytes),
		MaxMsgSize:        int32(orDefault(s.MaxMsgSize, def.MaxMsgSize)),
		MaxMsgsPerSubject: orDefault(s.MaxMsgsPerSubject, def.MaxMsgsPerSubject),
		MaxMsgs:           -1,
	}
}

func orDefault(v, def int64) int64 {
	if v == 0 {
		return def
	}
	return v
}

func orPos(p, def catalogue.Pos) catalogue.Pos {
	if p.File == "" {
		return def
	}
	return p
}

// consumers derives every durable consumer. Each is asserted before anything binds it: a
// module's runtime binds and never creates, because it has no authority over the JetStream API.
func (c *compilation) consumers() {
	mesh := c.ix.Catalogue.Mesh
	s := mesh.Streams
	add := func(stream, user string, cfg jetstream.ConsumerConfig, source catalogue.Pos) {
		c.plan.Consumers = append(c.plan.Consumers, consumer(stream, user, cfg, source))
	}

	if inv := c.ix.Catalogue.Inventory; inv != nil {
		// Each machine's consumers are derived on every core, into places counted here in
		// inventory order: a machine named twice gets its consumers once, from its first entry,
		// and a module it runs twice gets one.
		type machine struct {
			node *catalogue.Node
			runs []run // the consuming modules it runs, each once
			at   int   // where its consumers go
		}
		var machines []machine
		seen := map[string]bool{}
		total := 0
		for _, n := range inv.Nodes {
			if seen[n.Name.Value] {
				continue
			}
			seen[n.Name.Value] = true
			x := machine{node: n, at: total}
			modSeen := map[string]bool{}
			for _, r := range n.Runs {
				m := c.ix.Modules[r.Value]
				if m == nil || len(m.Consumes) == 0 || modSeen[r.Value] {
					continue
				}
				modSeen[r.Value] = true
				x.runs = append(x.runs, run{m, r.Pos})
			}
			total += 1 + len(x.runs)
			machines = append(machines, x)
		}
		start := len(c.plan.Consumers)
		c.plan.Consumers = slices.Grow(c.plan.Consumers, total)[:start+total]
		derived := c.plan.Consumers[start:]
		inParallel(len(machines), func(i int) {
			x := machines[i]
			c.machineConsumers(x.node, x.runs, derived[x.at:x.at+1+len(x.runs)])
		})
	}
	if follows := c.follows(); len(follows) > 0 {
		add(EventsStream, ControllerUser, withFilters(jetstream.ConsumerConfig{Durable: ControllerUser, AckWait: s.Events.AckWait}, follows...),
			mesh.Controller.Follows[0].Pos)
		reads := c.granted(len(mesh.Controller.Follows))
		for _, f := range mesh.Controller.Follows {
			cd := Consume(c.ix, f.Value)
			reads.addOf(cd.Emitter, f.Pos, func() (string, string) { return "follows " + f.Value, cd.reads() }, cd.Subjects...)
		}
		c.plan.Consumers[len(c.plan.Consumers)-1].Reads = reads.grants
	}
	meshPos := catalogue.Pos{File: mesh.File}
	add(ControlStream, ControllerUser, withFilters(jetstream.ConsumerConfig{Durable: ReportsConsumer, AckWait: s.Control.AckWait}, Report("*")), meshPos)
	add(ControlStream, ControllerUser, withFilters(jetstream.ConsumerConfig{Durable: EnrolmentsConsumer, AckWait: s.Control.AckWait}, Enrolment("*")), meshPos)
	for _, seat := range c.ix.AllSeats() {
		if len(seat.Accepts) > 0 {
			add(SeatStream(seat.Name.Value), "", withFilters(jetstream.ConsumerConfig{Durable: HolderConsumer, AckWait: s.Seats.AckWait},
				SeatWork(seat.Name.Value)), seat.Name.Pos)
		}
	}
}

// run is a module a machine runs, and the inventory's entry saying so.
type run struct {
	module *catalogue.Module
	source catalogue.Pos
}

// consumer is one durable consumer as the mesh asserts it.
func consumer(stream, user string, cfg jetstream.ConsumerConfig, source catalogue.Pos) Consumer {
	cfg.Name = cfg.Durable
	cfg.AckPolicy = jetstream.AckExplicitPolicy
	// The controller's window, a holder's own handling or a machine's apply decides when a
	// message is given up on; a server that dead-lettered first would discard it.
	cfg.MaxDeliver = -1
	if cfg.DeliverSubject == "" {
		cfg.MaxRequestExpires = MaxPullExpires
	}
	return Consumer{Stream: stream, Config: cfg, Source: source, User: user}
}

// machineConsumers derives one machine's consumers into out: its declarations' on NODES, then
// one on EVENTS per consuming module it runs (runs, in order).
func (c *compilation) machineConsumers(n *catalogue.Node, runs []run, out []Consumer) {
	node := n.Name.Value
	out[0] = consumer(NodesStream, NodeUser(node), withFilters(jetstream.ConsumerConfig{
		Durable:        node,
		DeliverSubject: DeliverNodes(node),
		AckWait:        NodeAckWait,
	}, Declaration(node)), n.Name.Pos)
	for i, r := range runs {
		m := r.module
		// Most consumed entries are one subject each.
		filters := make([]string, 0, len(m.Consumes))
		// What each entry reads, for a plan that explains: the subjects are the filters.
		var reads []Grant
		if c.explain {
			reads = make([]Grant, 0, len(m.Consumes))
		}
		for _, consumed := range m.Consumes {
			cd := Consume(c.ix, consumed.Value)
			filters = append(filters, cd.Subjects...)
			if c.explain {
				because, means := "consumes "+consumed.Value, cd.reads()
				for _, s := range cd.Subjects {
					reads = append(reads, Grant{Subject: s, Source: consumed.Pos, Because: because, Means: means, Module: cd.Emitter})
				}
			}
		}
		out[1+i] = consumer(EventsStream, ModuleUserName(node, m.Name.Value), withFilters(jetstream.ConsumerConfig{
			Durable: ModuleConsumer(node, m.Name.Value),
			AckWait: c.ix.Catalogue.Mesh.Streams.Events.AckWait,
		}, filters...), r.source)
		out[1+i].Reads = reads
	}
}

// MaxPullExpires is the longest one pull may wait for messages. Below the two minutes for which
// an account-per-module mesh keeps the route a pull's messages travel back by (the pull export's
// response threshold): a longer pull would have its messages delivered into nothing, to wait for
// AckWait (docs/nats.md, "Traps"). nats.go's own pulls wait 30 s.
const MaxPullExpires = time.Minute

// ServerDefaultMaxConsumers is how many consumers nats-server lets a stream have unless the
// stream says otherwise (JSDefaultMaxConsumersPerStream, 2.15). A stream's -1 does not lift it:
// only a positive max_consumers on the stream does (server/consumer.go).
const ServerDefaultMaxConsumers = 1000

// roomForConsumers gives a stream holding more consumers than the server allows by default a
// max_consumers of its own, rounded up to the next thousand. EVENTS has one consumer per
// consuming module per machine and NODES one per machine, so a large mesh passes the default;
// without this its apply fails at the 1,001st consumer with "maximum consumers limit reached".
// Rounded, so adding a module changes the stream only when it crosses a thousand.
func (c *compilation) roomForConsumers() {
	count := map[string]int{}
	for _, k := range c.plan.Consumers {
		count[k.Stream]++
	}
	for i := range c.plan.Streams {
		s := &c.plan.Streams[i].Config
		if n := count[s.Name]; n > ServerDefaultMaxConsumers {
			s.MaxConsumers = (n/1000 + 1) * 1000
		}
	}
}

// withFilters sets a consumer's filters: de-duplicated, without a filter a wider one covers
// (the server refuses overlapping filters, 10138), and as FilterSubject when there is one, which
// is the form the server reports back.
func withFilters(cfg jetstream.ConsumerConfig, filters ...string) jetstream.ConsumerConfig {
	filters = Minimise(filters)
	if len(filters) == 1 {
		cfg.FilterSubject = filters[0]
	} else {
		cfg.FilterSubjects = filters
	}
	return cfg
}
