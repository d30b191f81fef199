package benchmarks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/bcrypt"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/internal/natsserver"
	"github.com/meshc-dev/meshc/up"
)

// BenchmarkIsolatedReload measures what the server takes to load, and then to reload, the
// accounts file of a synthetic mesh with an account per module (one wildcard export per kind from
// the mesh's account, exact imports), against the same mesh in one account, and what a client
// takes to connect once it is loaded (connect-ms, the mean of 200 users connecting one after
// another). Nobody is connected during the reloads: they are the file's own cost (a reload with
// clients connected adds their password checks, BenchmarkReload). The CPU time of the load and of
// each reload is reported beside the wall time: on a shared machine it is the steadier figure.
//
// CI's one run takes 1,000 modules; MESHC_BENCH_FULL=1 adds 10,000:
//
//	MESHC_BENCH_FULL=1 go test ./benchmarks -run '^$' -bench IsolatedReload -benchtime 3x -timeout 30m
func BenchmarkIsolatedReload(b *testing.B) {
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range andFull([]int{1000}, 10000) {
		for _, isolation := range []string{catalogue.IsolationShared, catalogue.IsolationPerModule} {
			b.Run(fmt.Sprintf("modules=%d/%s", n, isolation), func(b *testing.B) {
				plan := isolatedPlan(b, n, isolation)
				// One hash for every user: minting thousands would time bcrypt, not the file.
				for i := range plan.Users {
					plan.Users[i].Hash = string(hash)
				}
				accounts, err := emit.Accounts(plan, emit.AccountsOptions{})
				if err != nil {
					b.Fatal(err)
				}
				state := b.TempDir()
				if err := os.WriteFile(filepath.Join(state, "accounts.conf"), accounts, 0o600); err != nil {
					b.Fatal(err)
				}
				conf, err := up.WriteServerConf(state, 0, "")
				if err != nil {
					b.Fatal(err)
				}
				start, startCPU := time.Now(), cpuTime()
				s, err := natsserver.FromConfig(context.Background(), conf, false, 5*time.Minute)
				if err != nil {
					b.Fatal(err)
				}
				defer func() { s.Shutdown(); s.WaitForShutdown() }()
				load, loadCPU := time.Since(start), cpuTime()-startCPU
				connect := connectEach(b, s.ClientURL(), plan, 200)
				b.ResetTimer()
				reloadCPU := cpuTime()
				for range b.N {
					if err := s.Reload(); err != nil {
						b.Fatal(err)
					}
				}
				reloadCPU = cpuTime() - reloadCPU
				b.ReportMetric(load.Seconds(), "load-s")
				b.ReportMetric(loadCPU.Seconds(), "load-cpu-s")
				b.ReportMetric(reloadCPU.Seconds()/float64(b.N), "reload-cpu-s")
				b.ReportMetric(float64(connect.Microseconds())/1000, "connect-ms")
				b.ReportMetric(float64(max(1, len(plan.Accounts))), "accounts")
			})
		}
	}
}

// connectEach connects as up to n users spread over the plan, one after another, each with the
// benchmark's one password and its own inbox prefix, and returns the mean time a connect took. The
// users are disconnected again, so a reload after it costs the file alone. Every user shares one
// hash at bcrypt's lowest cost, so what differs between the isolations is the account a client
// joins, not its password check.
func connectEach(b *testing.B, url string, plan *compiler.Plan, n int) time.Duration {
	b.Helper()
	step := max(1, len(plan.Users)/n)
	var total time.Duration
	var conns []*nats.Conn
	for i := 0; i < len(plan.Users); i += step {
		u := plan.Users[i]
		start := time.Now()
		nc, err := nats.Connect(url, nats.UserInfo(u.Name, "secret"), nats.CustomInboxPrefix(compiler.InboxPrefix(u.Name)))
		if err != nil {
			b.Fatalf("%s connecting: %v", u.Name, err)
		}
		total += time.Since(start)
		conns = append(conns, nc)
	}
	for _, nc := range conns {
		nc.Close()
	}
	return total / time.Duration(len(conns))
}

// isolatedPlan compiles a synthetic catalogue of n modules with the isolation given.
func isolatedPlan(b *testing.B, n int, isolation string) *compiler.Plan {
	b.Helper()
	c, _, err := catalogue.Load(writeCatalogue(b, n))
	if err != nil {
		b.Fatal(err)
	}
	c.Mesh.Isolation.Value = isolation
	p, _ := compiler.Compile(catalogue.NewIndex(c))
	b.Logf("%d users, %d accounts", len(p.Users), len(p.Accounts))
	return p
}
