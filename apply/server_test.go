package apply

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/internal/natsproc"
	"github.com/meshc-dev/meshc/internal/natsserver"
	"github.com/meshc-dev/meshc/internal/natstest"
	"github.com/meshc-dev/meshc/internal/testwait"
)

// runServer starts a real JetStream server in the test process: loopback, a random port, a
// store of its own. Claims about what the server fills in or refuses are only worth what the
// server says.
func runServer(t *testing.T) *server.Server {
	t.Helper()
	return natstest.JetStream(t)
}

// connect opens a client connection and a jetstream handle on it.
func connect(t *testing.T, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return natstest.Connect(t, url)
}

// cluster is an in-process JetStream cluster, 3 nodes unless said (docs/nats.md, "Testing against a real server").
type cluster struct {
	t       *testing.T
	opts    []*server.Options
	servers []*server.Server
	// base, when set, gives a node's options afresh at each start (a resolver is the server's,
	// and is closed with it), with the cluster's settings and edits on top.
	base  func(i int) *server.Options
	edits []func(*server.Options)
}

func runCluster(t *testing.T, edits ...func(*server.Options)) *cluster {
	t.Helper()
	return runClusterFrom(t, nil, edits...)
}

// runClusterFrom runs the cluster with each node's options starting from base(i): a node's
// configuration file read (operator mode's trust and resolver), with the cluster's own settings
// on top.
func runClusterFrom(t *testing.T, base func(i int) *server.Options, edits ...func(*server.Options)) *cluster {
	t.Helper()
	return runClusterOf(t, 3, base, edits...)
}

// runClusterOf is runClusterFrom with n nodes.
//
// A cluster's test waits out elections and stopped nodes, seconds each, so under -short (the
// inner loop) it is skipped here, for every caller; CI runs them. They take ports found free
// before the servers listen on them, so they are never made parallel: Go runs them before the
// package's parallel tests resume.
func runClusterOf(t *testing.T, n int, base func(i int) *server.Options, edits ...func(*server.Options)) *cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: a cluster of servers (CI runs it)")
	}
	ports := natsproc.FreePorts(t, 2*n)
	dir := t.TempDir()
	c := &cluster{t: t, base: base, edits: edits}
	for i := range n {
		var routes []string
		for j := range n {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[n+j]))
			}
		}
		o := &server.Options{}
		o.ServerName = fmt.Sprintf("n%d", i+1)
		o.Host, o.Port = "127.0.0.1", ports[i]
		o.JetStream, o.StoreDir = true, filepath.Join(dir, fmt.Sprintf("n%d", i+1))
		o.NoLog, o.NoSigs = true, true
		o.Tags = []string{fmt.Sprintf("node:n%d", i+1)}
		o.Cluster.Name = "C1"
		o.Cluster.Host = "127.0.0.1"
		o.Cluster.Port = ports[n+i]
		o.Routes = server.RoutesFromStr(strings.Join(routes, ","))
		for _, edit := range edits {
			edit(o)
		}
		c.opts = append(c.opts, o)
		c.servers = append(c.servers, nil)
	}
	for i := range n {
		c.start(i)
	}
	t.Cleanup(func() {
		for _, s := range c.servers {
			if s != nil {
				s.Shutdown()
				s.WaitForShutdown()
			}
		}
	})
	c.waitReady()
	return c
}

func (c *cluster) start(i int) {
	c.t.Helper()
	o := c.opts[i].Clone()
	if c.base != nil {
		own := o
		o = c.base(i)
		o.ServerName, o.Host, o.Port, o.JetStream, o.StoreDir = own.ServerName, own.Host, own.Port, own.JetStream, own.StoreDir
		o.NoLog, o.NoSigs, o.Tags, o.Cluster, o.Routes = own.NoLog, own.NoSigs, own.Tags, own.Cluster, own.Routes
		for _, edit := range c.edits {
			edit(o)
		}
	}
	s, err := natsserver.Start(context.Background(), o, 10*time.Second)
	if err != nil {
		c.t.Fatalf("node %d: %v", i+1, err)
	}
	c.servers[i] = s
}

func (c *cluster) stop(i int) {
	c.servers[i].Shutdown()
	c.servers[i].WaitForShutdown()
	c.servers[i] = nil
}

// waitReady waits for a meta leader and every running node current: API requests before the
// election get no reply at all.
func (c *cluster) waitReady() {
	c.t.Helper()
	testwait.For(c.t, "the cluster to elect a meta leader with every running node current", 15*time.Second, func() bool {
		leader, current := false, true
		for _, s := range c.servers {
			if s == nil || !s.JetStreamEnabled() {
				continue
			}
			leader = leader || s.JetStreamIsLeader()
			current = current && s.JetStreamIsCurrent()
		}
		return leader && current
	})
}

func (c *cluster) urls() string {
	var urls []string
	for _, o := range c.opts {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", o.Port))
	}
	return strings.Join(urls, ",")
}

// countingConn counts the requests a read makes, to hold the reader to paging.
type countingConn struct {
	*nats.Conn
	n atomic.Int64
}

func (c *countingConn) RequestWithContext(ctx context.Context, subj string, data []byte) (*nats.Msg, error) {
	c.n.Add(1)
	return c.Conn.RequestWithContext(ctx, subj, data)
}
