package emit

import (
	"sync"

	"github.com/meshc-dev/meshc/compiler"
)

// The golden files, by their names in the catalogue's golden directory.
const (
	AccountsFile    = "accounts.conf"
	PlanFile        = "plan.json"
	PermissionsFile = "permissions.md"
)

// Rendered is every golden file of one plan.
type Rendered struct {
	Accounts    []byte // AccountsFile
	Plan        []byte // PlanFile
	Permissions []byte // PermissionsFile
}

// Render renders the three golden files of a plan at once: each only reads the plan, and on a
// large mesh each takes a noticeable share of `meshc emit`, so they share the machine's cores.
func Render(p *compiler.Plan, opts AccountsOptions) (Rendered, error) {
	// Checked here, before the renderings share the plan: checking sorts it.
	if err := checked(p); err != nil {
		return Rendered{}, err
	}
	var r Rendered
	var accountsErr, planErr error
	var wg sync.WaitGroup
	wg.Go(func() { r.Accounts, accountsErr = Accounts(p, opts) })
	wg.Go(func() { r.Plan, planErr = PlanJSON(p) })
	r.Permissions = Permissions(p)
	wg.Wait()
	if accountsErr != nil {
		return Rendered{}, accountsErr
	}
	if planErr != nil {
		return Rendered{}, planErr
	}
	return r, nil
}
