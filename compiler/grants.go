package compiler

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/meshc-dev/meshc/catalogue"
)

// Grant is one subject a user may publish or subscribe to, with the declaration that grants it:
// what `meshc can` cites, and what a review of a change names when a user gains or loses it.
type Grant struct {
	Subject string `json:"subject"`
	// Source is the declaration: the `emits` entry, the `calls` entry, the machine's `runs`.
	Source catalogue.Pos `json:"source"`
	// Because says in words what the declaration is ("emits built", "calls catalog.lookup").
	Because string `json:"because"`
	// Means says in the catalogue's words what the grant lets its user do, as what follows
	// "may": "call catalog's tool lookup", "read its own consumer EVENTS/anchor_catalog" — what a
	// review leads with, so a reviewer never has to read a $JS.ACK subject back into a consumer.
	Means string `json:"means"`
	// Module is the module whose subject this is (its event, its tool), "*" for every module's,
	// "" for a subject in no module's namespace: recorded as derived, so nothing parses a
	// subject back apart to find out whose it is.
	Module string `json:"-"`
	// Queue is, for a subscription granted only in one queue group (a tool its module serves),
	// that group; "" for any subscription.
	Queue string `json:"queue,omitempty"`
}

// Permission is the grant as the server reads it: the subject, and its queue group when it has one.
func (g Grant) Permission() string {
	if g.Queue != "" {
		return QueueGrant(g.Subject, g.Queue)
	}
	return g.Subject
}

// Grants are a user's grants one by one, as declared: a subject two declarations grant appears
// twice, and one a wider grant covers still appears, so every reason is kept. The user's
// Publish and Subscribe permissions are these subjects minimised; nothing here is emitted.
type Grants struct {
	Publish   []Grant `json:"publish,omitempty"`
	Subscribe []Grant `json:"subscribe,omitempty"`
	// Responses are the tools whose requests the user answers: why it has allow_responses.
	Responses []Grant `json:"responses,omitempty"`
}

// granted collects a user's grants while the compiler derives them: the subjects the server is
// given and, in a plan that explains its grants, each with the declaration it comes from. A plan
// for emitting (CompileBare) or for findings leaves the explanations out: they are most of what
// the compiler allocates, and nothing rendered or asserted reads them (BENCHMARKS.md).
type granted struct {
	explain bool
	// subjects are the permissions, each with its queue group when it has one
	// (Grant.Permission).
	subjects []string
	grants   []Grant
}

// words says why a declaration grants what it does: Grant's Because, then its Means. A
// function, so that the words are put together only for a plan that explains its grants.
type words func() (because, means string)

// said is words already put together.
func said(because, means string) words { return func() (string, string) { return because, means } }

// granted is an empty list with room for n grants.
func (c *compilation) granted(n int) granted {
	g := granted{explain: c.explain, subjects: make([]string, 0, n)}
	if c.explain && n > 0 {
		g.grants = make([]Grant, 0, n)
	}
	return g
}

func (g *granted) add(source catalogue.Pos, w words, subjects ...string) {
	g.addOf("", source, w, subjects...)
}

// addOf adds grants of subjects in one module's namespace.
func (g *granted) addOf(module string, source catalogue.Pos, w words, subjects ...string) {
	g.subjects = append(g.subjects, subjects...)
	if !g.explain {
		return
	}
	because, means := w()
	for _, s := range subjects {
		g.grants = append(g.grants, Grant{Subject: s, Source: source, Because: because, Means: means, Module: module})
	}
}

// addQueued adds subscribe grants in one module's namespace, each in queue group queue only.
func (g *granted) addQueued(module, queue string, source catalogue.Pos, w words, subjects ...string) {
	for _, s := range subjects {
		g.subjects = append(g.subjects, QueueGrant(s, queue))
	}
	if !g.explain {
		return
	}
	because, means := w()
	for _, s := range subjects {
		g.grants = append(g.grants, Grant{Subject: s, Source: source, Because: because, Means: means, Module: module, Queue: queue})
	}
}

// count is how many grants were added.
func (g *granted) count() int { return len(g.subjects) }

// What grants mean, in the words of the catalogue, where several declarations share a meaning.
const ownInbox = "receive answers in its own inbox"

func submits(seat, kind string) string { return "submit " + kind + " work to seat " + seat }

func calls(module, tool string) string { return "call " + module + "'s tool " + tool }

// reads is what consuming an entry means: "read registry's image.pushed", "read every event of
// seat mesh-build-machine".
func (c Consumed) reads() string {
	whose := c.Emitter + "'s"
	if c.Seat {
		whose = "seat " + whose
	}
	switch {
	case c.Emitter == "":
		return "read every event"
	case c.All && c.Seat:
		return "read every event of seat " + c.Emitter
	case c.All:
		return "read every event of " + c.Emitter
	}
	return "read " + whose + " " + c.Event
}

// readsOwn is what a consumer's pull, info and ack grants mean: reading one consumer.
func readsOwn(stream, consumer string) string {
	return "read its own consumer " + stream + "/" + consumer
}

// Action is what a user may do with a subject.
type Action string

const (
	Publish   Action = "pub"
	Subscribe Action = "sub"
)

// Why returns the grants by which the user may take the action on the subject, in declaration
// order; none when it may not. A grant covers a subject when its wildcards match the whole
// subject, or, for a wildcard subject asked about (`mesh.mod.*.tool.*`), when it covers every
// subject that wildcard matches. A subscription asked about may name its queue group as the
// server reads it (`subject queue`): a grant in one queue group covers a subscription in that
// group only, never a plain one.
func (u *User) Why(a Action, subject string) []Grant {
	var out []Grant
	subject, queue := SplitQueue(subject)
	for _, g := range u.grants(a) {
		if Covers(g.Subject, subject) && (g.Queue == "" || g.Queue == queue) {
			out = append(out, g)
		}
	}
	return out
}

// whyEach is Why for many subjects of one action: the review asks it of every subject a user
// gains or loses, and a user of thousands of grants made that quadratic, so past a few grants
// they are indexed (coverIndex). Its answers are Why's, in declaration order.
func (u *User) whyEach(a Action) func(subject string) []Grant {
	gs := u.grants(a)
	if len(gs) <= indexed {
		return func(subject string) []Grant { return u.Why(a, subject) }
	}
	subjects := make([]string, len(gs))
	for i, g := range gs {
		subjects[i] = g.Subject
	}
	x := newCoverIndex(subjects)
	return func(subject string) []Grant {
		subject, queue := SplitQueue(subject)
		var at []int
		x.each(subject, func(i int) bool {
			if q := gs[i].Queue; q == "" || q == queue {
				at = append(at, i)
			}
			return true
		})
		slices.Sort(at)
		var out []Grant
		for _, i := range at {
			out = append(out, gs[i])
		}
		return out
	}
}

func (u *User) grants(a Action) []Grant {
	if a == Subscribe {
		return u.Grants.Subscribe
	}
	return u.Grants.Publish
}

// sortedGrants orders grants by subject, then source, for output that reads the same every run.
// It sorts gs in place: each user's grants are its own, gathered for it alone.
func sortedGrants(gs []Grant) []Grant {
	slices.SortStableFunc(gs, func(a, b Grant) int {
		return cmp.Or(strings.Compare(a.Subject, b.Subject), a.Source.Compare(b.Source))
	})
	return gs
}

// Nearest is, for a subject the user may not use, the grant that comes closest — the one
// whose tokens agree with the subject's for longest — and why it does not cover the subject.
// ok is false when the user has no grant for the action at all.
func (u *User) Nearest(a Action, subject string) (g Grant, why string, ok bool) {
	subject, queue := SplitQueue(subject)
	for _, x := range u.grants(a) {
		// The subject is granted, in a queue group the question did not name.
		if x.Queue != "" && Covers(x.Subject, subject) {
			if queue == "" {
				return x, fmt.Sprintf("it is granted only as a subscription in queue group %s (ask about \"%s\")", x.Queue, x.Permission()), true
			}
			return x, fmt.Sprintf("it is granted only in queue group %s, not %s", x.Queue, queue), true
		}
	}
	best := -1
	st := strings.Split(subject, ".")
	for _, x := range u.grants(a) {
		n := agreeing(strings.Split(x.Subject, "."), st)
		if n > best {
			best, g = n, x
		}
	}
	if best < 0 {
		return Grant{}, "", false
	}
	if best == 0 {
		return g, fmt.Sprintf("no grant of %s starts with %s, so none comes close", u.Name, st[0]), true
	}
	return g, notCovered(g.Subject, subject), true
}

// agreeing counts the leading tokens a grant matches.
func agreeing(grant, subject []string) int {
	n := 0
	for i, t := range grant {
		if i >= len(subject) || (t != "*" && t != ">" && t != subject[i]) {
			break
		}
		n++
	}
	return n
}

// notCovered says in words why a grant does not cover a subject.
func notCovered(grant, subject string) string {
	g, s := strings.Split(grant, "."), strings.Split(subject, ".")
	for i, t := range g {
		switch {
		case t == ">" && i >= len(s):
			return fmt.Sprintf("%s needs at least one token after %s", grant, strings.Join(s, "."))
		case t == ">":
			return fmt.Sprintf("%s is wider than %s covers", subject, grant)
		case i >= len(s):
			return fmt.Sprintf("%s is shorter than %s: it ends before %q", subject, grant, t)
		case s[i] == ">" || (s[i] == "*" && t != "*"):
			return fmt.Sprintf("token %d of %s is the wildcard %q, wider than %q in %s", i+1, subject, s[i], t, grant)
		case t != "*" && t != s[i]:
			return fmt.Sprintf("token %d is %q in %s but %q in the grant %s", i+1, s[i], subject, t, grant)
		}
	}
	return fmt.Sprintf("%s is longer than %s, which has no final > to cover the tokens after %s", subject, grant, strings.Join(s[:len(g)], "."))
}
