package emit

import (
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/meshc-dev/meshc/compiler"
)

// The golden files, by their names in the catalogue's golden directory.
const (
	AccountsFile    = "accounts.conf"
	PlanFile        = "plan.json"
	PermissionsFile = "permissions.md"
	// ClaimsFile replaces AccountsFile in operator mode: the servers have no accounts file.
	ClaimsFile = "claims.json"
)

// Rendered is every golden file of one plan.
type Rendered struct {
	Accounts    []byte // AccountsFile
	Plan        []byte // PlanFile
	Permissions []byte // PermissionsFile
	// Claims is ClaimsFile, in operator mode instead of Accounts.
	Claims []byte
}

// Files are the golden files rendered, by name: accounts.conf, or in operator mode claims.json,
// then plan.json and permissions.md.
func (r Rendered) Files() []struct {
	Name string
	Data []byte
} {
	users := struct {
		Name string
		Data []byte
	}{AccountsFile, r.Accounts}
	if r.Claims != nil {
		users.Name, users.Data = ClaimsFile, r.Claims
	}
	return []struct {
		Name string
		Data []byte
	}{users, {PlanFile, r.Plan}, {PermissionsFile, r.Permissions}}
}

// Retired is the golden file the other auth writes in place of this one's: accounts.conf in
// operator mode, claims.json otherwise. One left behind by a switch of auth is stale: it
// describes a bus the servers no longer run (accounts.conf, with every old hash), and meshc emit
// removes it.
func (r Rendered) Retired() string {
	if r.Claims != nil {
		return AccountsFile
	}
	return ClaimsFile
}

// Render renders the three golden files of a plan at once: each only reads the plan, and on a
// large mesh each takes a noticeable share of `meshc emit`, so they share the machine's cores.
func Render(p *compiler.Plan, opts AccountsOptions) (Rendered, error) {
	// Checked here, before the renderings share the plan: checking sorts it.
	if err := checked(p); err != nil {
		return Rendered{}, err
	}
	defer pauseGC()()
	var r Rendered
	var accountsErr, planErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		if p.Operator != nil {
			r.Claims, accountsErr = Claims(p, opts)
		} else {
			r.Accounts, accountsErr = Accounts(p, opts)
		}
	})
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

// pauseGC collects once and then stops the collector until the returned function is called,
// the last of overlapping pauses resuming it. While the three renderings run, almost everything
// on the heap is live (the plan they read, the bytes they write), so a collection marks it all
// to free little; the one collection first frees what lint and the compiler left, so the heap
// peaks no higher than with the collector running: without it, 27 % higher at 100,000 modules
// (BENCHMARKS.md, "emit at 10,000 modules: where the time is (2026-12-02)").
func pauseGC() (resume func()) {
	paused.Lock()
	defer paused.Unlock()
	if paused.n == 0 {
		runtime.GC()
		paused.was = debug.SetGCPercent(-1)
	}
	paused.n++
	return func() {
		paused.Lock()
		defer paused.Unlock()
		if paused.n--; paused.n == 0 {
			debug.SetGCPercent(paused.was)
		}
	}
}

var paused struct {
	sync.Mutex
	n, was int
}
