package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/internal/natstest"
)

// A server older than 2.10 takes a consumer's filter_subjects and a stream's metadata and
// ignores them without a word (Debian bookworm ships 2.9.10): every multi-filter consumer then
// delivers every event of its stream to its module. plan and apply refuse such a server as they
// connect, naming its version, before any request is made.
func TestAnOlderServerIsRefusedBeforeAnyWrite(t *testing.T) {
	t.Run("nats-server 2.9.25 built from its module", func(t *testing.T) {
		binary := buildServerRelease(t, "v2.9.25")
		store := t.TempDir()
		conf := filepath.Join(t.TempDir(), "server.conf")
		text := fmt.Sprintf("host: 127.0.0.1\nport: -1\nhttp: \"127.0.0.1:-1\"\njetstream { store_dir: %q }\n", store)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		p := startServerBinary(t, binary, conf, "")
		isolateNATSSettings(t)
		dir := cataloguetest.Extract(t, "testdata/reload.txtar")
		for _, cmd := range []string{"apply", "plan"} {
			code, _, errs := meshc(t, cmd, dir, "--server", p.url)
			if code != exitCantRun || !strings.Contains(errs, "runs nats-server 2.9.25, and meshc needs 2.10.0 or later") {
				t.Fatalf("meshc %s on nats-server 2.9.25: exit %d\n%s", cmd, code, errs)
			}
		}
		// Nothing was made: no stream, not even the lock's bucket.
		_, js := natstest.Connect(t, p.url)
		var names []string
		for name := range js.StreamNames(t.Context()).Name() {
			names = append(names, name)
		}
		if len(names) != 0 {
			t.Fatalf("the refused apply made streams on the old server: %v", names)
		}
		if _, err := js.KeyValue(t.Context(), "meshc"); err != jetstream.ErrBucketNotFound {
			t.Fatalf("the lock's bucket on the old server: %v", err)
		}
	})
	t.Run("a stand-in answering as nats-server 2.9.10 does", func(t *testing.T) {
		s := startStandIn(t, "2.9.10")
		isolateNATSSettings(t)
		dir := cataloguetest.Extract(t, "testdata/reload.txtar")
		code, _, errs := meshc(t, "apply", dir, "--server", s.url)
		if code != exitCantRun || !strings.Contains(errs, "runs nats-server 2.9.10, and meshc needs 2.10.0 or later") {
			t.Fatalf("meshc apply on a 2.9.10 server: exit %d\n%s", code, errs)
		}
		if pubs := s.published(); len(pubs) != 0 {
			t.Fatalf("meshc published to a server it refused: %v", pubs)
		}
	})
}

// buildServerRelease builds a nats-server release from its module through the Go module proxy
// into a directory of the test's own, and returns the binary. It takes about a minute the first
// time and seconds after (the build cache); a machine that cannot reach the proxy skips, and the
// stand-in above still runs.
func buildServerRelease(t *testing.T, version string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds nats-server " + version + " from its module: not with -short")
	}
	gobin := t.TempDir()
	cmd := exec.Command("go", "install", "github.com/nats-io/nats-server/v2@"+version)
	cmd.Dir = gobin
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("cannot build nats-server %s from its module here (%v):\n%s", version, err, out)
	}
	return filepath.Join(gobin, "nats-server")
}

// standIn answers a client's connect as a nats-server of the given version does, and records
// every message published to it; it answers no request.
type standIn struct {
	url  string
	mu   sync.Mutex
	pubs []string
}

func (s *standIn) published() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.pubs...)
}

func startStandIn(t *testing.T, version string) *standIn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	s := &standIn{url: fmt.Sprintf("nats://127.0.0.1:%d", port)}
	info := fmt.Sprintf(`INFO {"server_id":"NSTANDIN","server_name":"stand-in","version":%q,"proto":1,"go":"go1.19.8","host":"127.0.0.1","port":%d,"headers":true,"max_payload":1048576,"jetstream":true}`+"\r\n", version, port)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(conn, info)
		}
	}()
	return s
}

func (s *standIn) serve(conn net.Conn, info string) {
	defer conn.Close()
	if _, err := io.WriteString(conn, info); err != nil {
		return
	}
	r := bufio.NewReader(conn)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		switch op := strings.ToUpper(fields[0]); op {
		case "PING":
			io.WriteString(conn, "PONG\r\n")
		case "PUB", "HPUB":
			s.mu.Lock()
			s.pubs = append(s.pubs, fields[1])
			s.mu.Unlock()
			size, _ := strconv.Atoi(fields[len(fields)-1])
			if _, err := io.CopyN(io.Discard, r, int64(size)+2); err != nil {
				return
			}
		}
	}
}
