package lint

import (
	"fmt"
	"strings"

	"github.com/nats-io/nkeys"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
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
	ruleCredentialDuplicate = &catalogue.Rule{ID: "credential-duplicate", Severity: catalogue.Error, Firm: true,
		Summary: "two users recording one hash, nkey or signing key in credentials.yaml, or two accounts one key in keys.yaml",
		Why:     "A pull request that copies another user's recorded hash onto mesh-controller looks like a one-line edit, and afterwards whoever knows that user's password logs in as mesh-controller; two users of one signing key get one set of grants, the later one's."}
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
func (l *linter) checkOperatorCredentials(cr *catalogue.Credentials, derived map[string]bool) {
	var switched, gone []catalogue.Text
	for _, u := range cr.Users {
		h := cr.Hashes[u.Value]
		switch {
		case catalogue.CredentialFitsOperator(h.Value) == nil:
		case catalogue.CredentialFits(true, h.Value) == nil || catalogue.CredentialFits(false, h.Value) == nil:
			if !derived[u.Value] {
				gone = append(gone, u)
			} else {
				switched = append(switched, h)
			}
		default:
			l.report(ruleCredentialInvalid, h.Pos, "the value recorded for %s is not a signing key's public key (A…), and with auth: operator credentials.yaml keeps only the public keys of the keys that sign each user (a seed here is a secret in git): %s",
				u.Value, replaceOrRevoke(u.Value, derived))
		}
	}
	l.reportGone(cr, gone, "a signing key's public key")
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
	// A record of a user the catalogue no longer derives is fixed by revoking it, never by
	// minting: `meshc mint --missing` mints only the catalogue's users, so a record it cannot
	// replace kept the switch's finding alive, naming mint --missing, however often it ran.
	derived := compiler.UserNames(l.ix)
	if l.ix.Catalogue.Mesh.Operator() {
		l.checkOperatorCredentials(cr, derived)
		return
	}
	nkeyMesh := l.ix.Catalogue.Mesh.NKeys()
	var switched, gone []catalogue.Text
	for _, u := range cr.Users {
		h := cr.Hashes[u.Value]
		err := catalogue.CredentialFits(nkeyMesh, h.Value)
		switch {
		case err == nil:
		case catalogue.CredentialFits(!nkeyMesh, h.Value) == nil:
			if !derived[u.Value] {
				gone = append(gone, u)
			} else {
				switched = append(switched, h)
			}
		case nkeyMesh:
			// auth: nkey records public keys; a seed here would be the secret itself.
			l.report(ruleCredentialInvalid, h.Pos, "the value recorded for %s %s, and with auth: nkey credentials.yaml keeps only public keys (a seed here is a secret in git): %s",
				u.Value, err, replaceOrRevoke(u.Value, derived))
		default:
			// CheckHash's words name no part of the value.
			l.report(ruleCredentialInvalid, h.Pos, "the value recorded for %s %s, and credentials.yaml keeps only hashes the server recognises (a plaintext here is a secret in git, and the server would take it as the password itself): %s",
				u.Value, err, replaceOrRevoke(u.Value, derived))
		}
	}
	wants := "a bcrypt hash"
	if nkeyMesh {
		wants = "an nkey public key"
	}
	l.reportGone(cr, gone, wants)
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

// checkCredentialDuplicates reports a credential recorded for two users, and a key recorded for
// two accounts: the later one in the file, naming the first. The value is never repeated.
func (l *linter) checkCredentialDuplicates() {
	what := "hash"
	fits := func(v string) bool { return catalogue.CredentialFits(l.ix.Catalogue.Mesh.NKeys(), v) == nil }
	switch {
	case l.ix.Catalogue.Mesh.Operator():
		what, fits = "signing key", func(v string) bool { return catalogue.CredentialFitsOperator(v) == nil }
	case l.ix.Catalogue.Mesh.NKeys():
		what = "nkey"
	}
	// A line the loader already refused (an alias, an anchor) has its one finding.
	refused := map[[2]any]bool{}
	for _, f := range l.loaded {
		refused[[2]any{f.Pos.File, f.Pos.Line}] = true
	}
	if cr := l.ix.Catalogue.Credentials; cr != nil {
		first := map[string]catalogue.Text{}
		for _, u := range cr.Users {
			// A value that does not fit the mesh's auth is credential-invalid's: one finding.
			h := cr.Hashes[u.Value]
			if h.Value == "" || !fits(h.Value) || refused[[2]any{h.Pos.File, h.Pos.Line}] {
				continue
			}
			prev, dup := first[h.Value]
			if !dup {
				first[h.Value] = u
				continue
			}
			f := l.report(ruleCredentialDuplicate, h.Pos, "%s records the same %s as %s: whoever holds %s's credential logs in as %s too (and %s as %s); run `meshc mint %s`, which gives it one of its own",
				u.Value, what, prev.Value, prev.Value, u.Value, u.Value, prev.Value, u.Value)
			f.Related = append(f.Related, catalogue.Related{Pos: cr.Hashes[prev.Value].Pos, Message: "the same " + what + ", recorded for " + prev.Value})
		}
	}
	if k := l.ix.Catalogue.Keys; k != nil {
		first := map[string]catalogue.Text{}
		for _, name := range k.Names {
			key := k.Accounts[name.Value]
			if key.Value == "" {
				continue
			}
			prev, dup := first[key.Value]
			if !dup {
				first[key.Value] = name
				continue
			}
			f := l.report(ruleCredentialDuplicate, key.Pos, "account %s records the same key as account %s: an account's key is its identity, so the two would be one account on the bus; give %s a key of its own (delete its line and run `meshc mint --missing`)",
				name.Value, prev.Value, name.Value)
			f.Related = append(f.Related, catalogue.Related{Pos: k.Accounts[prev.Value].Pos, Message: "the same key, recorded for account " + prev.Value})
		}
	}
}

// RuleCredentialInvalid and RuleCredentialDuplicate are the ids of the rules that `meshc mint`
// fixes, so mint runs while they fire.
var (
	RuleCredentialInvalid   = ruleCredentialInvalid.ID
	RuleCredentialDuplicate = ruleCredentialDuplicate.ID
)

// replaceOrRevoke is the fix for one user's record that is wrong in any auth: minting the user
// again replaces it, unless the catalogue no longer has the user, which mint refuses to mint;
// then revoking drops the record.
func replaceOrRevoke(user string, derived map[string]bool) string {
	if derived[user] {
		return fmt.Sprintf("run `meshc mint %s`, which replaces it", user)
	}
	return fmt.Sprintf("the catalogue no longer has %s as a bus user, so run `meshc mint --revoke %s`, which drops the record", user, user)
}

// reportGone reports, as one finding, the records of users the catalogue no longer derives that
// hold another auth's credentials (what a switch of auth leaves of a removed user): the command
// that drops them, named in full.
// A record of a removed user in the right form harms nothing and is left to `meshc mint`, which
// names it.
func (l *linter) reportGone(cr *catalogue.Credentials, gone []catalogue.Text, wants string) {
	if len(gone) == 0 {
		return
	}
	names := make([]string, len(gone))
	for i, u := range gone {
		names[i] = u.Value
	}
	first := cr.Hashes[gone[0].Value]
	l.report(ruleCredentialInvalid, first.Pos, "credentials.yaml records %s, which the catalogue no longer has as bus users, and what it records for them is another auth's, not %s: run `meshc mint --revoke %s`, which drops them (`meshc mint --missing` mints only the catalogue's own users, so it cannot replace these)",
		strings.Join(names, ", "), wants, strings.Join(names, " "))
	for _, u := range gone[1:] {
		l.marked[cr.Hashes[u.Value].Pos] = true
	}
}
