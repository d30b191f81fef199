package benchmarks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/bcrypt"

	"github.com/meshc-dev/meshc/internal/natsserver"
)

// BenchmarkReload measures what one configuration reload costs a server with many clients
// connected. nats-server re-checks the password of every connected client on every reload, even
// of an identical file (docs/nats.md, "Reload and its cost"), so the cost grows with the clients
// and with the bcrypt cost: this is why meshc mints at cost 6 and never rewrites an unchanged
// accounts file. The floor is a server whose clients authenticated with plain passwords: a reload's
// cost without bcrypt.
//
//	go test ./benchmarks -run '^$' -bench Reload -benchtime 5x
func BenchmarkReload(b *testing.B) {
	for _, clients := range []int{50, 200} {
		for _, c := range []struct {
			name string
			cost int // 0: a plaintext password, the floor
		}{{"floor-plaintext", 0}, {"meshc-cost6", 6}, {"cost10", 10}} {
			if c.cost == 10 && clients > 50 {
				continue // ~57 ms per client: 200 of them is a benchmark of patience
			}
			b.Run(fmt.Sprintf("clients=%d/%s", clients, c.name), func(b *testing.B) {
				s, url := reloadServer(b, clients, c.cost)
				defer func() { s.Shutdown(); s.WaitForShutdown() }()
				conns := make([]*nats.Conn, clients)
				for i := range conns {
					nc, err := nats.Connect(url, nats.UserInfo(fmt.Sprintf("u%d", i), "secret"), nats.Timeout(30*time.Second))
					if err != nil {
						b.Fatal(err)
					}
					defer nc.Close()
					conns[i] = nc
				}
				b.ResetTimer()
				for range b.N {
					if err := s.Reload(); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				for _, nc := range conns {
					if !nc.IsConnected() {
						b.Fatal("a client was dropped by a reload of an identical file")
					}
				}
			})
		}
	}
}

// reloadServer starts a server from a config file (a reload re-reads the file) with n users.
func reloadServer(b *testing.B, n, cost int) (*server.Server, string) {
	b.Helper()
	dir := b.TempDir()
	password := `"secret"`
	if cost > 0 {
		h, err := bcrypt.GenerateFromPassword([]byte("secret"), cost)
		if err != nil {
			b.Fatal(err)
		}
		password = `"` + string(h) + `"`
	}
	conf := "host: 127.0.0.1\nport: -1\nauthorization { users = [\n"
	for i := range n {
		conf += fmt.Sprintf("  {user: \"u%d\", password: %s}\n", i, password)
	}
	conf += "]}\n"
	path := filepath.Join(dir, "server.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		b.Fatal(err)
	}
	s, err := natsserver.FromConfig(context.Background(), path, false, 10*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	return s, s.ClientURL()
}
