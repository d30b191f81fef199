package lint

import (
	"fmt"

	"github.com/nats-io/nkeys"

	"github.com/meshc-dev/meshc/catalogue"
)

// The rules this file reports, declared where they are reported (lint.Rules lists them all).
var (
	ruleSeatContended = &catalogue.Rule{ID: "seat-contended", Severity: catalogue.Error,
		Summary: "two holders of a mesh-scoped seat, or of a node-scoped one on one machine",
		Why:     "Two holders of one seat split its work between them, each believing it is the only one."}
	ruleInventoryUnknown = &catalogue.Rule{ID: "inventory-unknown", Severity: catalogue.Error,
		Summary: "a machine running a module that is not in the catalogue",
		Why:     "A module with no manifest has no declared authority: it would be composed with an empty permission list."}
	ruleRequiresUnmet = &catalogue.Rule{ID: "requires-unmet", Severity: catalogue.Warning,
		Summary: "a running module requiring an interface no running module provides",
		Why:     "The module starts, and fails at its first use of the interface, far from the cause."}
	ruleCredentialInvalid = &catalogue.Rule{ID: "credential-invalid", Severity: catalogue.Error, Firm: true,
		Summary: "a credentials.yaml value that is not a bcrypt hash (with auth: nkey, not an nkey user's public key; with auth: operator, not a signing key's public key), or a keys.yaml value that is not a public key of its kind",
		Why:     "credentials.yaml keeps hashes only; a plaintext password there is a secret committed to git, and the server would accept it as the password itself."}
)

// instance is one module running on one machine: the unit that holds a seat.
type instance struct {
	node   *catalogue.Node
	module *catalogue.Module
	// at is the inventory's `runs` entry, where a finding about this instance points.
	at catalogue.Text
	// claim is where the module claims the seat this instance holds, when it holds one.
	claim catalogue.Pos
}

// checkInventory checks what the inventory runs: modules it names, seats held twice, interfaces
// nobody running provides.
func (l *linter) checkInventory() {
	inv := l.ix.Catalogue.Inventory
	if inv == nil {
		return // nothing is recorded as running, so there is nothing to contend or go unmet
	}
	ix := l.ix

	// Holders of each seat, in inventory order: per mesh for a mesh-scoped seat, per machine
	// for a node-scoped one. One module on two machines is two holders.
	type key struct {
		seat, node string
	}
	holders := map[key][]instance{}
	var order []key
	for _, n := range inv.Nodes {
		seen := map[string]bool{}
		for _, r := range n.Runs {
			if !l.ok(r) {
				continue
			}
			m := ix.Modules[r.Value]
			if m == nil && (l.doubtful[r.Value] || l.unread) {
				continue // its manifest could not be read, and has its finding
			}
			if m == nil {
				l.report(ruleInventoryUnknown, r.Pos, "%s runs %q, and no manifest declares that module: add modules/%s.yaml, or fix the name%s",
					n.Name.Value, r.Value, r.Value, didYouMean(l.modules().Closest(r.Value)))
				continue
			}
			if seen[r.Value] {
				continue // listed twice on one machine: still one instance
			}
			seen[r.Value] = true
			claimed := map[*catalogue.Seat]bool{}
			for _, c := range m.Claims {
				s := ix.Seat(c.Value)
				if s == nil || !l.ok(s.Name) || claimed[s] {
					continue // a seat claimed twice (by its old and new name, say) is held once
				}
				claimed[s] = true
				k := key{seat: s.Name.Value}
				switch s.Scope.Value {
				case "node":
					k.node = n.Name.Value
				case "mesh":
				default:
					continue // no scope to contend over: the seat's own finding says so
				}
				if holders[k] == nil {
					order = append(order, k)
				}
				holders[k] = append(holders[k], instance{node: n, module: m, at: r, claim: c.Pos})
			}
		}
	}
	for _, k := range order {
		hs := holders[k]
		first := hs[0]
		for _, h := range hs[1:] {
			var msg string
			if k.node != "" {
				msg = fmt.Sprintf("%s and %s both hold node-scoped seat %s on %s, and would split its work: run one holder of it per machine",
					h.module.Name.Value, first.module.Name.Value, k.seat, k.node)
			} else {
				msg = fmt.Sprintf("%s on %s holds mesh-scoped seat %s, and so does %s on %s; the two would split its work: run one holder of it in the mesh, or make the seat node-scoped",
					h.module.Name.Value, h.node.Name.Value, k.seat, first.module.Name.Value, first.node.Name.Value)
			}
			if h.module == first.module {
				// One module on two machines: the inventory line is the change.
				l.related(ruleSeatContended, first.at.Pos, h.at.Pos, first.module.Name.Value+" on "+first.node.Name.Value+" holds it", "", "%s", msg)
				continue
			}
			// Two modules: the finding lands on the claim of the holder the inventory lists
			// second — the line a pull request adding it touches, so the annotation is on its
			// diff — naming the other claim and where the two run together.
			f := l.report(ruleSeatContended, h.claim, "%s", msg)
			f.Related = append(f.Related,
				catalogue.Related{Pos: first.claim, Message: first.module.Name.Value + " claims it too"},
				catalogue.Related{Pos: h.at.Pos, Message: h.module.Name.Value + " runs on " + h.node.Name.Value + " here"})
		}
	}

	// What the running modules provide, and what any module provides, for the hint.
	provided := map[string]bool{}
	providers := map[string]string{}
	for _, m := range ix.Catalogue.Modules {
		if !l.canonical(m) {
			continue
		}
		for _, p := range m.Provides {
			if l.running(m.Name.Value) {
				provided[p.Value] = true
			}
			if _, ok := providers[p.Value]; !ok {
				providers[p.Value] = m.Name.Value
			}
		}
	}
	for _, m := range ix.Catalogue.Modules {
		if !l.canonical(m) || !l.running(m.Name.Value) {
			continue
		}
		for _, r := range m.Requires {
			if !l.ok(r) || provided[r.Value] || l.unread {
				continue
			}
			hint := "run a module that provides it, or drop the requirement"
			if p, ok := providers[r.Value]; ok {
				hint = p + " provides it: run " + p + " on some machine, or drop the requirement"
			}
			l.report(ruleRequiresUnmet, r.Pos, "%s requires %s, and nothing the inventory runs provides it, so %s will fail at its first use: %s",
				m.Name.Value, r.Value, m.Name.Value, hint)
		}
	}
}

// checkKeys reports a keys.yaml value that is not a public key of its kind: a seed there would
// be a secret in git (the operator's, or the one that signs an account's users).
func (l *linter) checkKeys() {
	k := l.ix.Catalogue.Keys
	if k == nil {
		return
	}
	check := func(what string, t catalogue.Text, valid func(string) bool, kind string) {
		if t.Value != "" && !valid(t.Value) {
			l.report(ruleCredentialInvalid, t.Pos, "%s in %s is not %s, and keys.yaml keeps only public keys (a seed here is a secret in git): put back the public key `meshc operator init` or `meshc mint` recorded",
				what, catalogue.KeysFile, kind)
		}
	}
	check("operator", k.Operator, nkeys.IsValidPublicOperatorKey, "an operator's public key (O…)")
	check("signing-key", k.SigningKey, nkeys.IsValidPublicOperatorKey, "an operator's public key (O…)")
	check("system-account", k.SystemAccount, nkeys.IsValidPublicAccountKey, "an account's public key (A…)")
	check("probe-key", k.ProbeKey, nkeys.IsValidPublicAccountKey, "an account's public key (A…)")
	for _, name := range k.Names {
		check("the key of account "+name.Value, k.Accounts[name.Value], nkeys.IsValidPublicAccountKey, "an account's public key (A…)")
	}
}

// checkOperatorCredentials is checkCredentials with auth: operator, where credentials.yaml
// records each user's scoped signing key (A…): a seed there would be the key that signs the
// user's credentials. Hashes or nkeys left from another auth are one finding, the switch's.
func (l *linter) checkOperatorCredentials(cr *catalogue.Credentials) {
	var switched []catalogue.Text
	for _, u := range cr.Users {
		h := cr.Hashes[u.Value]
		switch {
		case catalogue.CredentialFitsOperator(h.Value) == nil:
		case catalogue.CredentialFits(true, h.Value) == nil || catalogue.CredentialFits(false, h.Value) == nil:
			switched = append(switched, h)
		default:
			l.report(ruleCredentialInvalid, h.Pos, "the value recorded for %s is not a signing key's public key (A…), and with auth: operator credentials.yaml keeps only the public keys of the keys that sign each user (a seed here is a secret in git): run `meshc mint %s`, which replaces it",
				u.Value, u.Value)
		}
	}
	if len(switched) == 0 {
		return
	}
	f := l.report(ruleCredentialInvalid, switched[0].Pos, "credentials.yaml records another auth's credentials for %d user(s), and mesh.yaml says auth: operator, which records each user's signing key: run `meshc mint --missing --out CREDS`, which mints credentials for each of them in place of the old ones",
		len(switched))
	if pos := l.ix.Catalogue.Mesh.Auth.Pos; pos.File != "" {
		f.Related = append(f.Related, catalogue.Related{Pos: pos, Message: "the mesh's auth"})
	}
	for _, h := range switched[1:] {
		l.marked[h.Pos] = true
	}
}

// checkCredentials reports a recorded value that is not what the mesh's auth records. The value
// is never repeated in the message: if it is not a hash, it is probably the password itself.
// Values that are the other auth's credentials (bcrypt hashes left after a switch to auth:
// nkey, or public keys after a switch back) are one finding, not one per user: the switch is
// one change, and one command (`meshc mint --missing`) makes it.
func (l *linter) checkCredentials() {
	cr := l.ix.Catalogue.Credentials
	if cr == nil {
		return
	}
	if l.ix.Catalogue.Mesh.Operator() {
		l.checkOperatorCredentials(cr)
		return
	}
	nkeyMesh := l.ix.Catalogue.Mesh.NKeys()
	var switched []catalogue.Text
	for _, u := range cr.Users {
		h := cr.Hashes[u.Value]
		err := catalogue.CredentialFits(nkeyMesh, h.Value)
		switch {
		case err == nil:
		case catalogue.CredentialFits(!nkeyMesh, h.Value) == nil:
			switched = append(switched, h)
		case nkeyMesh:
			// auth: nkey records public keys; a seed here would be the secret itself.
			l.report(ruleCredentialInvalid, h.Pos, "the value recorded for %s %s, and with auth: nkey credentials.yaml keeps only public keys (a seed here is a secret in git): run `meshc mint %s`, which replaces it",
				u.Value, err, u.Value)
		default:
			// CheckHash's words name no part of the value.
			l.report(ruleCredentialInvalid, h.Pos, "the value recorded for %s %s, and credentials.yaml keeps only hashes the server recognises (a plaintext here is a secret in git, and the server would take it as the password itself): run `meshc mint %s`, which replaces it",
				u.Value, err, u.Value)
		}
	}
	if len(switched) == 0 {
		return
	}
	kept, wants, auth := "bcrypt hashes", "nkey public keys", catalogue.AuthNKey
	if !nkeyMesh {
		kept, wants, auth = "nkey public keys", "bcrypt hashes", catalogue.AuthPassword
	}
	users := "1 user"
	if len(switched) > 1 {
		users = fmt.Sprintf("%d users", len(switched))
	}
	f := l.report(ruleCredentialInvalid, switched[0].Pos, "credentials.yaml records %s for %s, and mesh.yaml says auth: %s, which records %s: run `meshc mint --missing`, which mints a credential for each of them in place of the old one and prints it once",
		kept, users, auth, wants)
	if pos := l.ix.Catalogue.Mesh.Auth.Pos; pos.File != "" {
		f.Related = append(f.Related, catalogue.Related{Pos: pos, Message: "the mesh's auth"})
	}
	for _, h := range switched[1:] {
		l.marked[h.Pos] = true
	}
}

// RuleCredentialInvalid is the id of the rule that `meshc mint` fixes, so mint runs while it fires.
var RuleCredentialInvalid = ruleCredentialInvalid.ID
