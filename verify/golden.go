package verify

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nats-io/nats-server/v2/conf"

	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
)

// golden is what the golden files say as committed: the file the server runs (accounts.conf, or
// claims.json in operator mode) read the way the server reads it, each principal's grants as
// written there, and plan.json read back. A failure names the grant in here that let a try
// through, with its line, so the fix is one look away.
type golden struct {
	// dir is the golden directory as given; file the path of what the server runs, data its bytes.
	dir, file string
	data      []byte
	lines     []string
	users     map[string]*goldenUser
	// imports are each account's imports, as written.
	imports map[string][]compiler.Import
	// plan is plan.json read back: the streams, consumers and served tools the bus holds;
	// planText its text.
	plan     *compiler.Plan
	planText string
	// claims are claims.json's accounts, as written (operator mode).
	claims *claimsFile
	// broken says why a golden file cannot be read as what meshc writes: a file edited by hand
	// into something the server, or meshc, cannot read is the load class's failure, not an error.
	broken error
	// brokenFile is the file broken is about.
	brokenFile string
}

// goldenUser is one principal as the golden file writes it.
type goldenUser struct {
	Name, Account      string
	Publish, Subscribe compiler.Permission
	Responses          bool
	// NKey is the public key an nkey user is written with.
	NKey string
}

// readGolden reads the golden directory of a compiled plan: accounts.conf (claims.json with auth:
// operator) and plan.json. What is missing or unreadable is said with the command that writes it.
func readGolden(dir string, expected *compiler.Plan) (*golden, error) {
	g := &golden{dir: dir, users: map[string]*goldenUser{}, imports: map[string][]compiler.Import{}}
	data, err := os.ReadFile(filepath.Join(dir, emit.PlanFile))
	if err != nil {
		return nil, fmt.Errorf("reading the golden plan: %w; run `meshc emit` to write it", err)
	}
	g.planText = string(data)
	if g.plan, err = emit.ReadPlanJSON(data); err != nil {
		g.broken, g.brokenFile = err, filepath.Join(dir, emit.PlanFile)
		return g, nil
	}
	g.plan.Account, g.plan.Catalogue = expected.Account, expected.Catalogue
	name := emit.AccountsFile
	if expected.Operator != nil {
		name = emit.ClaimsFile
	}
	g.file = filepath.Join(dir, name)
	if g.data, err = os.ReadFile(g.file); err != nil {
		return nil, fmt.Errorf("reading the golden file the server runs: %w; run `meshc emit` to write it", err)
	}
	g.lines = strings.Split(string(g.data), "\n")
	if expected.Operator != nil {
		g.broken = g.readClaims()
	} else {
		g.broken = g.readAccounts(expected)
	}
	g.brokenFile = g.file
	return g, nil
}

// readAccounts reads accounts.conf with nats-server's own parser: users, their permissions and
// each account's imports. An nkey user is named by the public key the catalogue records for it.
func (g *golden) readAccounts(expected *compiler.Plan) error {
	m, err := conf.Parse(string(g.data))
	if err != nil {
		return fmt.Errorf("nats-server cannot read it: %v; run `meshc emit` to rewrite it", err)
	}
	byKey := map[string]string{}
	for _, u := range expected.Users {
		if u.NKey != "" {
			byKey[u.NKey] = u.Name
		}
	}
	accounts, _ := m["accounts"].(map[string]any)
	for account, v := range accounts {
		a, _ := v.(map[string]any)
		for _, uv := range list(a["users"]) {
			u, _ := uv.(map[string]any)
			gu := &goldenUser{Account: account}
			gu.Name, _ = u["user"].(string)
			if key, ok := u["nkey"].(string); ok {
				gu.NKey = key
				if gu.Name = byKey[key]; gu.Name == "" {
					gu.Name = key
				}
			}
			perms, _ := u["permissions"].(map[string]any)
			gu.Publish, gu.Subscribe = permission(perms["publish"]), permission(perms["subscribe"])
			switch r := perms["allow_responses"].(type) {
			case bool:
				gu.Responses = r
			case map[string]any:
				gu.Responses = true
			}
			g.users[gu.Name] = gu
		}
		for _, iv := range list(a["imports"]) {
			i, _ := iv.(map[string]any)
			for _, kind := range []compiler.ExportKind{compiler.ServiceExport, compiler.StreamExport} {
				if spec, ok := i[string(kind)].(map[string]any); ok {
					from, _ := spec["account"].(string)
					subject, _ := spec["subject"].(string)
					g.imports[account] = append(g.imports[account], compiler.Import{Kind: kind, Subject: subject, Account: from})
				}
			}
		}
	}
	return nil
}

// permission reads a publish or subscribe permission in any form the server takes: a map of
// allow and deny, a list, or one subject.
func permission(v any) compiler.Permission {
	switch p := v.(type) {
	case map[string]any:
		return compiler.Permission{Allow: strings_(p["allow"]), Deny: strings_(p["deny"])}
	case nil:
		return compiler.Permission{}
	}
	return compiler.Permission{Allow: strings_(v)}
}

func list(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

func strings_(v any) []string {
	var out []string
	for _, x := range list(v) {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// allowedBy names what in the golden file let user take op on subject: the allow entry covering
// it, or, for a user the file gives no allow list, the server's reading of that (everything);
// "" when the file says nothing of the user. A subscription may name its queue group
// (`subject queue`).
func (g *golden) allowedBy(user string, publish bool, subject string) string {
	u := g.users[user]
	if u == nil {
		return ""
	}
	p := u.Subscribe
	if publish {
		p = u.Publish
	}
	if len(p.Allow) == 0 {
		return "no allow list, which the server reads as everything"
	}
	subject, queue := compiler.SplitQueue(subject)
	for _, a := range p.Allow {
		s, q := compiler.SplitQueue(a)
		if compiler.Covers(s, subject) && (q == "" || q == queue) {
			return a
		}
	}
	return ""
}

// importedBy names the import of user's account, as the golden file writes it, that covers
// subject — what carried an answer aimed there into another account — and its line (0 when
// unknown).
func (g *golden) importedBy(user, subject string) (string, int) {
	u := g.users[user]
	if u == nil {
		return "", 0
	}
	for _, i := range g.imports[u.Account] {
		if compiler.Covers(i.Subject, subject) {
			return fmt.Sprintf("account %s's import of %s from %s", u.Account, i.Subject, i.Account), g.importLine(u.Account, i.Subject)
		}
	}
	return "", 0
}

// importLine is the line of an account's import of subject: after the line opening the account
// (accounts.conf) or naming it (claims.json), the first line holding the quoted subject after an
// imports list begins.
func (g *golden) importLine(account, subject string) int {
	inAccount, inImports := false, false
	for i, l := range g.lines {
		switch {
		case !inAccount:
			inAccount = strings.Contains(l, `"`+account+`" {`) || strings.Contains(l, `"name": "`+account+`"`)
		case !inImports:
			inImports = strings.Contains(l, "imports")
		case strings.Contains(l, `"`+subject+`"`):
			return i + 1
		}
	}
	return 0
}

// line is where a grant of user is written: the first line holding the quoted grant after the
// line that names the user (`user: "X"`, the comment above an nkey user, or a scoped key's role),
// 0 when it cannot be found.
func (g *golden) line(user, grant string) int {
	if user == "" {
		return 0
	}
	named := false
	marks := []string{`"` + user + `"`, "# " + user}
	if u := g.users[user]; u != nil && u.NKey != "" {
		marks = append(marks, `"`+u.NKey+`"`)
	}
	for i, l := range g.lines {
		if !named {
			named = slices.ContainsFunc(marks, func(m string) bool { return strings.Contains(l, m) })
			if named && grant == "" {
				return i + 1
			}
			continue
		}
		if strings.Contains(l, `"`+grant+`"`) {
			return i + 1
		}
	}
	return 0
}

// claimsFile is golden/claims.json: the operator's public keys and every account's claims.
type claimsFile struct {
	Operator      string            `json:"operator"`
	SigningKey    string            `json:"signing_key"`
	SystemAccount string            `json:"system_account"`
	Accounts      []json.RawMessage `json:"accounts"`
}

// scopedClaims is the part of an account's claims verify reads to know its principals: each
// scoped signing key's role (its user) and template, and the account's imports.
type scopedClaims struct {
	Name    string `json:"name"`
	Subject string `json:"sub"`
	Nats    struct {
		SigningKeys []struct {
			Kind     string `json:"kind"`
			Key      string `json:"key"`
			Role     string `json:"role"`
			Template struct {
				Pub  compiler.Permission `json:"pub"`
				Sub  compiler.Permission `json:"sub"`
				Resp *struct{}           `json:"resp"`
			} `json:"template"`
		} `json:"signing_keys"`
		Imports []struct {
			Name    string `json:"name"`
			Subject string `json:"subject"`
			Account string `json:"account"`
			Type    string `json:"type"`
		} `json:"imports"`
	} `json:"nats"`
}

// readClaims reads claims.json: each scoped signing key a user of its account, with the key's
// template as its grants.
func (g *golden) readClaims() error {
	g.claims = &claimsFile{}
	if err := json.Unmarshal(g.data, g.claims); err != nil {
		return fmt.Errorf("not the claims meshc writes: %v; run `meshc emit` to rewrite it", err)
	}
	for _, raw := range g.claims.Accounts {
		var a scopedClaims
		if err := json.Unmarshal(raw, &a); err != nil {
			return fmt.Errorf("an account's claims: %v; run `meshc emit` to rewrite it", err)
		}
		for _, k := range a.Nats.SigningKeys {
			if k.Kind != "user_scope" || k.Role == compiler.ProbeRole {
				continue
			}
			g.users[k.Role] = &goldenUser{Name: k.Role, Account: a.Name, Publish: k.Template.Pub, Subscribe: k.Template.Sub, Responses: k.Template.Resp != nil}
		}
		for _, i := range a.Nats.Imports {
			kind := compiler.ServiceExport
			if i.Type == "stream" {
				kind = compiler.StreamExport
			}
			g.imports[a.Name] = append(g.imports[a.Name], compiler.Import{Kind: kind, Subject: i.Subject, Account: i.Name})
		}
	}
	return nil
}
