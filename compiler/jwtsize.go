package compiler

import (
	"fmt"

	"github.com/meshc-dev/meshc/catalogue"
)

// RuleJWTTooLarge is an account whose JWT would be over the server's cap, said where the account
// comes from at lint time: emit and apply refuse it too, but only once the catalogue is merged.
var RuleJWTTooLarge = &catalogue.Rule{ID: "jwt-too-large", Severity: catalogue.Error, Firm: true,
	Summary: "with auth: operator, an account whose JWT would be over the 1 MiB the server takes",
	Why:     "The server refuses an account JWT over its cap (jwt's decoder does, whatever max_payload says): emit refuses to write the claims and apply to push them, after the pull request that made the account that large was merged; said here, at the module or person that makes it large."}

// placeholderKey stands in for the i-th key keys.yaml or credentials.yaml does not record yet:
// every public key is 56 characters, and no two are one (a signing key names a user's scope), so
// an account's size is what it will be once minted.
func placeholderKey(i int) string { return fmt.Sprintf("A%055d", i) }

// jwtSizes finds every account whose JWT would be over the cap: a cheap bound of each account's
// size first (its users' grants, its imports and exports, as JSON), and only an account whose
// bound comes near the cap is derived exactly, as apply would sign it.
func (c *compilation) jwtSizes() {
	p := c.plan
	users := p.usersByName()
	keys := map[string]string{}
	for name, key := range p.Operator.Accounts {
		keys[name] = key
	}
	placeholders := 0
	placeholder := func() string { placeholders++; return placeholderKey(placeholders) }
	for _, a := range p.jwtAccounts(users) {
		if bound(a, users) < MaxAccountJWT*3/4 {
			continue
		}
		for _, name := range a.Users {
			if u := users[name]; u != nil && u.SigningKey == "" {
				u2 := *u
				u2.SigningKey = placeholder()
				users[name] = &u2
			}
		}
		for _, i := range a.Imports {
			if keys[i.Account] == "" {
				keys[i.Account] = placeholder()
			}
		}
		if keys[a.Name] == "" {
			keys[a.Name] = placeholder()
		}
		claims := p.accountClaims(a, users, keys)
		n, err := claims.Size()
		if err != nil || n <= MaxAccountJWT {
			continue
		}
		c.findings = append(c.findings, RuleJWTTooLarge.At(c.accountSource(a, users), "account %s would be a %d-byte JWT, over the %d bytes the server takes (%d imports, %d signing keys): %s",
			a.Name, n, MaxAccountJWT, len(claims.Claims.Imports), len(claims.Claims.SigningKeys), whyLarge(claims)))
	}
}

// bound is more than an account's JWT can be: each user's grants, import and export with room
// for their JSON, a third more for base64.
func bound(a Account, users map[string]*User) int {
	n := 1024
	for _, name := range a.Users {
		u := users[name]
		if u == nil {
			continue
		}
		n += 256 + len(u.Name)
		for _, l := range [][]string{u.Publish.Allow, u.Publish.Deny, u.Subscribe.Allow, u.Subscribe.Deny} {
			for _, s := range l {
				n += len(s) + 8 // quotes, comma, and each '>' written as \u003e
			}
		}
	}
	for _, i := range a.Imports {
		n += len(i.Subject) + len(i.Account) + 128
	}
	for _, e := range a.Exports {
		n += len(e.Subject) + 64
	}
	return n * 4 / 3
}

// accountSource is where a finding about an account points: its first user's declaration (a
// module's running entry, a person's line), or mesh.yaml for an account of no user.
func (c *compilation) accountSource(a Account, users map[string]*User) catalogue.Pos {
	for _, name := range a.Users {
		if u := users[name]; u != nil && u.Source.File != "" {
			return u.Source
		}
	}
	return catalogue.Pos{File: catalogue.MeshFile}
}
