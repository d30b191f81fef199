package verify

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/principal"
)

// ackSteal tries, as every principal, to send another pull consumer's ack through its own ack
// grants: consumer V's older ack form `$JS.ACK.<V's stream>.<V>.*.*.*.*.*` carrying the thief's
// own stream and consumer where the newer form carries a domain and an account hash, so a newer
// ack grant ending in a bare `>` would admit it, and V take it as its own (docs/nats.md, "Ack
// subjects"). On a throwaway server the body is `+NXT`, which would deliver V's next message to
// the thief; on a live bus `+WPI`, which changes nothing even through a hole. Each try must be
// the server's violation, and nothing may reach the thief.
func (p *proof) ackSteal() {
	var pulls []compiler.Consumer
	for _, c := range p.expected.Consumers {
		if c.Config.DeliverSubject == "" {
			pulls = append(pulls, c)
		}
	}
	if len(pulls) == 0 {
		p.skip(AckSteal, "the catalogue derives no pull consumer")
		return
	}
	body := `+NXT {"batch":1}`
	if p.live {
		body = "+WPI"
	}
	p.each(p.connected(), func(u compiler.User) {
		c := p.conns[u.Name]
		var own []compiler.Consumer
		for _, cons := range p.expected.Consumers {
			if slices.Contains(u.Publish.Allow, compiler.Ack(cons.Stream, compiler.ConsumerName(cons.Config))) {
				own = append(own, cons)
			}
		}
		if len(own) == 0 {
			// No consumer of its own: the try names one it might pretend to own.
			own = pulls[:1]
		}
		// The forged acks ask for the stolen message at the thief's inbox, where it would show.
		// A serving user has none: its tries are judged by the server's violation alone.
		inbox := c.NC.NewInbox()
		var stolen *nats.Subscription
		if u.HasInbox() {
			var err error
			if stolen, err = c.Subscribes(inbox); err != nil {
				p.fail(AckSteal, u.Name, inbox, "", "%v", err)
				return
			}
			defer stolen.Unsubscribe()
		}
		var tries []principal.Try
		for _, o := range own {
			same := func(c compiler.Consumer) bool {
				return c.Stream == o.Stream && compiler.ConsumerName(c.Config) == compiler.ConsumerName(o.Config)
			}
			at := max(slices.IndexFunc(pulls, same), 0)
			for k := 1; k < len(pulls) && k <= p.sample; k++ {
				v := pulls[(at+k)%len(pulls)]
				if slices.ContainsFunc(own, func(c compiler.Consumer) bool {
					return c.Stream == v.Stream && compiler.ConsumerName(c.Config) == compiler.ConsumerName(v.Config)
				}) {
					continue // its own: acknowledging it is its grant
				}
				tries = append(tries, principal.Try{Op: principal.Publish, Subject: stealing(v, o), Body: body, Reply: inbox})
			}
		}
		p.try(AckSteal, len(tries))
		unrefused, err := c.Unrefused(tries, principal.Wait)
		if err != nil {
			p.fail(AckSteal, u.Name, "", "", "%v", err)
			return
		}
		for _, t := range unrefused {
			p.fail(AckSteal, u.Name, t.Subject, p.golden.allowedBy(u.Name, true, t.Subject),
				"%s may publish %s, another consumer's ack in the older form: the ack grant must have its exact length, never a final `>` (docs/nats.md, \"Ack subjects\"); run `meshc emit`", u.Name, t.Subject)
		}
		if stolen == nil {
			return
		}
		if m, err := stolen.NextMsg(100 * time.Millisecond); err == nil {
			p.fail(AckSteal, u.Name, m.Subject, "", "another consumer's message reached %s through a forged ack: %q", u.Name, m.Data)
		}
	})
	p.said(AckSteal, "%d forged acks of other consumers refused, each with a body that would steal their next message", p.tried[AckSteal.ID].Tries-p.tried[AckSteal.ID].Failed)
}

// stealing is the older-form ack of victim that carries own's stream and consumer: nine tokens,
// which a newer-form grant of own ending in a bare `>` would admit.
func stealing(victim, own compiler.Consumer) string {
	v := strings.TrimSuffix(compiler.Ack(victim.Stream, compiler.ConsumerName(victim.Config)), "*.*.*.*.*")
	return v + own.Stream + "." + compiler.ConsumerName(own.Config) + ".1.1.1"
}

// isolated reports whether the catalogue gives each module an account of its own.
func (p *proof) isolated() bool { return len(p.expected.Accounts) > 0 }

// accountOf is a principal's account as the catalogue derives it.
func (p *proof) accountOf(user string) string {
	if u := p.expected.User(user); u != nil && u.Account != "" {
		return u.Account
	}
	return p.expected.Account
}

// forgery proves what a tool's server may believe about its caller, with an account per module:
// a caller writes a Nats-Request-Info of its own naming another account, and the server must
// replace it, so the check golden/plan.json's served tools make (compiler.ServedTool.Caller)
// names the real caller; and where the catalogue lets one caller call two tools of two other
// modules, a call relayed through the first tool's server, which forges the header, must be
// refused by the second tool's check (docs/nats.md, "Who called a tool").
func (p *proof) forgery() {
	if p.live {
		p.skip(Forgery, "a forged call would reach a live tool")
		return
	}
	if !p.isolated() {
		p.skip(Forgery, "in one account (isolation: shared-account) no call crosses an import, so the server stamps no caller: a tool cannot learn who called it")
		return
	}
	byAccount := map[string]string{}
	for _, u := range p.connected() {
		if _, ok := byAccount[u.Account]; !ok {
			byAccount[u.Account] = u.Name
		}
	}
	var mu sync.Mutex
	tried := 0
	parallel(len(p.expected.Tools), func(i int) {
		t := p.expected.Tools[i]
		caller := p.callerOf(t, byAccount)
		if caller == "" {
			return
		}
		golden := p.golden.plan.ServedTool(t.Subject)
		forged := p.forgedFor(caller, t)
		body := fmt.Sprintf("meshc verify forgery of %s by %s", t.Subject, caller)
		m := nats.NewMsg(t.Subject)
		m.Header.Set(compiler.RequestInfoHeader, `{"acc":"`+forged+`"}`)
		m.Data = []byte(body)
		mu.Lock()
		tried++
		mu.Unlock()
		p.try(Forgery, 1)
		if _, err := p.conns[caller].NC.RequestMsg(m, principal.Wait); err != nil {
			p.fail(Forgery, caller, t.Subject, "", "%s calling %s: %v", caller, t.Subject, err)
			return
		}
		got := p.served.received(body)
		switch {
		case len(got) == 0:
			p.fail(Forgery, caller, t.Subject, "", "%s's call of %s reached no server", caller, t.Subject)
		case golden == nil:
			p.fail(Forgery, caller, t.Subject, "", "golden/plan.json lists no served tool %s, so its server has no callers to check a call against; run `meshc emit`", t.Subject)
		default:
			who, err := golden.Caller(got[0].Reply, p.ourKeys(got[0].Header.Get(compiler.RequestInfoHeader)))
			if err != nil || who != p.accountOf(caller) {
				p.fail(Forgery, caller, t.Subject, "tools: "+t.Subject, "%s called %s with a header naming %s; the tool's check of golden/plan.json answered %q, %v, where the caller is %s",
					caller, t.Subject, forged, who, err, p.accountOf(caller))
			}
		}
	})
	relayed := p.relayedForgery()
	if tried == 0 && relayed == 0 {
		p.skip(Forgery, "no running module serves a tool a principal of another account calls")
		return
	}
	p.said(Forgery, "%d calls with a caller's own forged header stamped by the server, %d relayed through a colluding tool refused by golden/plan.json's callers", tried, relayed)
}

// callerOf is a connected principal of another account than the tool's that may call it: of the
// first of the tool's callers with one, by byAccount (each account's first connected principal);
// "" when there is none.
func (p *proof) callerOf(t compiler.ServedTool, byAccount map[string]string) string {
	for _, a := range t.Callers {
		if a == t.Account || byAccount[a] == "" {
			continue
		}
		if u := p.expected.User(byAccount[a]); u != nil && len(u.Why(compiler.Publish, t.Subject)) > 0 {
			return u.Name
		}
	}
	return ""
}

// forgedFor is an account the header a caller forges names: another caller of the tool when
// there is one (the forgery that is believed if the server keeps it), else the tool's own.
func (p *proof) forgedFor(caller string, t compiler.ServedTool) string {
	for _, a := range t.Callers {
		if a != p.accountOf(caller) {
			return a
		}
	}
	return t.Account
}

// ourKeys turns a Nats-Request-Info header naming the throwaway's accounts by their keys
// (operator mode) into one naming them by the keys the golden files record, which plan.json's
// served tools know.
func (p *proof) ourKeys(header string) string {
	if len(p.keys) == 0 || header == "" {
		return header
	}
	var info map[string]any
	if json.Unmarshal([]byte(header), &info) != nil {
		return header
	}
	for _, k := range []string{"acc", "svc"} {
		if s, ok := info[k].(string); ok && p.keys[s] != "" {
			info[k] = p.keys[s]
		}
	}
	b, _ := json.Marshal(info)
	return string(b)
}

// relayedForgery finds callers that may call two tools of two other accounts and relays a call
// of the second through the first's server, which forges the caller; the second's check must
// refuse it. It returns how many it tried.
func (p *proof) relayedForgery() int {
	n := 0
	// The tools each account's principals may call, from the plan's served tools' callers.
	calls := map[string][]compiler.ServedTool{}
	for _, t := range p.expected.Tools {
		for _, a := range t.Callers {
			if a != t.Account {
				calls[a] = append(calls[a], t)
			}
		}
	}
	for _, u := range p.connected() {
		tools := calls[u.Account]
		first, second := -1, -1
		for i := range tools {
			if j := slices.IndexFunc(tools, func(t compiler.ServedTool) bool { return t.Account != tools[i].Account }); j >= 0 {
				first, second = i, j
				break
			}
		}
		if first < 0 || len(u.Why(compiler.Publish, tools[first].Subject)) == 0 || len(u.Why(compiler.Publish, tools[second].Subject)) == 0 {
			continue
		}
		a, b := tools[first], tools[second]
		golden := p.golden.plan.ServedTool(b.Subject)
		if golden == nil {
			continue // said by the direct forgery
		}
		forged := p.forgedFor(u.Name, b)
		body := colludeMarker + forged
		before := len(p.served.received(body))
		n++
		p.try(Forgery, 1)
		if err := p.conns[u.Name].RequestsWithReply(a.Subject, b.Subject, body); err != nil {
			p.fail(Forgery, u.Name, a.Subject, "", "%v", err)
			continue
		}
		// The relayed call reaches the second tool's server a moment after the first's.
		var relayed *received
		for deadline := time.Now().Add(principal.Wait); relayed == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			for _, r := range p.served.received(body)[before:] {
				if r.Subject == b.Subject {
					relayed = &r
				}
			}
		}
		if relayed == nil {
			p.fail(Forgery, u.Name, b.Subject, "", "a call of %s relayed by %s's server never reached %s's server, so the check of its callers was never tried", b.Subject, a.Module, b.Module)
			break
		}
		if who, err := golden.Caller(relayed.Reply, p.ourKeys(relayed.Header.Get(compiler.RequestInfoHeader))); err == nil {
			p.fail(Forgery, u.Name, b.Subject, "tools: "+b.Subject, "a call of %s relayed by %s's server, which forged the caller %s, was believed by the check of golden/plan.json's callers as coming from %s", b.Subject, a.Module, forged, who)
		}
		break // one relay shape proves the check; every caller would repeat it
	}
	return n
}

// received is one call a tool's server received.
type received struct {
	Subject, Reply string
	Header         nats.Header
}

// injection aims answers at other principals' subjects, with an account per module, and requires
// none to land: every consumer info a principal may ask, and every tool call it may make, with the
// reply set to another module's event, a seat's work, another account's tool, another account's
// inbox, a machine's deliveries, the JetStream API (a purge), and whatever the golden files import
// beyond the catalogue. Within one account an answer lands wherever it is aimed: a known limit,
// said and not tried.
func (p *proof) injection() {
	if !p.isolated() {
		p.skip(Injection, "in one account (isolation: shared-account) whoever makes a request chooses where its answer goes, and the server delivers it there unchecked: a known limit (docs/commands.md, \"Security: isolation and auth\"), which an account per module closes")
		return
	}
	controller := p.controller()
	if controller == nil {
		p.skip(Injection, "landings are read by mesh-controller, whose credentials were not given")
		return
	}
	ctx, cancel := p.timeout()
	defer cancel()
	// The streams before: anything new in them afterwards is a landing.
	before := map[string]uint64{}
	for _, s := range p.expected.Streams {
		if st, err := controller.JS.Stream(ctx, s.Config.Name); err == nil {
			before[s.Config.Name] = st.CachedInfo().State.LastSeq
		}
	}
	// A seat's queue holds one item, so a purge aimed at it would show.
	var purgeable string
	for _, u := range p.connected() {
		for _, s := range u.Publish.Allow {
			if stream := p.streamOf(s); !p.live && purgeable == "" && strings.HasPrefix(stream, "SEAT_") && !strings.ContainsAny(s, "*>") {
				if p.conns[u.Name].PublishesAndIsStored(ctx, s, stream, "meshc verify: work a purge would take") == nil {
					purgeable = stream
					before[stream]++
				}
			}
		}
	}
	victims := p.victims()
	var watch []*nats.Subscription
	defer func() {
		for _, s := range watch {
			s.Unsubscribe()
		}
	}()
	for _, v := range victims {
		if v.listener == "" {
			continue
		}
		if sub, err := p.conns[v.listener].NC.SubscribeSync(v.subject); err == nil {
			watch = append(watch, sub)
		}
	}
	p.conns[compiler.ControllerUser].NC.Flush()
	for _, c := range p.served.conns {
		c.NC.Flush()
	}
	served := p.served.total()
	for _, u := range p.connected() {
		c := p.conns[u.Name]
		var requests []struct{ subject, body string }
		for _, s := range u.Publish.Allow {
			for _, cons := range p.expected.Consumers {
				if s == compiler.ConsumerInfo(cons.Stream, compiler.ConsumerName(cons.Config)) {
					requests = append(requests, struct{ subject, body string }{s, ""})
				}
			}
		}
		for _, t := range p.expected.Tools {
			if p.live {
				break // a call would run a live tool
			}
			if t.Account != u.Account && len(u.Why(compiler.Publish, t.Subject)) > 0 {
				requests = append(requests, struct{ subject, body string }{t.Subject, "meshc verify injection by " + u.Name})
				break
			}
		}
		for _, r := range requests {
			for _, v := range p.targetsOf(u, victims) {
				body := r.body
				if v.purge && body != "" {
					body = purgeMarker + u.Name
				} else if v.purge {
					continue // a consumer info's answer is no purge request
				}
				p.try(Injection, 1)
				if err := c.RequestsWithReply(r.subject, v.subject, body); err != nil {
					p.fail(Injection, u.Name, r.subject, "", "%v", err)
				}
			}
		}
		c.NC.Flush()
	}
	// The answers' chance to travel.
	time.Sleep(500 * time.Millisecond)
	for _, sub := range watch {
		for {
			m, err := sub.NextMsg(10 * time.Millisecond)
			if err != nil {
				break
			}
			p.landed(m.Subject, m.Data)
		}
	}
	// A tool's server receives the injections' calls themselves; what lands there is an answer.
	for _, r := range p.served.since(served) {
		if strings.Contains(r.body, principal.Answers) || strings.Contains(r.body, "consumer_info_response") {
			p.landed(r.Subject, []byte(r.body))
		}
	}
	for _, s := range p.expected.Streams {
		st, err := controller.JS.Stream(ctx, s.Config.Name)
		if err != nil {
			continue
		}
		info := st.CachedInfo()
		if s.Config.Name == purgeable && info.State.Msgs == 0 {
			p.fail(Injection, "", "$JS.API.STREAM.PURGE."+purgeable, "", "a tool's empty answer aimed at $JS.API.STREAM.PURGE.%s purged the stream: an answer reached the JetStream API", purgeable)
		}
		for seq := before[s.Config.Name] + 1; seq <= info.State.LastSeq; seq++ {
			if m, err := st.GetMsg(ctx, seq); err == nil {
				p.landed(m.Subject, m.Data)
			}
		}
	}
	p.said(Injection, "%d answers aimed at other principals' events, work, tools, inboxes, deliveries and the JetStream API, none landing", p.tried[Injection.ID].Tries-p.tried[Injection.ID].Failed)
}

// victim is a subject an injection aims at, and who would hear it land: a listener subscribed as
// its rightful subscriber, or the streams and tool servers the proof reads.
type victim struct {
	subject, listener, account string
	purge                      bool
}

// victims are what answers are aimed at: a few of each kind, each owned by some account.
func (p *proof) victims() []victim {
	var out []victim
	kinds := map[string]int{}
	add := func(kind string, v victim) {
		if kinds[kind] < 3 && validSubject(v.subject) {
			kinds[kind]++
			out = append(out, v)
		}
	}
	for _, u := range p.connected() {
		for _, s := range u.Publish.Allow {
			switch {
			case strings.ContainsAny(s, "*>"):
			case compiler.Covers(compiler.ModuleEvent("*", ">"), s), compiler.Covers(compiler.SeatEvent("*", ">"), s):
				add("event", victim{subject: s, account: u.Account})
			case compiler.Covers(compiler.Work("*", "*"), s):
				add("work", victim{subject: s, account: u.Account})
			}
		}
		for _, s := range u.Subscribe.Allow {
			subject, _ := compiler.SplitQueue(s)
			switch {
			case subject == compiler.Inbox(u.Name):
				add("inbox", victim{subject: compiler.InboxPrefix(u.Name) + ".injected", listener: u.Name, account: u.Account})
			case compiler.Covers(compiler.DeliverNodes("*"), subject):
				add("deliver", victim{subject: subject, listener: u.Name, account: u.Account})
			}
		}
	}
	if p.live {
		return out // a tool's or the JetStream API's landing would act on the live bus
	}
	for _, t := range p.expected.Tools {
		add("tool", victim{subject: t.Subject, account: t.Account})
	}
	for _, s := range p.expected.Streams {
		if strings.HasPrefix(s.Config.Name, "SEAT_") {
			add("purge", victim{subject: "$JS.API.STREAM.PURGE." + s.Config.Name, account: p.expected.Account, purge: true})
			break
		}
	}
	return out
}

// targetsOf are the victims an injection by u aims at: those of other accounts that u's account
// does not import as the catalogue derives it (an answer aimed at a subject its own account
// imports gives it nothing it could not publish: docs/commands.md, "Security: isolation and auth"), and whatever the golden
// files import into its account beyond the catalogue.
func (p *proof) targetsOf(u compiler.User, victims []victim) []victim {
	imports := p.expectedImports(u.Account)
	var out []victim
	for _, v := range victims {
		if v.account == u.Account || slices.ContainsFunc(imports, func(i compiler.Import) bool { return compiler.Covers(i.Subject, v.subject) }) {
			continue
		}
		out = append(out, v)
	}
	for _, i := range p.golden.imports[u.Account] {
		if !slices.ContainsFunc(imports, func(e compiler.Import) bool { return compiler.Covers(e.Subject, i.Subject) }) {
			out = append(out, victim{subject: instance(i.Subject), account: i.Account})
		}
	}
	return out
}

func (p *proof) expectedImports(account string) []compiler.Import {
	for _, a := range p.expected.Accounts {
		if a.Name == account {
			return a.Imports
		}
	}
	return nil
}

// landed records an answer that reached a subject it was aimed at, naming whose answer it was
// when its body says.
func (p *proof) landed(subject string, data []byte) {
	by := ""
	var info jetstream.ConsumerInfo
	if json.Unmarshal(data, &info) == nil && info.Name != "" {
		for _, c := range p.expected.Consumers {
			if compiler.ConsumerName(c.Config) == info.Name && c.Stream == info.Stream {
				by = c.User
			}
		}
	}
	if i := strings.Index(string(data), "injection by "); i >= 0 {
		by = strings.Fields(string(data)[i+len("injection by "):])[0]
	}
	if i := strings.Index(string(data), purgeMarker); i >= 0 {
		by = strings.Fields(string(data)[i+len(purgeMarker):])[0]
	}
	p.failImport(Injection, by, subject,
		"an answer aimed at %s landed there (%.80q): the account of %s imports more than its users' grants; run `meshc emit`", subject, data, or(by, "a principal"))
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
