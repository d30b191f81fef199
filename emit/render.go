package emit

import (
	"sync"

	"github.com/meshc-dev/meshc/compiler"
)

// Rendered is every golden file of one plan.
type Rendered struct {
	Accounts []byte // golden/accounts.conf
	Plan     []byte // golden/plan.json
	Review   []byte // golden/permissions.md
}

// Render renders the three golden files of a plan at once: each only reads the plan, and on a
// large mesh each takes a noticeable share of `meshc emit`, so they share the machine's cores.
func Render(p *compiler.Plan, opts AccountsOptions) (Rendered, error) {
	var r Rendered
	var accountsErr, planErr error
	var wg sync.WaitGroup
	wg.Go(func() { r.Accounts, accountsErr = Accounts(p, opts) })
	wg.Go(func() { r.Plan, planErr = PlanJSON(p) })
	r.Review = Review(p)
	wg.Wait()
	if accountsErr != nil {
		return Rendered{}, accountsErr
	}
	if planErr != nil {
		return Rendered{}, planErr
	}
	return r, nil
}
