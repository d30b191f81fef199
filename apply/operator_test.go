package apply

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshc-dev/meshc/apply/deliver"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/change"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/natstest"
	"github.com/meshc-dev/meshc/internal/testwait"
	"github.com/meshc-dev/meshc/operator"
)

// opMesh is the proof's catalogue in operator mode with an account per principal, an operator,
// and every user's signing key at hand to issue its credentials.
type opMesh struct {
	plan    *compiler.Plan
	op      *operator.Operator
	signers map[string]nkeys.KeyPair
}

func newOpMesh(t *testing.T) *opMesh {
	t.Helper()
	c, _ := cataloguetest.Load(t, "../proof/testdata/proof.txtar")
	c.Mesh.Isolation.Value, c.Mesh.Auth.Value = catalogue.IsolationPerModule, catalogue.AuthOperator
	plan, _ := compiler.Compile(catalogue.NewIndex(c))
	op, err := operator.NewOperator(plan.Account)
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := op.Record()
	plan.Operator = &compiler.OperatorKeys{Operator: rec.Operator, SigningKey: rec.SigningKey, SystemAccount: rec.SystemAccount, ProbeKey: rec.ProbeKey, Accounts: map[string]string{}}
	for _, a := range plan.OperatorAccounts() {
		plan.Operator.Accounts[a], _ = catalogue.MintAccountKey()
	}
	m := &opMesh{plan: plan, op: op, signers: map[string]nkeys.KeyPair{}}
	for i := range plan.Users {
		kp, _ := nkeys.CreateAccount()
		m.signers[plan.Users[i].Name] = kp
		plan.Users[i].SigningKey, _ = kp.PublicKey()
	}
	return m
}

// conf writes a server's operator configuration into dir (its resolver there too) and reads it
// as nats-server -c does.
func (m *opMesh) conf(t *testing.T, dir string, interval time.Duration, extra string) string {
	t.Helper()
	conf, err := m.op.ServerConf(operator.ResolverOptions{Dir: filepath.Join(dir, "jwt"), Interval: interval})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "server.conf")
	if err := os.WriteFile(path, []byte(conf+extra), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// system connects as the system user.
func (m *opMesh) system(t *testing.T, url string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	creds, err := m.op.SystemCreds()
	if err != nil {
		t.Fatal(err)
	}
	sys, err := operator.SystemUserFrom(creds)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, append(opts, sys)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// as connects as a bus user of the mesh, with credentials its own signing key issues.
func (m *opMesh) as(t *testing.T, url, user string, opts ...nats.Option) (*nats.Conn, error) {
	t.Helper()
	token, kp, err := operator.IssueUser(m.signers[user], user, m.plan.Operator.Accounts[m.plan.User(user).Account])
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, append(opts, operator.UserOption(token, kp), nats.CustomInboxPrefix(compiler.InboxPrefix(user)))...)
	if err == nil {
		t.Cleanup(nc.Close)
	}
	return nc, err
}

// push does what apply does to the accounts, as the system user: the resolver read, the change
// set's users and accounts diffed, delivered and what the catalogue dropped removed.
func (m *opMesh) push(t *testing.T, nc *nats.Conn, url string, opts ...nats.Option) (deliver.Delivered, error) {
	t.Helper()
	p, err := deliver.PusherOn(t.Context(), nc, m.plan, deliver.PushOptions{
		Signer: m.op.Signing,
		Dial: func(extra ...nats.Option) (*nats.Conn, error) {
			return nats.Connect(url, append(slices.Clone(opts), extra...)...)
		},
	}, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return p.Converge(t.Context())
}

// current counts the accounts of the plan some server does not hold as the catalogue derives
// them, signed by the operator's signing key.
func (m *opMesh) current(t *testing.T, r *deliver.Resolver) (behind int) {
	t.Helper()
	claims, _ := m.plan.Claims()
	for _, a := range claims {
		want, _ := compiler.Canonical(a.Claims)
		answers, _ := r.Lookup(t.Context(), a.Claims.Subject)
		if len(answers) < len(r.Servers) {
			behind++
			continue
		}
		for _, token := range answers {
			ac, err := jwt.DecodeAccountClaims(token)
			if err != nil {
				behind++
				break
			}
			got, _ := compiler.Canonical(ac)
			if ac.Issuer != m.plan.Operator.SigningKey || !bytes.Equal(got, want) {
				behind++
				break
			}
		}
	}
	return behind
}

func runOperatorServer(t *testing.T, m *opMesh, extra string) *server.Server {
	t.Helper()
	dir := t.TempDir()
	return natstest.FromConfig(t, m.conf(t, dir, time.Minute, "host: 127.0.0.1\nport: -1\njetstream { store_dir: \""+filepath.Join(dir, "js")+"\" }\n"+extra), false)
}

// A push to a 3-node cluster reaches all three; with a node down it reaches the two left, every
// account it pushed works (a user on one node calls a tool served on another), and the node
// catches up by itself within one resolver interval of coming back, even from two versions
// pushed in one second while it was away.
func TestOperatorModeOnAClusterWithANodeDown(t *testing.T) {
	m := newOpMesh(t)
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	c := runClusterFrom(t, func(i int) *server.Options {
		o, err := server.ProcessConfigFile(m.conf(t, dirs[i], time.Second, ""))
		if err != nil {
			t.Fatal(err)
		}
		return o
	})
	sys := m.system(t, c.urls())
	did, err := m.push(t, sys, c.urls())
	if err != nil {
		t.Fatal(err)
	}
	if len(did.Missing) != 0 || len(did.Pushed) != len(m.plan.OperatorAccounts()) {
		t.Fatalf("first push: %+v", did)
	}

	// n3 goes; bob gains a tool, twice in one second (two versions of his account). The meta
	// group, which names the servers that do not answer, is waited for.
	c.stop(2)
	c.waitReady()
	bob := m.plan.User("person.bob")
	for _, tool := range []string{"mesh.mod.registry.tool.prune", "mesh.mod.registry.tool.fake"} {
		bob.Publish.Allow = append(bob.Publish.Allow, tool)
		i := slices.IndexFunc(m.plan.Accounts, func(a compiler.Account) bool { return a.Name == "person.bob" })
		m.plan.Accounts[i].Imports = append(m.plan.Accounts[i].Imports, compiler.Import{Kind: compiler.ServiceExport, Subject: tool, Account: "mod.registry"})
		r := &m.plan.Accounts[slices.IndexFunc(m.plan.Accounts, func(a compiler.Account) bool { return a.Name == "mod.registry" })]
		if e := slices.IndexFunc(r.Exports, func(e compiler.Export) bool { return e.Subject == tool }); e >= 0 {
			r.Exports[e].Accounts = append(r.Exports[e].Accounts, "person.bob")
		} else {
			r.Exports = append(r.Exports, compiler.Export{Kind: compiler.ServiceExport, Subject: tool, Accounts: []string{"person.bob"}})
		}
		did, err = m.push(t, sys, c.urls())
		if err != nil {
			t.Fatalf("push with n3 down: %v", err)
		}
		if !slices.Equal(did.Missing, []string{"n3"}) || !slices.Contains(did.Pushed, "person.bob") {
			t.Fatalf("push with n3 down: %+v", did)
		}
	}
	t.Logf("with n3 down: %+v", did)

	// The two nodes left run it: bob on n1 calls prune, served on n2.
	registry, err := m.as(t, fmt.Sprintf("nats://127.0.0.1:%d", c.opts[1].Port), "serve.anchor.registry")
	if err != nil {
		t.Fatal(err)
	}
	registry.QueueSubscribe("mesh.mod.registry.tool.prune", "registry", func(msg *nats.Msg) { msg.Respond([]byte("pruned")) })
	registry.Flush()
	caller, err := m.as(t, fmt.Sprintf("nats://127.0.0.1:%d", c.opts[0].Port), "person.bob")
	if err != nil {
		t.Fatal(err)
	}
	waitAnswered(t, caller, "mesh.mod.registry.tool.prune", "pruned")

	// n3 comes back and catches up by itself: every server holds what the catalogue derives.
	c.start(2)
	r, _ := deliver.NewResolver(t.Context(), sys, 3*time.Second)
	start := time.Now()
	testwait.ForNil(t, "n3 to catch up", 30*time.Second, func() error {
		if behind := m.current(t, r); behind > 0 {
			return fmt.Errorf("%d account(s) behind", behind)
		}
		return nil
	})
	t.Logf("n3 caught up %s after it came back (resolver interval 1s)", time.Since(start).Round(time.Millisecond))
	onN3, err := m.as(t, fmt.Sprintf("nats://127.0.0.1:%d", c.opts[2].Port), "person.bob")
	if err != nil {
		t.Fatal(err)
	}
	waitAnswered(t, onN3, "mesh.mod.registry.tool.prune", "pruned")
	if _, err := onN3.Request("mesh.mod.registry.tool.fake", nil, 2*time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("a tool nobody serves: %v, want no responders", err)
	}

	// Nothing more to push.
	if did, err = m.push(t, sys, c.urls()); err != nil || len(did.Pushed) != 0 {
		t.Fatalf("a push with nothing changed: %+v %v", did, err)
	}
}

// waitAnswered calls a tool until it answers: a server that has just caught up wires the import
// as the account is built.
func waitAnswered(t *testing.T, nc *nats.Conn, subject, want string) {
	t.Helper()
	testwait.ForNil(t, subject+" to be answered "+want, 10*time.Second, func() error {
		m, err := nc.Request(subject, nil, time.Second)
		if err == nil && string(m.Data) != want {
			err = fmt.Errorf("answered %q", m.Data)
		}
		return err
	})
}

// "jwt updated" is not an account that works: an account whose import its exporter does not
// offer, and an account signed by a key the servers do not trust, are both stored, and the probe
// says each is not working.
func TestTheProbeCatchesWhatTheResolverStores(t *testing.T) {
	t.Parallel()
	m := newOpMesh(t)
	s := runOperatorServer(t, m, "")
	sys := m.system(t, s.ClientURL())
	if _, err := m.push(t, sys, s.ClientURL()); err != nil {
		t.Fatal(err)
	}

	// bob imports a subject registry does not export.
	i := slices.IndexFunc(m.plan.Accounts, func(a compiler.Account) bool { return a.Name == "person.bob" })
	m.plan.Accounts[i].Imports = append(m.plan.Accounts[i].Imports, compiler.Import{Kind: compiler.ServiceExport, Subject: "mesh.mod.registry.event.forged", Account: "mod.registry"})
	_, err := m.push(t, sys, s.ClientURL())
	if err == nil || !strings.Contains(err.Error(), "person.bob") || !strings.Contains(err.Error(), "imports the server could not resolve: mesh.mod.registry.event.forged") {
		t.Fatalf("an import nobody exports: %v", err)
	}
	m.plan.Accounts[i].Imports = m.plan.Accounts[i].Imports[:len(m.plan.Accounts[i].Imports)-1]

	// Another operator's signing key: the JWT is stored, and nobody can connect to the account.
	other, _ := operator.NewOperator("other")
	m.op.Signing = other.Signing
	// The claims list the probe key the push signs its probe with (derived from the signing
	// key), so the servers' trust is the one thing that differs.
	probe, _ := operator.ProbeKey(other.Signing)
	m.plan.Operator.ProbeKey, _ = probe.PublicKey()
	m.plan.User("person.bob").Publish.Allow = append(m.plan.User("person.bob").Publish.Allow, "mesh.mod.catalog.tool.other")
	_, err = m.push(t, sys, s.ClientURL())
	if err == nil || !strings.Contains(err.Error(), "cannot connect") || !strings.Contains(err.Error(), "trusts the operator") {
		t.Fatalf("an account signed by a key the servers do not trust: %v", err)
	}
}

// A push deletes the accounts of this mesh the catalogue no longer has, and no other: an account
// of another tenant on the same resolver carries no tag of this mesh, and stays.
func TestDeletesOnlyTheMeshsOwnDroppedAccounts(t *testing.T) {
	t.Parallel()
	m := newOpMesh(t)
	s := runOperatorServer(t, m, "")
	sys := m.system(t, s.ClientURL())
	if _, err := m.push(t, sys, s.ClientURL()); err != nil {
		t.Fatal(err)
	}
	// Another tenant's account, pushed by the same operator.
	kp, _ := nkeys.CreateAccount()
	foreign, _ := kp.PublicKey()
	token, err := operator.EncodeAccount(jwt.NewAccountClaims(foreign), m.op.Signing, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := deliver.NewResolver(t.Context(), sys, 3*time.Second)
	if _, err := r.Push(t.Context(), "foreign", token); err != nil {
		t.Fatal(err)
	}
	// person.bob is dropped from the catalogue.
	dropped := m.plan.Operator.Accounts["person.bob"]
	m.plan.Accounts = slices.DeleteFunc(m.plan.Accounts, func(a compiler.Account) bool { return a.Name == "person.bob" })
	did, err := m.push(t, sys, s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(did.Deleted, []string{"person.bob"}) || !slices.Equal(did.Revoked, []string{"person.bob"}) {
		t.Fatalf("revoked %v and deleted %v, want bob's alone", did.Revoked, did.Deleted)
	}
	held, _ := r.List(t.Context())
	if held[dropped] > 0 || held[foreign] == 0 {
		t.Fatalf("after the push %d server(s) hold bob's and %d the other tenant's", held[dropped], held[foreign])
	}
	if _, err := m.as(t, s.ClientURL(), "person.bob"); err == nil {
		t.Fatal("a user of a deleted account connected")
	}
}

// Reading pushes nothing: a fresh resolver's read says every account is to be created, and the
// resolver still holds none of them.
func TestReadingTheResolverPushesNothing(t *testing.T) {
	t.Parallel()
	m := newOpMesh(t)
	s := runOperatorServer(t, m, "")
	sys := m.system(t, s.ClientURL())
	p, err := deliver.PusherOn(t.Context(), sys, m.plan, deliver.PushOptions{}, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	held, err := p.Read(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cs := change.Changes{Principals: change.DiffPrincipals(held, p.Wanted(), m.plan.Account)}
	if n := cs.CountPrincipals(change.KindAccount, change.Create); n != len(m.plan.OperatorAccounts()) {
		t.Fatalf("a fresh resolver: %d account(s) to create, want %d", n, len(m.plan.OperatorAccounts()))
	}
	listed, _ := p.Resolver.List(t.Context())
	if len(listed) != 1 { // the system account, preloaded
		t.Fatalf("a read left %d accounts on the resolver", len(listed))
	}
}

// The system user meshc issues for CI may make a push's requests and nothing else of $SYS: a
// leaked secret reads no server's statistics or connections' events and reloads nothing.
func TestTheSystemUserMayOnlyPush(t *testing.T) {
	t.Parallel()
	m := newOpMesh(t)
	s := runOperatorServer(t, m, "")
	violations := make(chan error, 8)
	sys := m.system(t, s.ClientURL(), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) {
			violations <- err
		}
	}))
	if _, err := m.push(t, sys, s.ClientURL()); err != nil {
		t.Fatalf("a push as the system user: %v", err)
	}
	refused := func(what string, do func() error) {
		t.Helper()
		if err := do(); err != nil && !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("%s: %v", what, err)
		}
		sys.Flush()
		select {
		case err := <-violations:
			if !strings.Contains(err.Error(), what) {
				t.Fatalf("%s: refused %v", what, err)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("the system user may %s", what)
		}
	}
	for _, subject := range []string{"$SYS.REQ.SERVER.PING", "$SYS.REQ.SERVER.PING.STATSZ", "$SYS.REQ.SERVER.PING.VARZ", "$SYS.REQ.SERVER.PING.CONNZ", "$SYS.REQ.SERVER." + s.ID() + ".RELOAD", "$SYS.REQ.ACCOUNT." + m.plan.Operator.Accounts["person.bob"] + ".CONNZ"} {
		refused("Publish to \""+subject+"\"", func() error { return sys.Publish(subject, nil) })
	}
	refused("Subscription to \"$SYS.ACCOUNT.>\"", func() error { _, err := sys.SubscribeSync("$SYS.ACCOUNT.>"); return err })
}
