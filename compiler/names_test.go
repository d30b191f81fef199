package compiler

import (
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/internal/synth"
)

// UserNames answers without compiling, so it is held to what compiling derives: the example,
// a synthetic mesh, and small catalogues with enrolling machines, people and a machine running a
// module with no manifest.
func TestUserNamesAreThePlansUsers(t *testing.T) {
	dirs := map[string]string{"the example": filepath.Join("..", "examples", "mesh")}
	synthetic := t.TempDir()
	if err := synth.Write(synthetic, 120, 3); err != nil {
		t.Fatal(err)
	}
	dirs["a synthetic mesh"] = synthetic
	for name, dir := range dirs {
		t.Run(name, func(t *testing.T) {
			c, _, err := catalogue.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			p, _ := Compile(catalogue.NewIndex(c))
			want := map[string]bool{}
			for _, u := range p.Users {
				want[u.Name] = true
			}
			got := UserNames(catalogue.NewIndex(c))
			if !maps.Equal(got, want) {
				t.Errorf("UserNames differs from the plan's users:\n got %v\nwant %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
			}
			if len(want) < 5 {
				t.Fatalf("only %d users: the catalogue proves nothing", len(want))
			}
		})
	}
}
