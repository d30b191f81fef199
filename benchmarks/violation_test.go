package benchmarks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/logger"

	"github.com/meshc-dev/meshc/compiler"
)

// BenchmarkViolationLog measures what a flood of permission violations costs the server's log at
// its default logging (errors and notices, each line with its time and the server's pid, to a
// file): 20,000 cross-consumer acks from one connection, each refused since every ack grant
// names its consumer by the ack's exact length (docs/nats.md, "Limits and floods"). The floor
// publishes as many messages on a subject the user may publish, which the server does not log.
//
//	go test ./benchmarks -run '^$' -bench ViolationLog -benchtime 5x
func BenchmarkViolationLog(b *testing.B) {
	const n = 20_000
	for _, c := range []struct{ name, subject string }{
		// mesh-controller may tell any machine what to run.
		{"floor-granted", "mesh.node.anchor.declare"},
		// Its own consumer's ack in the newer form, aimed at another consumer: nine tokens, which
		// CONTROL/reports' eleven-or-more-token grant does not admit.
		{"meshc-refused", "$JS.ACK.EVENTS.anchor_catalog.CONTROL.reports.1.1.1"},
		// The longest subject a publish may carry under the servers' max_control_line, refused:
		// each refusal logs the whole subject. A longer one closes the connection instead.
		{"longest-refused", "mesh.mod.catalog.event." + strings.Repeat("x", compiler.MaxControlLine-40)},
	} {
		b.Run(c.name, func(b *testing.B) {
			x := startBus(b)
			defer x.stop()
			log := filepath.Join(b.TempDir(), "server.log")
			x.up.Server.SetLoggerV2(logger.NewFileLogger(log, true, false, false, true), false, false, false)
			var logged int64
			for b.Loop() {
				before := fileSize(b, log)
				for range n {
					if err := x.nc.Publish(c.subject, nil); err != nil {
						b.Fatal(err)
					}
				}
				// The server logs a violation as it reads the publish, before the PONG that ends
				// the flush: the log is complete when it returns.
				if err := x.nc.Flush(); err != nil {
					b.Fatal(err)
				}
				logged += fileSize(b, log) - before
			}
			b.ReportMetric(float64(logged)/float64(b.N)/n, "log-B/publish")
			if c.name != "floor-granted" && logged == 0 {
				b.Fatal("the refused acks logged nothing: were they refused?")
			}
		})
	}
}

func fileSize(b *testing.B, path string) int64 {
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}
