package benchmarks

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/meshc-dev/meshc/apply/deliver"
	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/operator"
)

// scale runs the operator-mode scale benchmarks at 1,000 and 10,000 modules: minutes each, so
// CI's one run of every benchmark runs them at 100.
//
//	go test ./benchmarks -run '^$' -bench OperatorScale -benchtime 1x -timeout 3h -scale
var scale = flag.Bool("scale", false, "run BenchmarkOperatorScale at 1,000 and 10,000 modules (long) instead of 100")

// profileTo, with -scale, writes a CPU profile of the server's first 90 seconds of a fresh bus at
// the largest size (operator mode: the push, whose probes build every account; the file: every
// principal connecting) into this directory (docs/nats.md, "Operator mode at scale").
var profileTo = flag.String("server-profile", "", "with -scale: write the server's CPU profile of the connect storm into `DIR`")

// opFixture is a synthetic mesh with an account per principal in operator mode: an operator,
// every account's key, and every user's signing key and credentials.
type opFixture struct {
	plan  *compiler.Plan
	op    *operator.Operator
	users map[string]nats.Option
	// nkeys are the same users' nkeys, for the accounts file of the same mesh.
	nkeys map[string]nkeys.KeyPair
}

func newOpFixture(b *testing.B, n int, isolation string) *opFixture {
	b.Helper()
	c, _, err := catalogue.Load(writeCatalogue(b, n))
	if err != nil {
		b.Fatal(err)
	}
	c.Mesh.Isolation.Value, c.Mesh.Auth.Value = isolation, catalogue.AuthOperator
	plan, _ := compiler.Compile(catalogue.NewIndex(c))
	op, err := operator.NewOperator(plan.Account)
	if err != nil {
		b.Fatal(err)
	}
	rec, _ := op.Record()
	plan.Operator = &compiler.OperatorKeys{Operator: rec.Operator, SigningKey: rec.SigningKey, SystemAccount: rec.SystemAccount, ProbeKey: rec.ProbeKey, Accounts: map[string]string{}}
	for _, a := range plan.OperatorAccounts() {
		plan.Operator.Accounts[a], _ = catalogue.MintAccountKey()
	}
	f := &opFixture{plan: plan, op: op, users: map[string]nats.Option{}, nkeys: map[string]nkeys.KeyPair{}}
	for i := range plan.Users {
		u := &plan.Users[i]
		signing, _ := nkeys.CreateAccount()
		u.SigningKey, _ = signing.PublicKey()
		token, kp, err := operator.IssueUser(signing, u.Name, plan.Operator.Accounts[u.Account])
		if err != nil {
			b.Fatal(err)
		}
		f.users[u.Name] = operator.UserOption(token, kp)
		f.nkeys[u.Name], _ = nkeys.CreateUser()
	}
	b.Logf("%d modules: %d users, %d accounts", n, len(plan.Users), len(plan.OperatorAccounts()))
	return f
}

// BenchmarkOperatorClaims derives, checks and signs every account JWT of a synthetic mesh: what
// apply does before its first push. It reports the largest JWT against the server's 1 MiB cap,
// in both isolations (one shared account holds every user's grants as its signing keys' scopes).
//
// CI's one run takes 1,000 modules; MESHC_BENCH_FULL=1 adds 10,000:
//
//	MESHC_BENCH_FULL=1 go test ./benchmarks -run '^$' -bench OperatorClaims -benchtime 3x
func BenchmarkOperatorClaims(b *testing.B) {
	for _, n := range andFull([]int{1000}, 10000) {
		for _, isolation := range []string{catalogue.IsolationShared, catalogue.IsolationPerModule} {
			b.Run(fmt.Sprintf("modules=%d/%s", n, isolation), func(b *testing.B) {
				f := newOpFixture(b, n, isolation)
				var largest, imports, keys, total int
				var name string
				for b.Loop() {
					claims, err := f.plan.Claims()
					if err != nil {
						b.Fatal(err)
					}
					largest, total = 0, 0
					for _, a := range claims {
						token, err := operator.EncodeAccount(a.Claims, f.op.Signing, 0)
						if err != nil {
							b.Fatal(err)
						}
						total += len(token)
						if len(token) > largest {
							largest, name, imports, keys = len(token), a.Name, len(a.Claims.Imports), len(a.Claims.SigningKeys)
						}
					}
				}
				b.Logf("largest account JWT: %s, %d bytes, %d imports, %d signing keys (cap %d)", name, largest, imports, keys, compiler.MaxAccountJWT)
				b.ReportMetric(float64(largest), "largest-jwt-bytes")
				b.ReportMetric(float64(imports), "largest-imports")
				b.ReportMetric(float64(keys), "largest-signing-keys")
				b.ReportMetric(float64(total)/(1<<20), "all-jwts-MiB")
			})
		}
	}
}

// BenchmarkOperatorScale measures operator mode against the accounts file for the same mesh (an
// account per principal; nkey users in the file, so both authenticate by signature) on one
// nats-server process:
//
//   - fresh: a new server, every account pushed (each proven by a probe, which builds it) or the
//     file loaded, then min(users, 10,000) principals connected, 16 at a time;
//   - change: one person gains a tool with everyone connected: delivered is apply's whole delivery
//     (every account looked up, the one that differs pushed and probed; or the file rewritten and
//     the reload confirmed), working is until the person's call is answered (in operator mode its
//     scope changed, so its connection is closed and reconnects); and whether anybody else was
//     disconnected;
//   - restart: the server stopped and started with the clients connected, until every one is back.
//
// The server runs as its own process, so the clients and the server's connections do not share
// one process's file descriptors. One iteration is the whole sequence.
//
//	go test ./benchmarks -run '^$' -bench OperatorScale -benchtime 1x -timeout 3h -scale
func BenchmarkOperatorScale(b *testing.B) {
	sizes := []int{100}
	if *scale {
		sizes = []int{1000, 10000}
	}
	bin := natsServerBinary(b)
	for _, n := range sizes {
		f := newOpFixture(b, n, catalogue.IsolationPerModule)
		for _, mode := range []string{"operator", "file"} {
			b.Run(fmt.Sprintf("modules=%d/%s", n, mode), func(b *testing.B) {
				for b.Loop() {
					scaleRun(b, bin, f, mode == "operator", *scale && *profileTo != "" && n == sizes[len(sizes)-1])
				}
			})
		}
	}
}

// natsProcess is one nats-server process started from a configuration file, restartable.
type natsProcess struct {
	b                *testing.B
	bin, conf        string
	url              string
	cmd              *exec.Cmd
	port, http, prof int
}

func (p *natsProcess) start() time.Duration {
	p.b.Helper()
	start := time.Now()
	p.cmd = exec.Command(p.bin, "-c", p.conf)
	if err := p.cmd.Start(); err != nil {
		p.b.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", p.http)); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return time.Since(start)
			}
		}
		if time.Now().After(deadline) {
			p.b.Fatal("nats-server did not start in 10 minutes")
		}
	}
}

func (p *natsProcess) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.cmd.Wait()
}

func scaleRun(b *testing.B, bin string, f *opFixture, op bool, profile bool) {
	dir := b.TempDir()
	p := &natsProcess{b: b, bin: bin, port: freePort(b), http: freePort(b), prof: freePort(b)}
	p.url = fmt.Sprintf("nats://127.0.0.1:%d", p.port)
	p.conf = filepath.Join(dir, "server.conf")
	base := fmt.Sprintf("host: 127.0.0.1\nport: %d\nhttp: \"127.0.0.1:%d\"\nprof_port: %d\nmax_connections: 100000\njetstream { store_dir: %q }\n", p.port, p.http, p.prof, filepath.Join(dir, "js"))
	plan := f.plan
	writeConf := func(plan *compiler.Plan) {
		var users string
		if op {
			conf, err := f.op.ServerConf(operator.ResolverOptions{Dir: filepath.Join(dir, "jwt")})
			if err != nil {
				b.Fatal(err)
			}
			users = conf
		} else {
			local := *plan
			local.Users = slices.Clone(plan.Users)
			for i := range local.Users {
				local.Users[i].NKey, _ = f.nkeys[local.Users[i].Name].PublicKey()
				local.Users[i].SigningKey = ""
			}
			local.Operator = nil
			accounts, err := emit.Accounts(&local, emit.AccountsOptions{})
			if err != nil {
				b.Fatal(err)
			}
			users = string(accounts)
		}
		if err := os.WriteFile(p.conf, []byte(base+users), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	writeConf(plan)
	as := func(user string) nats.Option {
		if op {
			return f.users[user]
		}
		kp := f.nkeys[user]
		pub, _ := kp.PublicKey()
		return nats.Nkey(pub, kp.Sign)
	}

	b.StopTimer()
	load := p.start()
	defer p.stop()
	ctx := context.Background()
	var push time.Duration
	var sys *nats.Conn
	stopProfile := func() {}
	if profile {
		// From the first push (operator mode builds every account as it probes it) or the first
		// connection (the file built them all as it loaded).
		stopProfile = p.cpuProfile(b, map[bool]string{true: "operator", false: "file"}[op], 90*time.Second)
	}
	if op {
		creds, _ := f.op.SystemCreds()
		sysOpt, _ := operator.SystemUserFrom(creds)
		var err error
		if sys, err = nats.Connect(p.url, sysOpt, nats.MaxReconnects(-1)); err != nil {
			b.Fatal(err)
		}
		defer sys.Close()
		start := time.Now()
		if _, err := pushAll(ctx, sys, p.url, f, plan); err != nil {
			b.Fatal(err)
		}
		push = time.Since(start)
	}

	// Every principal, up to 10,000 (every person among them), connects (16 at a time, nats.go's
	// defaults: a 2 s connect timeout, reconnecting for ever).
	users := clients(plan, 10000)
	conns := make([]*nats.Conn, len(users))
	disconnects := make([]atomic.Int32, len(users))
	var failed atomic.Int32
	start := time.Now()
	var wg sync.WaitGroup
	work := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range work {
				for {
					nc, err := nats.Connect(p.url, as(users[i].Name), nats.CustomInboxPrefix(compiler.InboxPrefix(users[i].Name)),
						nats.MaxReconnects(-1), nats.DisconnectErrHandler(func(*nats.Conn, error) { disconnects[i].Add(1) }))
					if err == nil {
						conns[i] = nc
						break
					}
					failed.Add(1)
				}
			}
		})
	}
	for i := range users {
		work <- i
	}
	close(work)
	wg.Wait()
	connectAll := time.Since(start)
	stopProfile()
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()

	// One change: a person gains a tool some connected module serves.
	server, person, tool, queue := changeTargets(b, plan, users)
	if _, err := conns[server].QueueSubscribe(tool, queue, func(m *nats.Msg) { m.Respond([]byte("ok")) }); err != nil {
		b.Fatal(err)
	}
	conns[server].Flush()
	changed := grantTool(plan, users[person].Name, tool, users[server].Account)
	start = time.Now()
	var delivered time.Duration
	if op {
		did, err := pushAll(ctx, sys, p.url, f, changed)
		if err != nil {
			b.Fatal(err)
		}
		if len(did.Pushed) != 1 {
			b.Fatalf("one grant changed pushed %v", did.Pushed)
		}
	} else {
		before, _ := loadedAt(fmt.Sprintf("http://127.0.0.1:%d/varz", p.http))
		writeConf(changed)
		p.cmd.Process.Signal(syscall.SIGHUP)
		for at, _ := loadedAt(fmt.Sprintf("http://127.0.0.1:%d/varz", p.http)); !at.After(before); at, _ = loadedAt(fmt.Sprintf("http://127.0.0.1:%d/varz", p.http)) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	delivered = time.Since(start)
	for {
		if m, err := conns[person].Request(tool, nil, 100*time.Millisecond); err == nil && string(m.Data) == "ok" {
			break
		}
		if time.Since(start) > 10*time.Minute {
			b.Fatal("the changed person's call was not answered in 10 minutes")
		}
		time.Sleep(5 * time.Millisecond)
	}
	change := time.Since(start)
	others := 0
	for i := range disconnects {
		if i != person && disconnects[i].Load() > 0 {
			others++
		}
	}

	// A restart with everyone connected.
	p.stop()
	start = time.Now()
	p.start()
	deadline := start.Add(20 * time.Minute)
	back := 0
	for ; time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		back = 0
		for _, nc := range conns {
			if nc.IsConnected() {
				back++
			}
		}
		if back == len(conns) {
			break
		}
	}
	restart := time.Since(start)
	b.StartTimer()

	b.ReportMetric(load.Seconds(), "start-s")
	b.ReportMetric(push.Seconds(), "push-all-s")
	b.ReportMetric(connectAll.Seconds(), "connect-all-s")
	b.ReportMetric((load + push + connectAll).Seconds(), "fresh-s")
	b.ReportMetric(float64(failed.Load()), "connect-timeouts")
	b.ReportMetric(delivered.Seconds(), "change-delivered-s")
	b.ReportMetric(change.Seconds(), "change-working-s")
	b.ReportMetric(float64(others), "others-disconnected")
	b.ReportMetric(restart.Seconds(), "restart-all-back-s")
	b.ReportMetric(float64(back), "back-after-restart")
	b.ReportMetric(float64(len(conns)), "clients")
}

// clients are the principals that connect: every person, then the others in the plan's order, n in
// all.
func clients(plan *compiler.Plan, n int) []compiler.User {
	var people, others []compiler.User
	for _, u := range plan.Users {
		if u.Kind == compiler.KindPerson {
			people = append(people, u)
		} else {
			others = append(others, u)
		}
	}
	return append(people, others[:max(0, min(len(others), n-len(people)))]...)
}

// pushAll pushes the plan's accounts as meshc apply does, probes included.
func pushAll(ctx context.Context, sys *nats.Conn, url string, f *opFixture, plan *compiler.Plan) (deliver.Delivered, error) {
	p, err := deliver.PusherOn(ctx, sys, plan, deliver.PushOptions{
		Signer: f.op.Signing,
		Dial: func(extra ...nats.Option) (*nats.Conn, error) {
			return nats.Connect(url, append([]nats.Option{nats.Timeout(10 * time.Minute)}, extra...)...)
		},
	}, 10*time.Minute)
	if err != nil {
		return deliver.Delivered{}, err
	}
	return p.Converge(ctx)
}

// changeTargets picks a connected serving user of a tool and a connected person who may not call
// it yet.
func changeTargets(b *testing.B, plan *compiler.Plan, users []compiler.User) (server, person int, tool, queue string) {
	server, person = -1, -1
	for i, u := range users {
		if u.Kind == compiler.KindServer && server < 0 {
			for _, s := range u.Subscribe.Allow {
				// A tool is served in its module's queue group: the grant says both.
				if subject, group := compiler.SplitQueue(s); strings.Contains(subject, ".tool.") {
					server, tool, queue = i, subject, group
				}
			}
		}
	}
	for i, u := range users {
		if u.Kind == compiler.KindPerson && !slices.ContainsFunc(u.Publish.Allow, func(g string) bool { return compiler.Covers(g, tool) }) {
			person = i
			break
		}
	}
	if server < 0 || person < 0 {
		b.Fatal("no module serving a tool and person who may not call it among the connected")
	}
	return server, person, tool, queue
}

// grantTool is the plan with person granted tool, imported from the account that serves it.
func grantTool(plan *compiler.Plan, person, tool, from string) *compiler.Plan {
	changed := *plan
	changed.Users = slices.Clone(plan.Users)
	u := changed.User(person)
	u.Publish.Allow = append(slices.Clone(u.Publish.Allow), tool)
	changed.Accounts = slices.Clone(plan.Accounts)
	i := slices.IndexFunc(changed.Accounts, func(a compiler.Account) bool { return a.Name == u.Account })
	changed.Accounts[i].Imports = append(slices.Clone(changed.Accounts[i].Imports), compiler.Import{Kind: compiler.ServiceExport, Subject: tool, Account: from})
	s := slices.IndexFunc(changed.Accounts, func(a compiler.Account) bool { return a.Name == from })
	changed.Accounts[s].Exports = slices.Clone(changed.Accounts[s].Exports)
	if e := slices.IndexFunc(changed.Accounts[s].Exports, func(e compiler.Export) bool { return e.Subject == tool }); e >= 0 {
		changed.Accounts[s].Exports[e].Accounts = append(slices.Clone(changed.Accounts[s].Exports[e].Accounts), u.Account)
	}
	return &changed
}

// cpuProfile starts a CPU profile of the server for up to d and returns what stops waiting for
// it; the profile is written into -server-profile.
func (p *natsProcess) cpuProfile(b *testing.B, name string, d time.Duration) func() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%d", p.prof, int(d.Seconds())))
		if err != nil {
			b.Logf("profile: %v", err)
			return
		}
		defer resp.Body.Close()
		os.MkdirAll(*profileTo, 0o755)
		path := filepath.Join(*profileTo, "nats-server-"+name+".pprof")
		out, err := os.Create(path)
		if err != nil {
			b.Logf("profile: %v", err)
			return
		}
		defer out.Close()
		io.Copy(out, resp.Body)
		b.Logf("the server's CPU profile of the connect storm: %s (go tool pprof -top %s %s)", path, p.bin, path)
	}()
	return func() { <-done }
}
