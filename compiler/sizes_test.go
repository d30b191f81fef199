package compiler

import (
	"path/filepath"
	"testing"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/internal/synth"
)

// planSizes is at least what compiling derives, so the plan's lists are made once: the example
// and a synthetic mesh, whose modules serve tools (a serving user each) and whose machines
// enrol, in both isolations.
func TestThePlansListsAreMadeOnce(t *testing.T) {
	synthetic := t.TempDir()
	if err := synth.Write(synthetic, 200, 5); err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{"the example": filepath.Join("..", "examples", "mesh"), "a synthetic mesh": synthetic} {
		for _, isolation := range []string{catalogue.IsolationShared, catalogue.IsolationPerModule} {
			t.Run(name+"/"+isolation, func(t *testing.T) {
				c, _, err := catalogue.Load(dir)
				if err != nil {
					t.Fatal(err)
				}
				c.Mesh.Isolation.Value = isolation
				ix := catalogue.NewIndex(c)
				users, consumers := planSizes(ix)
				p, _ := CompileBare(ix)
				if len(p.Users) > users || len(p.Consumers) > consumers {
					t.Errorf("%d users and %d consumers, sized for %d and %d: a list grew", len(p.Users), len(p.Consumers), users, consumers)
				}
				serving := 0
				for _, u := range p.Users {
					if u.Kind == KindServer {
						serving++
					}
				}
				if serving == 0 {
					t.Fatal("no serving user: the catalogue proves nothing")
				}
			})
		}
	}
}
