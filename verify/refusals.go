package verify

import (
	"slices"
	"strings"

	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/principal"
)

// refusals tries, as each principal, what the catalogue does not grant it, and requires the
// server's violation for every try:
//
//   - what the golden file grants it beyond the catalogue (a grant added by hand);
//   - its grants' neighbours: a token more, a token less, the last name changed, a subscription
//     one wildcard wider, a tool's subscription outside its queue group, a publish grant
//     subscribed and a subscription published;
//   - other principals' subjects, published and subscribed: a sample of Options.Sample tries,
//     one subject of each other principal in turn, so every principal is somebody's victim.
//
// A publish is sent inert (principal.Inert): a hole lets it through to no stream.
func (p *proof) refusals() {
	users := p.connected()
	p.each(users, func(u compiler.User) {
		tries := p.refusalTries(u)
		p.try(Refusal, len(tries))
		unrefused, err := p.conns[u.Name].Unrefused(tries, principal.Wait)
		if err != nil {
			p.fail(Refusal, u.Name, "", "", "%v", err)
			return
		}
		for _, t := range unrefused {
			publish := t.Op == principal.Publish
			subject := t.Subject
			if t.Queue != "" {
				subject = compiler.QueueGrant(t.Subject, t.Queue)
			}
			p.fail(Refusal, u.Name, subject, p.golden.allowedBy(u.Name, publish, subject),
				"%s may %s, which the catalogue never grants it: the golden files are wider than the manifests; run `meshc emit`", u.Name, t)
		}
	})
	p.said(Refusal, "%d tries refused with a Permissions Violation: what the golden files grant beyond the catalogue, every grant's neighbours, and up to %d of other principals' subjects per principal", p.tried[Refusal.ID].Tries-p.tried[Refusal.ID].Failed, p.sample)
}

// refusalTries are the tries the server must refuse u, each once.
func (p *proof) refusalTries(u compiler.User) []principal.Try {
	seen := map[principal.Try]bool{}
	var out []principal.Try
	add := func(op principal.Op, subject, queue string) {
		t := principal.Try{Op: op, Subject: subject, Queue: queue}
		if seen[t] || !validSubject(subject) {
			return
		}
		seen[t] = true
		asked := subject
		action := compiler.Publish
		if op == principal.Subscription {
			action = compiler.Subscribe
			if queue != "" {
				asked = compiler.QueueGrant(subject, queue)
			}
		}
		if len(u.Why(action, asked)) == 0 {
			out = append(out, t)
		}
	}
	// What the golden file grants beyond the catalogue.
	if g := p.golden.users[u.Name]; g != nil {
		for _, s := range g.Publish.Allow {
			add(principal.Publish, instance(s), "")
		}
		for _, s := range g.Subscribe.Allow {
			subject, queue := compiler.SplitQueue(s)
			add(principal.Subscription, subject, queue)
		}
	}
	// Each grant's neighbours.
	for _, s := range u.Publish.Allow {
		for _, n := range publishNeighbours(s) {
			add(principal.Publish, n, "")
		}
		add(principal.Subscription, s, "")
	}
	for _, perm := range u.Subscribe.Allow {
		subject, queue := compiler.SplitQueue(perm)
		for _, n := range subscribeNeighbours(subject) {
			add(principal.Subscription, n, queue)
		}
		if queue != "" {
			add(principal.Subscription, subject, "")
			add(principal.Subscription, subject, "0")
		}
		add(principal.Publish, instance(subject), "")
	}
	// Other principals' subjects, one of each in turn.
	others := p.othersOf(u)
	budget := len(out) + p.sample
	for round := 0; len(out) < budget; round++ {
		added := false
		for _, q := range others {
			grants := append(slices.Clone(q.Publish.Allow), q.Subscribe.Allow...)
			if round >= len(grants) {
				continue
			}
			added = true
			subject, queue := compiler.SplitQueue(grants[round])
			add(principal.Publish, instance(subject), "")
			add(principal.Subscription, subject, queue)
			if len(out) >= budget {
				break
			}
		}
		if !added {
			break
		}
	}
	return out
}

// othersOf are the principals other than u, starting after it in the plan's order, so each
// principal's sample begins with different victims.
func (p *proof) othersOf(u compiler.User) []compiler.User {
	i := slices.IndexFunc(p.expected.Users, func(x compiler.User) bool { return x.Name == u.Name })
	out := make([]compiler.User, 0, len(p.expected.Users)-1)
	for k := 1; k < len(p.expected.Users); k++ {
		out = append(out, p.expected.Users[(i+k)%len(p.expected.Users)])
	}
	return out
}

// publishNeighbours are the subjects one step from a publish grant, as instances: a token more
// (unless it ends in `>`), a token less, and its last name changed.
func publishNeighbours(grant string) []string {
	t := strings.Split(grant, ".")
	var out []string
	if t[len(t)-1] != ">" {
		out = append(out, instance(grant)+".0")
	}
	if len(t) > 1 {
		out = append(out, instance(strings.Join(t[:len(t)-1], ".")))
	}
	if i := lastName(t); i >= 0 {
		c := slices.Clone(t)
		c[i] += "0"
		out = append(out, instance(strings.Join(c, ".")))
	}
	return out
}

// subscribeNeighbours are the subscriptions one step from a subscribe grant: a token more, a
// token less, its last name changed, and one wildcard wider in that name's place (`*`, and `>`
// from there on).
func subscribeNeighbours(grant string) []string {
	t := strings.Split(grant, ".")
	var out []string
	if t[len(t)-1] != ">" {
		out = append(out, grant+".0", grant+".>")
	}
	if len(t) > 1 {
		out = append(out, strings.Join(t[:len(t)-1], "."))
	}
	if i := lastName(t); i >= 0 {
		c := slices.Clone(t)
		c[i] += "0"
		out = append(out, strings.Join(c, "."))
		c[i] = "*"
		out = append(out, strings.Join(c, "."))
		out = append(out, strings.Join(append(slices.Clone(t[:i]), ">"), "."))
	}
	return out
}

// lastName is the index of a subject's last token that is not a wildcard, -1 when none is.
func lastName(t []string) int {
	for i := len(t) - 1; i >= 0; i-- {
		if t[i] != "*" && t[i] != ">" {
			return i
		}
	}
	return -1
}

// validSubject reports whether the server takes subject as a subject at all: no empty token,
// `>` only last. A try of anything else is refused for its form, not by permissions.
func validSubject(s string) bool {
	t := strings.Split(s, ".")
	for i, x := range t {
		if x == "" || strings.ContainsAny(x, " \t") || (x == ">" && i != len(t)-1) {
			return false
		}
	}
	return true
}
