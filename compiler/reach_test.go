package compiler

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/internal/synth"
)

// No wildcard a principal is granted may reach what another principal listens on, beyond what the
// grant is for. The ack grants had this shape: `$JS.ACK.*.*.S.C.>` also matched another
// consumer's acks (docs/nats.md, "Ack subjects"). This takes every wildcard publish grant of every
// user but the controller (which owns the JetStream API and every consumer) and tries its whole
// match set against every other user's subscriptions, every consumer it does not own (pull, info
// and both ack forms) and every stream's subjects; and every wildcard subscription against every
// other user's. The overlaps allowed are the purpose of the grant, each named below. In isolation
// an account's imports are its users' grants (TestImportsAreExactlyTheGrants), so this covers them
// too; what a module's instances can do to each other is proven on a server
// (proof/siblings_test.go).
//
// Every pair is tried, so the synthetic mesh of 200 modules is most of the package's test time:
// under -short (the inner loop) it is left to CI, and the hand-written meshes, which hold every
// kind of principal, are tried. Each catalogue and isolation is read-only work on its own plan,
// so they run in parallel.
func TestNoWildcardReachesAnotherPrincipal(t *testing.T) {
	sources := map[string]string{
		"the example":                 filepath.Join("..", "examples", "mesh"),
		"the proof's mesh":            cataloguetest.Extract(t, "../proof/testdata/proof.txtar"),
		"modules on several machines": cataloguetest.Extract(t, "../proof/testdata/instances.txtar"),
	}
	if !testing.Short() {
		dir := t.TempDir()
		if err := synth.Write(dir, 200, 7); err != nil {
			t.Fatal(err)
		}
		sources["a synthetic mesh of 200 modules"] = dir
	}
	for name, source := range sources {
		for _, isolation := range []string{catalogue.IsolationShared, catalogue.IsolationPerModule} {
			t.Run(name+"/"+isolation, func(t *testing.T) {
				t.Parallel()
				c, _, err := catalogue.Load(source)
				if err != nil {
					t.Fatal(err)
				}
				c.Mesh.Isolation.Value = isolation
				p, _ := Compile(catalogue.NewIndex(c))
				tried := 0
				for i := range p.Users {
					u := &p.Users[i]
					if u.Kind == KindController {
						continue
					}
					for _, g := range u.Publish.Allow {
						if !strings.ContainsAny(g, "*>") {
							continue
						}
						for _, l := range listening(p, u) {
							tried++
							if Overlaps(g, l.subject) && !intended(u, g, l) {
								t.Errorf("%s's grant %s reaches %s (%s listens: e.g. %s)", u.Name, g, l.subject, l.who, Witness(g, l.subject))
							}
						}
					}
					for _, s := range u.Subscribe.Allow {
						s, _ := SplitQueue(s)
						if !strings.ContainsAny(s, "*>") {
							continue
						}
						for _, v := range p.Users {
							if v.Name == u.Name {
								continue
							}
							for _, o := range v.Subscribe.Allow {
								o, _ := SplitQueue(o)
								tried++
								if Overlaps(s, o) && !(isTool(s) && isTool(o)) {
									t.Errorf("%s subscribes %s, which takes what %s listens for on %s", u.Name, s, v.Name, o)
								}
							}
						}
					}
				}
				if tried == 0 {
					t.Fatal("no wildcard was tried against anything")
				}
			})
		}
	}
}

// listened is a subject some principal listens on: a subscription, a consumer's JetStream
// subjects, a stream's subjects.
type listened struct {
	subject, who string
	// user is the listening user, "" for JetStream (a stream, a consumer).
	user   string
	module string // the listening user's module, for a module instance
	tool   bool   // a subscription to a tool
	info   bool   // a consumer's info request
}

// listening is everything another principal than u listens on.
func listening(p *Plan, u *User) []listened {
	var out []listened
	for _, v := range p.Users {
		if v.Name == u.Name {
			continue
		}
		for _, s := range v.Subscribe.Allow {
			s, _ := SplitQueue(s)
			out = append(out, listened{subject: s, who: v.Name, user: v.Name, module: v.Module, tool: isTool(s)})
		}
	}
	for _, k := range p.Consumers {
		if owns(u, k) {
			continue
		}
		who := fmt.Sprintf("consumer %s/%s", k.Stream, ConsumerName(k.Config))
		info := ConsumerInfo(k.Stream, ConsumerName(k.Config))
		subjects := append([]string{PullNext(k.Stream, ConsumerName(k.Config)), info}, ackSubscriptions(k)...)
		for _, s := range subjects {
			out = append(out, listened{subject: s, who: who, info: s == info})
		}
	}
	for _, s := range p.Streams {
		for _, subject := range s.Config.Subjects {
			out = append(out, listened{subject: subject, who: "stream " + s.Config.Name})
		}
	}
	return out
}

// intended reports whether grant g of u reaching what l listens on is the grant's purpose: a
// person who may call every tool reaching each tool's servers, and mesh-planner reading every
// consumer's info (a plan compares each; reading one takes nothing from its owner, where a pull
// or an ack would). Nothing else: no user is granted another's inbox, a sibling instance's
// included.
func intended(u *User, g string, l listened) bool {
	return isTool(g) && l.tool || u.Kind == KindPlanner && l.info
}

// isTool reports whether a publish grant is a tool call (a tool, or `*`'s every tool): what a
// test reads a grant as, never the compiler.
func isTool(subject string) bool { return Covers(everyTool, subject) }
