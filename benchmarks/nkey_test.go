package benchmarks

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"golang.org/x/crypto/bcrypt"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/internal/testwait"
)

// BenchmarkNKeyVersusBcrypt measures, with n clients connected, what connecting and reloading
// cost when users authenticate by nkey (auth: nkey) and by a password hashed at meshc's bcrypt
// cost 6 (auth: password). nats-server re-checks every connected client on every reload, and
// new connections wait meanwhile (docs/nats.md, "Reload and its cost"): the reload is what one
// changed manifest costs.
//
// The server runs as its own process (built from the module this repository pins) so that 10,000
// clients and 10,000 server-side connections do not share one process's file descriptors. Each
// iteration is one reload, timed from SIGHUP to the server's /varz reporting the new load; a
// client connecting again and again while the reload runs measures the longest a newcomer waits.
//
// CI's one run takes 1,000 clients; MESHC_BENCH_FULL=1 adds 10,000:
//
//	MESHC_BENCH_FULL=1 go test ./benchmarks -run '^$' -bench NKeyVersusBcrypt -benchtime 3x -timeout 60m
func BenchmarkNKeyVersusBcrypt(b *testing.B) {
	bin := natsServerBinary(b)
	for _, clients := range andFull([]int{1000}, 10000) {
		for _, auth := range []string{catalogue.AuthNKey, "bcrypt-cost6"} {
			b.Run(fmt.Sprintf("clients=%d/%s", clients, auth), func(b *testing.B) {
				benchAuth(b, bin, clients, auth == catalogue.AuthNKey)
			})
		}
	}
}

var (
	serverBinOnce sync.Once
	serverBin     string
	serverBinErr  error
)

// natsServerBinary builds nats-server from the pinned module, once per run.
func natsServerBinary(b *testing.B) string {
	serverBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "meshc-bench-nats-server-")
		if err != nil {
			serverBinErr = err
			return
		}
		serverBin = filepath.Join(dir, "nats-server")
		out, err := exec.Command("go", "build", "-o", serverBin, "github.com/nats-io/nats-server/v2").CombinedOutput()
		if err != nil {
			serverBinErr = fmt.Errorf("building nats-server: %v\n%s", err, out)
		}
	})
	if serverBinErr != nil {
		b.Fatal(serverBinErr)
	}
	return serverBin
}

func freePort(b *testing.B) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func benchAuth(b *testing.B, bin string, n int, useNKeys bool) {
	dir := b.TempDir()
	port, monitor := freePort(b), freePort(b)
	// One hash for every user: what the server pays per check is the same, and minting 10,000
	// hashes would time bcrypt on this side.
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), catalogue.MintCost)
	if err != nil {
		b.Fatal(err)
	}
	var conf strings.Builder
	fmt.Fprintf(&conf, "host: 127.0.0.1\nport: %d\nhttp: \"127.0.0.1:%d\"\nauthorization { users = [\n", port, monitor)
	keys := make([]nkeys.KeyPair, n)
	for i := range n {
		if useNKeys {
			if keys[i], err = nkeys.CreateUser(); err != nil {
				b.Fatal(err)
			}
			public, _ := keys[i].PublicKey()
			fmt.Fprintf(&conf, "  {nkey: %q}\n", public)
		} else {
			fmt.Fprintf(&conf, "  {user: \"u%d\", password: %q}\n", i, hash)
		}
	}
	conf.WriteString("]}\n")
	path := filepath.Join(dir, "server.conf")
	if err := os.WriteFile(path, []byte(conf.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", path)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	varz := fmt.Sprintf("http://127.0.0.1:%d/varz", monitor)
	testwait.ForNil(b, "nats-server to start", 30*time.Second, func() error {
		_, err := loadedAt(varz)
		return err
	})

	connect := func(i int) (*nats.Conn, error) {
		opts := []nats.Option{nats.Timeout(5 * time.Minute), nats.NoReconnect()}
		if useNKeys {
			public, _ := keys[i].PublicKey()
			opts = append(opts, nats.Nkey(public, keys[i].Sign))
		} else {
			opts = append(opts, nats.UserInfo(fmt.Sprintf("u%d", i), "secret"))
		}
		return nats.Connect(url, opts...)
	}
	conns := make([]*nats.Conn, n)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	work := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				nc, err := connect(i)
				if err != nil {
					errs <- err
					continue
				}
				conns[i] = nc
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	connectAll := time.Since(start)
	close(errs)
	failed := 0
	for range errs {
		failed++
	}
	defer func() {
		for _, nc := range conns {
			if nc != nil {
				nc.Close()
			}
		}
	}()

	var waited time.Duration
	b.ResetTimer()
	for range b.N {
		before, err := loadedAt(varz)
		if err != nil {
			b.Fatal(err)
		}
		signalled := time.Now()
		if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
			b.Fatal(err)
		}
		// Newcomers connect one after another for as long as the reload runs: the longest
		// wait is what a module starting during the reload sees.
		done := make(chan struct{})
		longest := make(chan time.Duration, 1)
		go func() {
			var most time.Duration
			for {
				select {
				case <-done:
					longest <- most
					return
				default:
				}
				t := time.Now()
				if nc, err := connect(0); err == nil {
					nc.Close()
				}
				most = max(most, time.Since(t))
				// A newcomer every 20 ms, the pace of modules starting: a wait on time itself is
				// the load this measures under, not a stand-in for a condition.
				time.Sleep(20 * time.Millisecond)
			}
		}()
		// Asked every 10 ms, not through testwait (whose asks grow to 100 ms apart): the interval
		// is this measurement's resolution, and a reload here takes from under a second to ~50 s.
		for {
			at, err := loadedAt(varz)
			if err == nil && at.After(before) {
				break
			}
			if time.Since(signalled) > 10*time.Minute {
				b.Fatal("the reload did not finish in 10 minutes")
			}
			time.Sleep(10 * time.Millisecond)
		}
		close(done)
		waited = max(waited, <-longest)
	}
	b.StopTimer()
	b.ReportMetric(connectAll.Seconds(), "connect-all-s")
	b.ReportMetric(float64(n)/connectAll.Seconds(), "connects/s")
	b.ReportMetric(float64(failed), "failed-connects")
	b.ReportMetric(waited.Seconds(), "newcomer-max-wait-s")
	dropped := 0
	for _, nc := range conns {
		if nc != nil && !nc.IsConnected() {
			dropped++
		}
	}
	b.ReportMetric(float64(dropped), "dropped")
}

// loadedAt reads when the server last loaded its configuration.
func loadedAt(varz string) (time.Time, error) {
	resp, err := http.Get(varz)
	if err != nil {
		return time.Time{}, err
	}
	defer resp.Body.Close()
	var v struct {
		ConfigLoadTime time.Time `json:"config_load_time"`
	}
	err = json.NewDecoder(resp.Body).Decode(&v)
	return v.ConfigLoadTime, err
}
