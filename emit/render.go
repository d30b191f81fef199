package emit

import (
	"bytes"
	"io"

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

// A Rendering is one golden file, rendered as it is written: at 10,000 modules the three are
// 74 MB, and holding them whole before writing them cost more than rendering them, in memory
// the system had to hand over page by page (BENCHMARKS.md, "Emit as it writes (2026-12-02)").
type Rendering struct {
	Name string
	// WriteTo writes the file's bytes to w, the same bytes at every call. It only reads the
	// plan, so the renderings of one plan may write at once.
	WriteTo func(w io.Writer) error
}

// Bytes renders the file into memory.
func (r Rendering) Bytes() ([]byte, error) {
	var b bytes.Buffer
	err := r.WriteTo(&b)
	return b.Bytes(), err
}

// Rendered is every golden file of one plan, its refusals decided: writing one fails only when
// its writer does (or encoding/json refuses a configuration, which no plan has made it do).
type Rendered struct {
	// Files are accounts.conf, or in operator mode claims.json, then plan.json and
	// permissions.md.
	Files []Rendering
	// Retired is the golden file the other auth writes in place of this one's: accounts.conf in
	// operator mode, claims.json otherwise. One left behind by a switch of auth is stale: it
	// describes a bus the servers no longer run (accounts.conf, with every old hash), and meshc
	// emit removes it.
	Retired string
}

// Render checks a plan and makes its golden files ready to write. Every refusal (a user with
// no hash, an account name the server cannot read, two streams of one name) is decided here,
// before any file is written. claims.json is encoded here whole, before the others are
// written: encoding an account's claims is where their refusals are found.
func Render(p *compiler.Plan, opts AccountsOptions) (Rendered, error) {
	// Checked here, before the renderings share the plan: checking sorts it.
	if err := checked(p); err != nil {
		return Rendered{}, err
	}
	r := Rendered{Files: make([]Rendering, 0, 3)}
	if p.Operator != nil {
		claims, err := Claims(p, opts)
		if err != nil {
			return Rendered{}, err
		}
		r.Files = append(r.Files, Rendering{ClaimsFile, func(w io.Writer) error {
			_, err := w.Write(claims)
			return err
		}})
		r.Retired = AccountsFile
	} else {
		accounts, err := accountsWriter(p, opts)
		if err != nil {
			return Rendered{}, err
		}
		r.Files = append(r.Files, Rendering{AccountsFile, accounts})
		r.Retired = ClaimsFile
	}
	r.Files = append(r.Files,
		Rendering{PlanFile, func(w io.Writer) error { return writePlan(w, p) }},
		Rendering{PermissionsFile, func(w io.Writer) error { return writePermissions(w, p) }})
	return r, nil
}
