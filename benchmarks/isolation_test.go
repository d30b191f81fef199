package benchmarks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/internal/natsserver"
	"github.com/meshc-dev/meshc/up"
)

// BenchmarkIsolatedReload measures what the server takes to load, and then to reload, the
// accounts file of a synthetic mesh with an account per principal (one wildcard export per kind
// from the mesh's account, exact imports), against the same mesh in one account. Nobody is
// connected: this is the file's own cost (a reload with clients connected adds their password
// checks, BenchmarkReload).
//
//	go test ./benchmarks -run '^$' -bench IsolatedReload -benchtime 3x -timeout 30m
func BenchmarkIsolatedReload(b *testing.B) {
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1000, 10000} {
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
				start := time.Now()
				s, err := natsserver.FromConfig(context.Background(), conf, false, 5*time.Minute)
				if err != nil {
					b.Fatal(err)
				}
				defer func() { s.Shutdown(); s.WaitForShutdown() }()
				load := time.Since(start)
				b.ResetTimer()
				cpu := cpuTime()
				for range b.N {
					if err := s.Reload(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric((cpuTime()-cpu).Seconds()/float64(b.N), "reload-cpu-s/op")
				b.ReportMetric(load.Seconds(), "load-s")
				b.ReportMetric(float64(max(1, len(plan.Accounts))), "accounts")
			})
		}
	}
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
