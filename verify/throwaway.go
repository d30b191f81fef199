package verify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/meshc-dev/meshc/apply/deliver"
	"github.com/meshc-dev/meshc/apply/wire"
	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/internal/natsserver"
	"github.com/meshc-dev/meshc/operator"
	"github.com/meshc-dev/meshc/up"
)

// A throwaway server runs the golden files as committed, byte for byte, with one change: the
// credentials. The recorded hashes and public keys are their holders', whose passwords and seeds
// a proof never has, so each principal gets generated credentials in their place — a password in
// place of a hash, a public key whose seed the proof holds in place of an nkey — and everything
// else the server reads (accounts, permissions, imports, exports, limits) is the file's. In
// operator mode the recorded keys are not the proof's to sign for either: every key claims.json
// records (each account's, each user's scoped signing key, the system account's, the probe key)
// is replaced by one the proof makes, under an operator of its own, and the claims, permissions
// in the scopes' templates included, are pushed as written.

// serverExtra is the throwaway server's own half beside the golden files: a server-wide payload
// limit above any account's, so what stops a message past an account's max_payload is the golden
// file's limit and not the server's default (docs/nats.md, "Limits and floods").
const serverExtra = "max_payload: 8MB\n"

type throwaway struct {
	dir string
	srv *server.Server
}

func (t *throwaway) stop() {
	if t.srv != nil {
		t.srv.Shutdown()
		t.srv.WaitForShutdown()
	}
	os.RemoveAll(t.dir)
}

// startThrowaway starts the server on the golden files, with generated credentials in p.as, and
// applies golden/plan.json as mesh-controller. What the golden files make impossible is a
// failure of the load class; what stops the proof itself (no temporary directory) an error.
func startThrowaway(ctx context.Context, p *proof) (*throwaway, error) {
	dir, err := os.MkdirTemp("", "meshc-verify-")
	if err != nil {
		return nil, err
	}
	t := &throwaway{dir: dir}
	p.as = map[string][]nats.Option{}
	p.try(Load, 1)
	if p.expected.Operator != nil {
		err = t.startOperator(ctx, p)
	} else {
		err = t.startAccounts(ctx, p)
	}
	if err != nil {
		p.fail(Load, "", "", "", "%v", err)
		return t, nil
	}
	p.url, p.srv = t.srv.ClientURL(), t.srv
	p.try(Load, 1)
	controller, ok := p.as[compiler.ControllerUser]
	if !ok {
		p.fail(Load, compiler.ControllerUser, "", "", "%s holds no %s, so nothing can apply golden/plan.json; run `meshc emit`", p.golden.file, compiler.ControllerUser)
		return t, nil
	}
	e := wire.Endpoint{URL: p.url, User: compiler.ControllerUser, Options: append([]nats.Option{
		nats.Name("meshc verify"), nats.CustomInboxPrefix(compiler.InboxPrefix(compiler.ControllerUser))}, controller...)}
	if _, err := up.ApplyAs(ctx, e, p.golden.plan); err != nil {
		p.fail(Load, compiler.ControllerUser, "", "", "applying %s as %s with its golden grants: %v", filepath.Join(p.golden.dir, emit.PlanFile), compiler.ControllerUser, err)
		return t, nil
	}
	p.said(Load, "the server loaded %s; %s applied %d streams and %d consumers from %s",
		filepath.Base(p.golden.file), compiler.ControllerUser, len(p.golden.plan.Streams), len(p.golden.plan.Consumers), emit.PlanFile)
	return t, nil
}

// startAccounts runs accounts.conf, included by the server's own half as a server does, read by
// the server's own parser; then each user's credential is replaced.
func (t *throwaway) startAccounts(ctx context.Context, p *proof) error {
	if err := os.WriteFile(filepath.Join(t.dir, emit.AccountsFile), p.golden.data, 0o600); err != nil {
		return err
	}
	conf, err := up.WriteServerConf(t.dir, 0, serverExtra)
	if err != nil {
		return err
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		return fmt.Errorf("the server refuses %s: %v; run `meshc emit` to rewrite it", p.golden.file, strings.ReplaceAll(err.Error(), conf, "the server's configuration"))
	}
	for _, u := range opts.Users {
		password, err := generated()
		if err != nil {
			return err
		}
		u.Password = password
		p.as[u.Username] = []nats.Option{nats.UserInfo(u.Username, password)}
	}
	for _, n := range opts.Nkeys {
		name := p.golden.nkeyUser(n.Nkey)
		kp, err := nkeys.CreateUser()
		if err != nil {
			return err
		}
		public, _ := kp.PublicKey()
		n.Nkey = public
		p.as[name] = []nats.Option{nats.Nkey(public, kp.Sign)}
	}
	opts.NoSigs = true
	t.srv, err = natsserver.Start(ctx, opts, 10*time.Second)
	if err != nil {
		return fmt.Errorf("the server does not start on %s: %v", p.golden.file, err)
	}
	return nil
}

// nkeyUser is the principal an nkey user of the golden file is: the user the catalogue records
// the key for, else the key itself.
func (g *golden) nkeyUser(key string) string {
	for name, u := range g.users {
		if u.NKey == key {
			return name
		}
	}
	return key
}

// generated is a password no holder has: 128 random bits, in hex.
func generated() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// startOperator runs claims.json under an operator the proof makes: every key the file records
// replaced by one of the proof's, the accounts signed and pushed to the server's resolver as
// `meshc apply` pushes them (each proven to take connections and resolve its imports), and each
// user issued a JWT by the proof's key in place of its scoped signing key.
func (t *throwaway) startOperator(ctx context.Context, p *proof) error {
	op, err := operator.NewOperator(p.expected.Account)
	if err != nil {
		return err
	}
	probe, err := operator.ProbeKey(op.Signing)
	if err != nil {
		return err
	}
	probeKey, _ := probe.PublicKey()
	recorded := p.golden.claims
	mine := map[string]string{recorded.SystemAccount: op.System}
	if p.expected.Operator.ProbeKey != "" {
		mine[p.expected.Operator.ProbeKey] = probeKey
	}
	signers := map[string]nkeys.KeyPair{}
	accountOf := map[string]string{}
	for _, raw := range recorded.Accounts {
		var a scopedClaims
		if err := json.Unmarshal(raw, &a); err != nil {
			return err
		}
		if mine[a.Subject], err = catalogue.MintAccountKey(); err != nil {
			return err
		}
		for _, k := range a.Nats.SigningKeys {
			if k.Kind != "user_scope" || k.Role == compiler.ProbeRole {
				continue
			}
			kp, err := nkeys.CreateAccount()
			if err != nil {
				return err
			}
			mine[k.Key], _ = kp.PublicKey()
			signers[k.Role], accountOf[k.Role] = kp, a.Subject
		}
	}
	p.keys, p.accountKeys = map[string]string{}, map[string]string{}
	for rec, m := range mine {
		p.keys[m] = rec
	}
	var claims []compiler.AccountClaims
	for _, raw := range recorded.Accounts {
		var doc any
		if err := json.Unmarshal(raw, &doc); err != nil {
			return err
		}
		data, err := json.Marshal(rekey(doc, mine))
		if err != nil {
			return err
		}
		ac := &jwt.AccountClaims{}
		if err := json.Unmarshal(data, ac); err != nil {
			return fmt.Errorf("%s: account claims the server cannot read: %v; run `meshc emit` to rewrite it", p.golden.file, err)
		}
		var from []string
		for _, i := range ac.Imports {
			from = append(from, i.Name)
		}
		slices.Sort(from)
		claims = append(claims, compiler.AccountClaims{Name: ac.Name, Claims: ac, From: slices.Compact(from)})
		p.accountKeys[ac.Name] = ac.Subject
	}
	jwtDir, err := filepath.Abs(filepath.Join(t.dir, "jwt"))
	if err != nil {
		return err
	}
	serverConf, err := op.ServerConf(operator.ResolverOptions{Dir: jwtDir})
	if err != nil {
		return err
	}
	const operatorConf = "operator.conf"
	if err := os.WriteFile(filepath.Join(t.dir, operatorConf), []byte(serverConf), 0o600); err != nil {
		return err
	}
	conf, err := up.WriteServerConfIncluding(t.dir, 0, serverExtra, operatorConf)
	if err != nil {
		return err
	}
	if t.srv, err = natsserver.FromConfig(ctx, conf, false, 10*time.Second); err != nil {
		return err
	}
	url := t.srv.ClientURL()
	creds, err := op.SystemCreds()
	if err != nil {
		return err
	}
	sys, err := operator.SystemUserFrom(creds)
	if err != nil {
		return err
	}
	nc, err := wire.Dial(url, nats.Name("meshc verify"), sys)
	if err != nil {
		return err
	}
	defer nc.Close()
	r, err := deliver.NewResolver(ctx, nc, 10*time.Second)
	if err != nil {
		return err
	}
	if _, err := deliver.PushClaims(ctx, r, claims, deliver.PushOptions{
		Signer: op.Signing,
		Dial:   func(extra ...nats.Option) (*nats.Conn, error) { return nats.Connect(url, extra...) },
	}); err != nil {
		return fmt.Errorf("pushing the accounts of %s: %v", p.golden.file, err)
	}
	for user, kp := range signers {
		token, key, err := operator.IssueUser(kp, user, mine[accountOf[user]])
		if err != nil {
			return err
		}
		p.as[user] = []nats.Option{operator.UserOption(token, key)}
	}
	return nil
}

// rekey replaces every string of a decoded JSON document that is a key in keys by its value.
func rekey(v any, keys map[string]string) any {
	switch x := v.(type) {
	case string:
		if k, ok := keys[x]; ok {
			return k
		}
	case []any:
		for i := range x {
			x[i] = rekey(x[i], keys)
		}
	case map[string]any:
		for k := range x {
			x[k] = rekey(x[k], keys)
		}
	}
	return v
}
