package benchmarks

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/apply/wire"
	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/synth"
	"github.com/meshc-dev/meshc/lint"
	"github.com/meshc-dev/meshc/up"
)

// seed makes every benchmark measure the same catalogue on every run and machine.
const seed = 1

// fullSizesVar turns on the sizes CI leaves out: set to 1, the pipeline, memory and --against
// benchmarks also run at 100,000 modules (BENCHMARKS.md gives the command), the pathological
// shapes at 100,000 entries, and the reload, nkey, operator-claims and operator-change benchmarks
// at 10,000 and verify at 1,000 modules (andFull). CI runs every benchmark once to prove it still
// runs, and a 100,000-file catalogue alone takes tens of seconds to write and load.
const fullSizesVar = "MESHC_BENCH_FULL"

// catalogueSizes is the module counts the pipeline, memory and --against benchmarks run at:
// the goal's 10,000, and 100,000 when fullSizesVar is set.
func catalogueSizes(small ...int) []int {
	sizes := append(small, 10_000)
	if os.Getenv(fullSizesVar) == "1" {
		sizes = append(sizes, 100_000)
	}
	return sizes
}

// andFull is small, with full after it when fullSizesVar is set: the sizes that take minutes each
// (a 10,000-client reload, a 1,000-module proof) stay out of CI's one run of every benchmark.
func andFull(small []int, full ...int) []int {
	if os.Getenv(fullSizesVar) == "1" {
		return append(small, full...)
	}
	return small
}

// writeCatalogue writes a synthetic catalogue of n modules into a fresh directory.
func writeCatalogue(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	if err := synth.Write(dir, n, seed); err != nil {
		b.Fatal(err)
	}
	return dir
}

// reportCPU starts counting the CPU time the process spends, on every thread, and returns the
// function that reports it per iteration as cpu-ns/op. On a machine whose cores are shared with
// other work, a parallel program's wall time stretches with the load while the CPU time it
// spends hardly moves: the ratio of CPU times says what each side costs when the wall-time ratio
// is noise. Call the returned function right after the loop.
func reportCPU(b *testing.B) (report func()) {
	start := cpuTime()
	return func() {
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	}
}

// unexpected drops the one finding every synthetic catalogue has: it has no credentials.yaml
// (hashes are minted, not generated; render gives every user one), which lint says once.
func unexpected(fs catalogue.Findings) catalogue.Findings {
	return slices.DeleteFunc(fs, func(f catalogue.Finding) bool {
		return f.Rule == compiler.RuleCredentialMissing.ID && f.Pos.Line == 0
	})
}

// compiledPlan compiles a synthetic catalogue of n modules, refusing one with findings: a
// benchmark of the unhealthy path would measure the cost of reporting faults instead.
func compiledPlan(b *testing.B, n int) *compiler.Plan {
	b.Helper()
	c, loaded, err := catalogue.Load(writeCatalogue(b, n))
	if err != nil {
		b.Fatal(err)
	}
	if fs := unexpected(lint.Run(c, loaded)); len(fs) > 0 {
		b.Fatalf("the synthetic catalogue of %d modules has %d findings, first: %s", n, len(fs), fs[0])
	}
	p, _ := compiler.Compile(catalogue.NewIndex(c))
	return p
}

// bus is one in-process JetStream server with mesh-controller's connection, started the way
// `meshc up` starts one (package up): loopback, a random port, a store of its own, the accounts
// file as meshc composes it, and the controller connected with the grants the catalogue gives it.
// A benchmark measures the server's real work (file store included) as the user that really
// applies, and its floor makes the same calls on the same connection.
type bus struct {
	up    *up.Bus
	nc    *nats.Conn
	js    jetstream.JetStream
	store string
}

func startBus(b *testing.B) *bus {
	b.Helper()
	// Not b.TempDir: BenchmarkReapply keeps its bus beyond the benchmark that made it. stop
	// removes the store.
	store, err := os.MkdirTemp("", "meshc-bench-store-")
	if err != nil {
		b.Fatal(err)
	}
	// The controller alone, and no streams: the benchmarks apply, and minting a password for
	// each of 10,000 users would time bcrypt, not the bus. Its grants are the compiler's,
	// whatever the catalogue. The server keeps its defaults, limits included: nats-server allows
	// 1,000 consumers per stream unless the stream says otherwise, and the compiler gives EVENTS
	// room past that.
	compiled := compiledPlan(b, 6)
	plan := &compiler.Plan{Account: compiled.Account, Users: compiled.Users[:1]}
	running, _, err := up.Start(context.Background(), plan, up.Options{State: store})
	if err != nil {
		b.Fatal(err)
	}
	controller, err := wire.Connect(running.Controller())
	if err != nil {
		b.Fatal(err)
	}
	js, err := jetstream.New(controller.Conn, jetstream.WithDefaultTimeout(30*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	return &bus{up: running, nc: controller.Conn, js: js, store: store}
}

// stop shuts the server down and removes its store, so a benchmark of many iterations does not
// fill the disk with buses it no longer needs.
func (x *bus) stop() {
	x.nc.Close()
	x.up.Stop()
	os.RemoveAll(x.store)
}

// size names a plan's size as a sub-benchmark's key (one key=value, which benchstat reads as a
// configuration), and logs how it splits into streams and consumers.
func size(b *testing.B, p *compiler.Plan) string {
	b.Helper()
	b.Logf("plan: %d streams, %d consumers", len(p.Streams), len(p.Consumers))
	return fmt.Sprintf("objects=%d", len(p.Streams)+len(p.Consumers))
}
