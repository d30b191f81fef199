// Package natsproc runs nats-server as processes of their own for tests that need what only a
// process has: a SIGKILL, a SIGSTOP, a restart on the same store and ports. The process is the
// test binary itself, started again as nats-server (a test's TestMain calls RunIfServer first),
// so a test needs nothing installed and runs the server of go.mod.
package natsproc

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// asServer, in a process's environment, makes RunIfServer run nats-server.
const asServer = "MESHC_TEST_PROCESS_IS_NATS_SERVER"

// RunIfServer runs nats-server, and never returns, when this process was started as one by
// Start; otherwise it returns at once. Call it first in TestMain.
func RunIfServer() {
	if os.Getenv(asServer) != "1" {
		return
	}
	Main(os.Args[1:])
	os.Exit(0)
}

// Main is nats-server's own main with the given arguments.
func Main(args []string) {
	fs := flag.NewFlagSet("nats-server", flag.ExitOnError)
	opts, err := server.ConfigureOptions(fs, args, server.PrintServerAndExit, fs.Usage, server.PrintTLSHelpAndDie)
	if err != nil {
		server.PrintAndDie(fmt.Sprintf("nats-server: %s", err))
	}
	s, err := server.NewServer(opts)
	if err != nil {
		server.PrintAndDie(fmt.Sprintf("nats-server: %s", err))
	}
	s.ConfigureLogger()
	if err := server.Run(s); err != nil {
		server.PrintAndDie(err.Error())
	}
	s.WaitForShutdown()
}

// Server is one nats-server process: its configuration, store and log in Dir, its ports fixed
// for its life so a restart comes back where it was.
type Server struct {
	Name string
	// Dir holds the configuration (server.conf), the store and the log (server.log).
	Dir        string
	ClientPort int
	// Extra is written into the configuration after what Start writes: accounts, limits.
	Extra string

	t       testing.TB
	cluster []int // the cluster port of every node, this one's first; nil when alone
	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	stopped bool
}

// URL is where clients connect.
func (s *Server) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", s.ClientPort) }

// Conf is the path of the server's configuration file.
func (s *Server) Conf() string { return filepath.Join(s.Dir, "server.conf") }

// Log is the path of the server's log (its standard error).
func (s *Server) Log() string { return filepath.Join(s.Dir, "server.log") }

// PID is the running process's id, 0 when none runs.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Cluster is nats-server processes routed to each other, JetStream on each.
type Cluster struct {
	Servers []*Server
}

// URLs is every node's client URL, comma-separated.
func (c *Cluster) URLs() string {
	var urls []string
	for _, s := range c.Servers {
		urls = append(urls, s.URL())
	}
	return strings.Join(urls, ",")
}

// Alone starts one JetStream server process.
func Alone(t testing.TB, extra string) *Server {
	t.Helper()
	ports := FreePorts(t, 1)
	s := &Server{Name: "n1", Dir: t.TempDir(), ClientPort: ports[0], Extra: extra, t: t}
	t.Cleanup(s.Terminate)
	s.Start()
	return s
}

// StartCluster starts n JetStream server processes in one cluster, and waits until JetStream
// answers on every one of them, connecting with opts. files are written into each server's Dir
// first (an accounts file its configuration includes: an include's path is relative to the
// including file).
func StartCluster(t testing.TB, n int, extra string, files map[string][]byte, opts ...nats.Option) *Cluster {
	t.Helper()
	ports := FreePorts(t, 2*n)
	c := &Cluster{}
	root := t.TempDir()
	for i := range n {
		clusterPorts := []int{ports[n+i]}
		for j := range n {
			if j != i {
				clusterPorts = append(clusterPorts, ports[n+j])
			}
		}
		s := &Server{Name: fmt.Sprintf("n%d", i+1), Dir: filepath.Join(root, fmt.Sprintf("n%d", i+1)),
			ClientPort: ports[i], Extra: extra, t: t, cluster: clusterPorts}
		if err := os.MkdirAll(s.Dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for name, data := range files {
			s.WriteFile(name, data)
		}
		c.Servers = append(c.Servers, s)
		t.Cleanup(s.Terminate)
	}
	for _, s := range c.Servers {
		s.Start()
	}
	for _, s := range c.Servers {
		s.WaitJetStream(60*time.Second, opts...)
	}
	return c
}

// WriteFile writes a file into the server's Dir (atomically: a reload must never read half).
func (s *Server) WriteFile(name string, data []byte) {
	s.t.Helper()
	tmp := filepath.Join(s.Dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		s.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(s.Dir, name)); err != nil {
		s.t.Fatal(err)
	}
}

// FreePorts reserves n loopback ports and releases them for servers to take.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

func (s *Server) writeConf() {
	var b strings.Builder
	fmt.Fprintf(&b, "server_name: %s\nhost: 127.0.0.1\nport: %d\n", s.Name, s.ClientPort)
	fmt.Fprintf(&b, "jetstream { store_dir: %q }\n", filepath.Join(s.Dir, "store"))
	if len(s.cluster) > 0 {
		var routes []string
		for _, p := range s.cluster[1:] {
			routes = append(routes, fmt.Sprintf("%q", fmt.Sprintf("nats://127.0.0.1:%d", p)))
		}
		fmt.Fprintf(&b, "cluster { name: C1, listen: \"127.0.0.1:%d\", routes: [%s] }\n", s.cluster[0], strings.Join(routes, ", "))
	}
	b.WriteString(s.Extra)
	b.WriteString("\n")
	if err := os.WriteFile(s.Conf(), []byte(b.String()), 0o600); err != nil {
		s.t.Fatal(err)
	}
}

// Start starts the process (again, after Kill or Stop) and waits until it takes connections.
func (s *Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	if s.cmd != nil {
		s.mu.Unlock()
		s.t.Fatalf("%s is already running", s.Name)
	}
	s.writeConf()
	log, err := os.OpenFile(s.Log(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		s.mu.Unlock()
		s.t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-c", s.Conf())
	cmd.Env = append(os.Environ(), asServer+"=1")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		s.mu.Unlock()
		s.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); log.Close(); close(exited) }()
	s.cmd, s.exited, s.stopped = cmd, exited, false
	s.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.ClientPort), time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-exited:
			data, _ := os.ReadFile(s.Log())
			s.t.Fatalf("%s exited as it started:\n%s", s.Name, tail(string(data), 2000))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s did not take connections in 30s", s.Name)
		}
	}
}

// Kill ends the process with SIGKILL, as a crash or the OOM killer would, and waits for it.
func (s *Server) Kill() { s.signalAndWait(syscall.SIGKILL) }

// Terminate ends the process with SIGTERM (a clean shutdown) and waits for it.
func (s *Server) Terminate() { s.signalAndWait(syscall.SIGTERM) }

func (s *Server) signalAndWait(sig syscall.Signal) {
	s.mu.Lock()
	cmd, exited, stopped := s.cmd, s.exited, s.stopped
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(sig)
	if stopped {
		cmd.Process.Signal(syscall.SIGCONT)
	}
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-exited
	}
}

// Pause stops the process with SIGSTOP: it holds its connections and answers nothing, as a
// machine swapping or a VM frozen does. Resume continues it.
func (s *Server) Pause() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil && !s.stopped {
		s.cmd.Process.Signal(syscall.SIGSTOP)
		s.stopped = true
	}
}

// Resume continues a paused process.
func (s *Server) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil && s.stopped {
		s.cmd.Process.Signal(syscall.SIGCONT)
		s.stopped = false
	}
}

// Running reports whether a process runs (paused or not).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// Paused reports whether the process is stopped by Pause.
func (s *Server) Paused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil && s.stopped
}

// Reload signals the process to reload its configuration (SIGHUP).
func (s *Server) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return fmt.Errorf("%s is not running", s.Name)
	}
	return s.cmd.Process.Signal(syscall.SIGHUP)
}

// WaitJetStream waits until the server's JetStream answers an account's info request with
// no error (in a cluster: a meta leader is elected and this node reaches it), connecting with
// opts.
func (s *Server) WaitJetStream(within time.Duration, opts ...nats.Option) {
	s.t.Helper()
	if err := s.JetStreamAnswers(within, opts...); err != nil {
		data, _ := os.ReadFile(s.Log())
		s.t.Fatalf("%s: %v\n%s", s.Name, err, tail(string(data), 3000))
	}
}

// JetStreamAnswers is WaitJetStream returning the last failure rather than failing the test.
func (s *Server) JetStreamAnswers(within time.Duration, opts ...nats.Option) error {
	deadline := time.Now().Add(within)
	var last error
	for time.Now().Before(deadline) {
		last = jetStreamAnswers(s.URL(), opts...)
		if last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("JetStream did not answer in %s: %v", within, last)
}

func jetStreamAnswers(url string, opts ...nats.Option) error {
	nc, err := nats.Connect(url, append([]nats.Option{nats.Timeout(time.Second), nats.NoReconnect()}, opts...)...)
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	msg, err := nc.RequestWithContext(ctx, "$JS.API.INFO", nil)
	if err != nil {
		return err
	}
	if strings.Contains(string(msg.Data), `"error"`) {
		return fmt.Errorf("%s", msg.Data)
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
