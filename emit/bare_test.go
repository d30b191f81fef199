package emit

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"testing"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/synth"
)

// A plan compiled without its explanations (compiler.CompileBare, what `meshc emit` renders)
// renders the same bytes as the whole plan: the example and a synthetic mesh, in both isolations.
// The explanations are dropped, never a grant.
func TestABarePlanRendersAsTheWholeOne(t *testing.T) {
	synthetic := t.TempDir()
	if err := synth.Write(synthetic, 300, 1); err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{"example": "../examples/mesh", "synthetic": synthetic} {
		for _, isolation := range []string{catalogue.IsolationShared, catalogue.IsolationPerModule} {
			t.Run(fmt.Sprintf("%s/%s", name, isolation), func(t *testing.T) {
				render := func(compile func(*catalogue.Index) (*compiler.Plan, catalogue.Findings)) (Rendered, *compiler.Plan) {
					c, _, err := catalogue.Load(dir)
					if err != nil {
						t.Fatal(err)
					}
					c.Mesh.Isolation.Value = isolation
					plan, _ := compile(catalogue.NewIndex(c))
					r, err := Render(plan, AccountsOptions{AllowMissing: true})
					if err != nil {
						t.Fatal(err)
					}
					return r, plan
				}
				whole, explained := render(compiler.Compile)
				bare, plan := render(compiler.CompileBare)
				for i, f := range whole.Files {
					if !bytes.Equal(bytesOf(t, f), bytesOf(t, bare.Files[i])) {
						t.Errorf("%s differs between the whole plan and the bare one", f.Name)
					}
				}
				if !explained.Explained() || plan.Explained() {
					t.Errorf("Explained: the whole plan %v, the bare one %v", explained.Explained(), plan.Explained())
				}
				for _, u := range plan.Users {
					if len(u.Grants.Publish)+len(u.Grants.Subscribe)+len(u.Grants.Responses) > 0 {
						t.Fatalf("bare user %s has grants", u.Name)
					}
				}
			})
		}
	}
}

// derivedAccountName accepts exactly what its expression does: random strings over the letters
// it allows and some it does not.
func TestDerivedAccountNameIsItsExpression(t *testing.T) {
	expr := regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	rng := rand.New(rand.NewPCG(11, 12))
	const letters = "aZ09_.-\"\\ é\x00\n/"
	for range 20_000 {
		b := []byte{}
		for range rng.IntN(6) {
			b = append(b, letters[rng.IntN(len(letters))])
		}
		if got, want := derivedAccountName(string(b)), expr.MatchString(string(b)); got != want {
			t.Fatalf("derivedAccountName(%q) = %v, the expression says %v", b, got, want)
		}
	}
}
