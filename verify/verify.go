// Package verify proves a catalogue's least privilege on a real server, as `meshc verify` runs it:
// the golden files as committed, loaded by a throwaway nats-server (or a live bus reached with
// the credentials given), tried as every principal. The catalogue says what each principal may
// do; the golden files are what the server enforces; every try is judged by the server's own
// answer (package principal), so a golden file edited by hand, or a bug in emit, is a failure
// naming the principal, the subject and the grant that let it through.
//
// The proof runs in classes, each a kind of claim (Classes): the files load and the plan
// applies; every principal connects; every grant works; every refusal is the server's; every
// flow the catalogue declares delivers; and every attack meshc knows is blocked — ack steal,
// reply injection, caller forgery, floods against the limits.
package verify

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/principal"
)

// Class is one kind of claim the proof makes: a value, as a lint rule is, from which the
// command's help, the README and SARIF's rule metadata are written.
type Class struct {
	ID string
	// Summary says what the class tries, Why what a failure of it lets happen.
	Summary, Why string
	// Live says what the class tries on a live bus, "" when it tries nothing there.
	Live string
}

// The classes, in the order the proof runs them.
var (
	Load = Class{ID: "load",
		Summary: "the server loads the golden files as committed, and mesh-controller applies golden/plan.json with its own grants",
		Why:     "a file the server refuses, or a plan its controller cannot apply, is a bus that never starts serving the catalogue"}
	Connect = Class{ID: "connect",
		Summary: "every principal the catalogue derives connects, and the golden files hold no principal it does not",
		Why:     "a principal missing from the golden files cannot connect; one the catalogue does not derive is authority nobody declared",
		Live:    "each principal whose credentials are given connects with them"}
	Grant = Class{ID: "grant",
		Summary: "every grant the catalogue derives works: publishes a stream answers, tool calls served in the module's queue group, pulls with expiry, consumer info, acks in both forms, subscriptions",
		Why:     "a grant the server refuses is a module that cannot do what its manifest says, failing far from the manifest",
		Live:    "every grant, inert: a publish carries an expected last sequence no stream reaches, so nothing is stored; a pull asks past its consumer's expiry, so nothing is delivered; tool calls, tool subscriptions and heartbeats are left out, since they would reach live code"}
	Refusal = Class{ID: "refusal",
		Summary: "every try outside a principal's grants is refused with the server's Permissions Violation: its grants' wildcard neighbours, and a sample of every other principal's subjects",
		Why:     "a try the server lets through is authority the catalogue never gave: a grant added by hand, or a wildcard one token too wide",
		Live:    "the same, each publish inert"}
	Flow = Class{ID: "flow",
		Summary: "every flow the catalogue declares delivers: each event to every consumer that consumes it and to no other, work to its seat's holder, declarations, reports, heartbeats and enrolment answers, each tool call served once",
		Why:     "a consumer's filter or a stream that differs from the catalogue loses events or hands a module events it never asked for",
		Live:    ""}
	AckSteal = Class{ID: "ack-steal",
		Summary: "no principal may send another consumer's acks: an ack grant one token too long lets `+NXT` deliver another consumer's messages to the sender",
		Why:     "docs/nats.md, \"Ack subjects\": a bare `>` in the newer ack form admits the older form of another consumer's ack",
		Live:    "the same, with a `+WPI` body that changes nothing if a hole lets it through"}
	Injection = Class{ID: "reply-injection",
		Summary: "with an account per module, no answer aimed at another principal's subjects lands: a consumer info or a tool's answer aimed at an event, a seat's work, a tool, an inbox, a machine's deliveries or the JetStream API",
		Why:     "docs/nats.md, \"What accounts do not block\": an answer follows its account's imports unchecked, so one import wider than the grants lets an answer forge an event",
		Live:    "consumer info aimed at events and work, judged by the controller's read of the streams when its credentials are given"}
	Forgery = Class{ID: "caller-forgery",
		Summary: "with an account per module, a tool's server learns its caller from the server's Nats-Request-Info and golden/plan.json's callers, and a header the caller or a colluding tool wrote is not believed",
		Why:     "docs/nats.md, \"Who called a tool\": a tool that believes a forged caller acts for someone who may not call it",
		Live:    ""}
	Flood = Class{ID: "flood",
		Summary: "each kind of principal's floods meet a limit: a message past the account's max_payload, a stream's largest message, subscriptions and connections past the account's limits, a pull waiting past its consumer's max_expires",
		Why:     "docs/nats.md, \"Limits and floods\": a limit missing from the golden files lets one principal fill what every other needs",
		Live:    "a stream's largest message (inert) and a pull past its expiry: the others would take what live clients need"}
)

// Classes are every class, in the order the proof runs them.
var Classes = []Class{Load, Connect, Grant, Refusal, Flow, AckSteal, Injection, Forgery, Flood}

// ClassByID is the class of an id, or the zero class.
func ClassByID(id string) Class {
	for _, c := range Classes {
		if c.ID == id {
			return c
		}
	}
	return Class{}
}

// Failure is one try whose answer was not the one the catalogue calls for.
type Failure struct {
	Class     string `json:"class"`
	Principal string `json:"principal"`
	Subject   string `json:"subject"`
	// Grant is what in the golden files let the try through, or kept it from working: a
	// permission entry, an import, a consumer; "" when nothing there names it.
	Grant string `json:"grant"`
	// File and Line are where Grant is written (Line 0 when unknown).
	File    string `json:"file"`
	Line    int    `json:"line"`
	Message string `json:"message"`
}

// Tried is what one class tried.
type Tried struct {
	Class string `json:"class"`
	// Tries is how many tries the class made, Failed how many failed.
	Tries  int `json:"tries"`
	Failed int `json:"failed"`
	// Said says what was tried, in words; Skipped, when the class tried nothing, why.
	Said    string `json:"said,omitempty"`
	Skipped string `json:"skipped,omitempty"`
	// Took is how long the class took: for the benchmark, never written.
	Took time.Duration `json:"-"`
}

// Result is a proof's outcome: what it proved, how, and every failure.
type Result struct {
	// Target says what was proven: a throwaway server on a golden directory, or a live bus.
	Target    string `json:"target"`
	Live      bool   `json:"live"`
	Isolation string `json:"isolation"`
	Auth      string `json:"auth"`
	// Principals are those proven; Unproven those the catalogue derives that were not (no
	// credentials given for them on a live bus).
	Principals []string  `json:"principals"`
	Unproven   []string  `json:"unproven"`
	Classes    []Tried   `json:"classes"`
	Failures   []Failure `json:"failures"`
}

// Failed reports whether any try failed.
func (r *Result) Failed() bool { return len(r.Failures) > 0 }

// Options say what to prove and how widely.
type Options struct {
	// Golden is the golden directory the throwaway server runs.
	Golden string
	// Live, when set, proves a live bus instead of a throwaway server.
	Live *Live
	// Sample bounds the tries each principal makes of other principals' subjects, and the
	// victims each attack tries; default 256. Every principal is a victim in somebody's sample.
	Sample int
}

// Live is a live bus and the credentials of the principals to prove it as.
type Live struct {
	// URL is the bus, as given (for the result); Options connect there (TLS, timeouts),
	// credentials apart.
	URL string
	// As are each principal's credentials, by user.
	As map[string][]nats.Option
}

// proof is one run: what the catalogue says, what the golden files say, how to reach the bus, and
// what was found.
type proof struct {
	ctx      context.Context
	expected *compiler.Plan
	golden   *golden
	live     bool
	url      string
	sample   int
	// as are the credentials of every principal that can be tried.
	as map[string][]nats.Option
	// keys name the throwaway's accounts by the keys the golden files record (operator mode):
	// how a tool's server reads Nats-Request-Info against golden/plan.json. accountKeys are
	// the throwaway's keys of the accounts by name.
	keys, accountKeys map[string]string
	// srv is the throwaway server, nil on a live bus.
	srv *server.Server

	conns  map[string]*principal.Conn
	served *served
	// calls are the tool calls the grant class made, each to be served once.
	calls []made

	mu     sync.Mutex
	result *Result
	tried  map[string]*Tried
}

// Run proves the catalogue compiled into expected: on a throwaway server running the golden
// directory opts.Golden as committed, or on opts.Live. It returns the result, whose failures are
// the proof's findings; an error means it could not prove anything (a golden file missing, a
// server it cannot start or reach).
func Run(ctx context.Context, expected *compiler.Plan, opts Options) (*Result, error) {
	if opts.Sample <= 0 {
		opts.Sample = 256
	}
	g, err := readGolden(opts.Golden, expected)
	if err != nil {
		return nil, err
	}
	if g.broken != nil && g.brokenFile == g.file && opts.Live != nil {
		g.broken = nil // a live bus runs what it runs; only plan.json is read from the files
	}
	p := &proof{ctx: ctx, expected: expected, golden: g, sample: opts.Sample, live: opts.Live != nil,
		conns: map[string]*principal.Conn{}, tried: map[string]*Tried{}, served: newServed()}
	p.result = &Result{Isolation: catalogue.IsolationShared, Auth: catalogue.AuthPassword, Live: p.live, Principals: []string{}, Unproven: []string{}, Failures: []Failure{}}
	if len(expected.Accounts) > 0 {
		p.result.Isolation = catalogue.IsolationPerModule
	}
	switch {
	case expected.Operator != nil:
		p.result.Auth = catalogue.AuthOperator
	case expected.NKeys:
		p.result.Auth = catalogue.AuthNKey
	}
	for _, c := range Classes {
		p.tried[c.ID] = &Tried{Class: c.ID}
	}
	defer p.closeAll()
	defer p.served.close()
	if p.live {
		p.url, p.as = opts.Live.URL, opts.Live.As
		p.result.Target = "the bus at " + opts.Live.URL
		p.skip(Load, "a live bus runs what it runs: `meshc plan` compares it with the catalogue")
	} else if g.broken != nil {
		p.result.Target = "a throwaway nats-server on " + opts.Golden
		p.try(Load, 1)
		p.record(Failure{Class: Load.ID, File: g.brokenFile, Message: g.broken.Error()})
		return p.finish(), nil
	} else {
		t, err := startThrowaway(ctx, p)
		if err != nil {
			return nil, err
		}
		defer t.stop()
		p.result.Target = "a throwaway nats-server on " + opts.Golden
		if !p.loaded() {
			return p.finish(), nil
		}
	}
	p.connectAll()
	if len(p.conns) == 0 {
		return p.finish(), nil
	}
	if !p.live {
		if err := p.serveTools(); err != nil {
			return nil, err
		}
	}
	for _, class := range []struct {
		c   Class
		run func()
	}{{Grant, p.grants}, {Refusal, p.refusals}, {Flow, p.flows}, {AckSteal, p.ackSteal}, {Forgery, p.forgery}, {Injection, p.injection}, {Flood, p.floods}} {
		start := time.Now()
		class.run()
		p.tried[class.c.ID].Took = time.Since(start)
	}
	return p.finish(), nil
}

// loaded reports whether the load class passed: nothing else can be tried on a server that did
// not take the golden files.
func (p *proof) loaded() bool { return p.tried[Load.ID].Failed == 0 }

// try counts a try of class.
func (p *proof) try(c Class, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tried[c.ID].Tries += n
}

// fail records a failed try, placed at grant in the golden file the server runs.
func (p *proof) fail(c Class, user, subject, grant, format string, args ...any) {
	f := Failure{Class: c.ID, Principal: user, Subject: subject, Grant: grant, File: p.golden.file, Message: fmt.Sprintf(format, args...)}
	if grant != "" {
		f.Line = p.golden.line(user, grant)
	}
	p.record(f)
}

// failImport records a failed try placed at the import of user's account that covers subject,
// when the golden file has one.
func (p *proof) failImport(c Class, user, subject, format string, args ...any) {
	grant, line := p.golden.importedBy(user, subject)
	p.record(Failure{Class: c.ID, Principal: user, Subject: subject, Grant: grant, File: p.golden.file, Line: line, Message: fmt.Sprintf(format, args...)})
}

// failInPlan records a failed try, placed in plan.json at the stream or consumer (`STREAM` or
// `STREAM/CONSUMER`) whose settings decide it.
func (p *proof) failInPlan(c Class, user, subject, object, format string, args ...any) {
	stream, consumer, isConsumer := strings.Cut(object, "/")
	what, line := "stream "+object, p.golden.planLine(stream, "")
	if isConsumer {
		what, line = "consumer "+object, p.golden.planLine(stream, consumer)
	}
	p.record(Failure{Class: c.ID, Principal: user, Subject: subject, Grant: what, File: filepath.Join(p.golden.dir, emit.PlanFile), Line: line, Message: fmt.Sprintf(format, args...)})
}

func (p *proof) record(f Failure) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tried[f.Class].Failed++
	p.result.Failures = append(p.result.Failures, f)
}

// said says what a class tried.
func (p *proof) said(c Class, format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tried[c.ID].Said = fmt.Sprintf(format, args...)
}

// skip says why a class tried nothing.
func (p *proof) skip(c Class, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tried[c.ID].Skipped = why
}

func (p *proof) finish() *Result {
	r := p.result
	for _, c := range Classes {
		t := *p.tried[c.ID]
		if t.Tries == 0 && t.Skipped == "" && t.Failed == 0 {
			t.Skipped = "not reached: an earlier class failed"
		}
		r.Classes = append(r.Classes, t)
	}
	for _, u := range p.expected.Users {
		if p.conns[u.Name] != nil {
			r.Principals = append(r.Principals, u.Name)
		} else {
			r.Unproven = append(r.Unproven, u.Name)
		}
	}
	slices.SortStableFunc(r.Failures, func(a, b Failure) int {
		return cmp.Or(classOrder(a.Class)-classOrder(b.Class), strings.Compare(a.Principal, b.Principal),
			strings.Compare(a.Subject, b.Subject), strings.Compare(a.Message, b.Message))
	})
	r.Failures = slices.CompactFunc(r.Failures, func(a, b Failure) bool { return a == b })
	return r
}

func classOrder(id string) int {
	return slices.IndexFunc(Classes, func(c Class) bool { return c.ID == id })
}

// connectAll connects as every principal the catalogue derives that can be tried, and says which
// principals the golden files hold that the catalogue does not.
func (p *proof) connectAll() {
	if !p.live {
		for name, u := range p.golden.users {
			if p.expected.User(name) == nil {
				p.try(Connect, 1)
				p.fail(Connect, name, "", "", "%s holds principal %s, which the catalogue does not derive: authority nobody declared; remove it (meshc emit rewrites the file)", p.golden.file, u.Name)
			}
		}
	}
	var mu sync.Mutex
	p.each(p.expected.Users, func(u compiler.User) {
		as, ok := p.as[u.Name]
		if !ok {
			if !p.live {
				p.try(Connect, 1)
				p.fail(Connect, u.Name, "", "", "%s is derived by the catalogue but %s does not hold it, so it cannot connect; run `meshc emit` (or `meshc mint --missing` first)", u.Name, p.golden.file)
			}
			return
		}
		p.try(Connect, 1)
		c, err := p.dial(u.Name, as)
		if err != nil {
			p.fail(Connect, u.Name, "", "", "%v", err)
			return
		}
		mu.Lock()
		p.conns[u.Name] = c
		mu.Unlock()
	})
	p.said(Connect, "%d principals connected", len(p.conns))
}

// dial connects as user with its credentials.
func (p *proof) dial(user string, as []nats.Option) (*principal.Conn, error) {
	return principal.Connect(p.url, user, append([]nats.Option{nats.Name("meshc verify " + user), nats.Timeout(10 * time.Second)}, as...)...)
}

func (p *proof) closeAll() {
	for _, c := range p.conns {
		c.Close()
	}
}

// each runs f on every user at once, a few at a time: the server, not the proof, is what is slow.
func (p *proof) each(users []compiler.User, f func(compiler.User)) {
	parallel(len(users), func(i int) { f(users[i]) })
}

// parallel runs f(0) … f(n-1), at most 16 at once.
func parallel(n int, f func(int)) {
	var wg sync.WaitGroup
	limit := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		limit <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-limit }()
			f(i)
		}()
	}
	wg.Wait()
}

// connected are the expected users the proof is connected as, in the plan's order.
func (p *proof) connected() []compiler.User {
	var out []compiler.User
	for _, u := range p.expected.Users {
		if p.conns[u.Name] != nil {
			out = append(out, u)
		}
	}
	return out
}

// serverAccount is the throwaway server's account of a name, nil on a live bus.
func (p *proof) serverAccount(name string) *server.Account {
	if p.srv == nil {
		return nil
	}
	if key, ok := p.accountKeys[name]; ok {
		name = key
	}
	a, err := p.srv.LookupAccount(name)
	if err != nil {
		return nil
	}
	return a
}

// made is a tool call the proof made.
type made struct{ user, tool, body string }

// controller is mesh-controller's connection, nil when the proof has none (a live bus whose
// controller's credentials were not given).
func (p *proof) controller() *principal.Conn { return p.conns[compiler.ControllerUser] }

// timeout bounds one request of the proof.
func (p *proof) timeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(p.ctx, 10*time.Second)
}
