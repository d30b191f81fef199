package lint

import (
	"github.com/nats-io/nkeys"
	"golang.org/x/crypto/bcrypt"

	"meshc/catalogue"
)

// instance is one module running on one machine: the unit that holds a seat.
type instance struct {
	node   *catalogue.Node
	module *catalogue.Module
	// at is the inventory's `runs` entry, where a finding about this instance points.
	at catalogue.Text
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
			if m == nil {
				l.report("inventory-unknown", r.Pos, "%s runs %q, and no manifest declares that module: add modules/%s.yaml, or fix the name%s",
					n.Name.Value, r.Value, r.Value, didYouMean(r.Value, l.modules()))
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
				holders[k] = append(holders[k], instance{node: n, module: m, at: r})
			}
		}
	}
	for _, k := range order {
		hs := holders[k]
		first := hs[0]
		for _, h := range hs[1:] {
			if k.node != "" {
				l.related("seat-contended", first.at.Pos, h.at.Pos, first.module.Name.Value+" holds it on "+k.node, "",
					"%s and %s both hold node-scoped seat %s on %s, and would split its work: run one holder of it per machine",
					h.module.Name.Value, first.module.Name.Value, k.seat, k.node)
				continue
			}
			l.related("seat-contended", first.at.Pos, h.at.Pos, first.module.Name.Value+" on "+first.node.Name.Value+" holds it", "",
				"%s on %s holds mesh-scoped seat %s, and so does %s on %s; the two would split its work: run one holder of it in the mesh, or make the seat node-scoped",
				h.module.Name.Value, h.node.Name.Value, k.seat, first.module.Name.Value, first.node.Name.Value)
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
			if !l.ok(r) || provided[r.Value] {
				continue
			}
			hint := "run a module that provides it, or drop the requirement"
			if p, ok := providers[r.Value]; ok {
				hint = p + " provides it: run " + p + " on some machine, or drop the requirement"
			}
			l.report("requires-unmet", r.Pos, "%s requires %s, and nothing the inventory runs provides it, so %s will fail at its first use: %s",
				m.Name.Value, r.Value, m.Name.Value, hint)
		}
	}
}

// checkCredentials reports a recorded value that is not a bcrypt hash. The value is never
// repeated in the message: if it is not a hash, it is probably the password itself.
func (l *linter) checkCredentials() {
	cr := l.ix.Catalogue.Credentials
	if cr == nil {
		return
	}
	for _, u := range cr.Users {
		h := cr.Hashes[u.Value]
		if l.ix.Catalogue.Mesh.NKeys() {
			// auth: nkey records public keys; a seed here would be the secret itself.
			if !nkeys.IsValidPublicUserKey(h.Value) {
				l.report("credential-invalid", h.Pos, "the value recorded for %s is not an nkey user's public key (U…), and with auth: nkey credentials.yaml keeps only public keys (a seed here is a secret in git): remove it and run `meshc mint %s`",
					u.Value, u.Value)
			}
			continue
		}
		if _, err := bcrypt.Cost([]byte(h.Value)); err != nil {
			l.report("credential-invalid", h.Pos, "the value recorded for %s is not a bcrypt hash, and credentials.yaml keeps only hashes (a plaintext here is a secret in git): remove it and run `meshc mint %s`",
				u.Value, u.Value)
		}
	}
}
