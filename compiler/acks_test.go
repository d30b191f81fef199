package compiler

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/internal/synth"
)

// No user's publish grant may reach another consumer's ack subscription. Every consumer
// subscribes to `$JS.ACK.<S>.<C>.*.*.*.*.*` (v1) and the server's v2 form; a grant whose match
// set meets either lets its holder ack, park or pull that consumer's messages as if it owned it
// (docs/nats.md, "Ack subjects"). This tries every grant's whole match set against every consumer
// of the example mesh and a synthetic one, so a future grant of the same shape fails here before
// the permission proof runs on a server.
func TestNoGrantReachesAnotherConsumersAcks(t *testing.T) {
	plans := map[string]*Plan{"the example": loadPlan(t, filepath.Join("..", "examples", "mesh"))}
	dir := t.TempDir()
	if err := synth.Write(dir, 200, 7); err != nil {
		t.Fatal(err)
	}
	plans["a synthetic mesh of 200 modules"] = loadPlan(t, dir)
	for name, p := range plans {
		t.Run(name, func(t *testing.T) {
			checked := 0
			for _, u := range p.Users {
				if u.Kind == KindController {
					continue // it owns the JetStream API: every consumer is its to manage
				}
				for _, k := range p.Consumers {
					if owns(&u, k) {
						continue
					}
					for _, listens := range ackSubscriptions(k) {
						for _, g := range u.Publish.Allow {
							checked++
							if Overlaps(g, listens) {
								t.Errorf("%s's grant %s reaches %s/%s's ack subscription %s (e.g. %s)",
									u.Name, g, k.Stream, k.Config.Durable, listens, Witness(g, listens))
							}
						}
					}
				}
			}
			if checked == 0 {
				t.Fatal("no grant was tried against any consumer")
			}
		})
	}
}

// ackSubscriptions are the subjects a consumer's server listens on for acks: its v1 form and its
// v2 form for any domain and account hash.
func ackSubscriptions(k Consumer) []string {
	return []string{
		fmt.Sprintf("$JS.ACK.%s.%s.*.*.*.*.*", k.Stream, k.Config.Durable),
		fmt.Sprintf("$JS.ACK.*.*.%s.%s.*.*.*.*.>", k.Stream, k.Config.Durable),
	}
}

// owns reports whether u is granted k's acks on purpose: its own consumer, or the holder consumer
// of a seat it claims.
func owns(u *User, k Consumer) bool {
	for _, g := range u.Publish.Allow {
		if g == Ack(k.Stream, k.Config.Durable) {
			return true
		}
	}
	return false
}

func loadPlan(t *testing.T, dir string) *Plan {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "mesh.yaml")); err != nil {
		t.Fatal(err)
	}
	c, _, err := catalogue.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := Compile(catalogue.NewIndex(c))
	return p
}
