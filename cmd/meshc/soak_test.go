package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/apply/wire"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/natsproc"
	"github.com/meshc-dev/meshc/internal/testwait"
)

var (
	soakFor  = flag.Duration("soak", 0, "run TestSoak, the seeded fault soak, for this long (0 skips it)")
	soakSeed = flag.Uint64("soak.seed", 1, "TestSoak's seed: the same seed evolves the catalogue and picks the faults the same way")
)

// TestSoak applies random evolutions of a catalogue (modules added, removed and moved, events
// consumed and dropped, EVENTS' limits and storage, seats declared, renamed and re-scoped, a
// consumer made legacy so the plan must replace it) to a three-node cluster of nats-server
// processes, while every module instance publishes numbered events and every consumer fetches
// and acknowledges as its own user; nodes are SIGKILLed and SIGSTOPped and `meshc apply` itself
// killed at random moments. After every apply that exits 0: `meshc plan` has nothing to do, and
// no stored message disappeared unless a flag of an apply since allowed it; throughout: no
// message a consumer acknowledged (the server confirming it) is delivered to it again; after an
// exit 1 that says "nothing was changed": nothing was.
//
//	go test ./cmd/meshc -run TestSoak -soak 2m -soak.seed 7
//
// docs/commands.md ("The seeded soak") says how to run a long one and what the last long run covered.
func TestSoak(t *testing.T) {
	if *soakFor <= 0 {
		t.Skip("the fault soak runs with -soak DURATION (and -soak.seed N)")
	}
	isolateNATSSettings(t)
	s := &soak{t: t, r: rand.New(rand.NewPCG(*soakSeed, 0x5eed)), dir: t.TempDir(), pw: map[string]string{},
		workers: map[string]*soakWorker{}, acked: map[string]map[string]time.Time{}, published: map[string]int{},
		uncertain: map[string]int{}, baseline: map[string]uint64{}, history: map[string][]string{}}
	t.Logf("soak: seed %d for %s", *soakSeed, *soakFor)
	s.cat = newSoakCatalogue(s.r)
	s.cat.write(t, s.dir)
	accounts := s.compose()
	s.cluster = natsproc.StartCluster(t, 3, `include "accounts.conf"`, map[string][]byte{"accounts.conf": accounts}, s.controller()...)
	defer s.stopWorkers()
	if code, out := s.apply(nil, false); code != exitOK {
		t.Fatalf("the first apply: %d\n%s", code, out)
	}
	s.syncWorkers()
	s.checkpoint(false)

	start := time.Now()
	for time.Since(start) < *soakFor && !t.Failed() {
		s.step()
	}
	s.stopWorkers()
	s.mu.Lock()
	defer s.mu.Unlock()
	acked := 0
	for _, ids := range s.acked {
		acked += len(ids)
	}
	st := s.stats
	t.Logf("soak: seed %d, %s: %d evolutions (%d consumers made legacy), %d applies (exit 0: %d, 1: %d, of them \"nothing was changed\": %d, 2: %d, 3: %d, killed: %d), %d consumer replaces, %d nodes SIGKILLed, %d SIGSTOPped, %d applies killed (%d locks broken after, the rest expired), %d messages published, %d acknowledged; %d violations",
		*soakSeed, time.Since(start).Round(time.Second), st.evolutions, st.legacy, st.applies, st.exits[0], st.exits[1], st.nothingChanged, st.exits[2], st.exits[3], st.killedApplies,
		st.replaces, st.nodeKills, st.nodeStops, st.killedApplies, st.locksBroken, st.published, acked, len(s.violations))
	for _, v := range s.violations {
		t.Error(v)
	}
}

type soak struct {
	t       *testing.T
	r       *rand.Rand
	dir     string
	cat     *soakCatalogue
	cluster *natsproc.Cluster
	pw      map[string]string

	// world is held for reading by every publish and fetch, and for writing while the soak
	// checks the bus or makes a consumer legacy: the module instances are still then.
	world sync.RWMutex

	mu      sync.Mutex
	workers map[string]*soakWorker
	// acked is, per consumer, each message it acknowledged with the server's confirmation, and
	// when.
	acked map[string]map[string]time.Time
	// published and uncertain count, per subject since the baseline, the publishes the server
	// confirmed and those whose answer was lost (stored or not); baseline is what the subject
	// held then.
	published, uncertain map[string]int
	baseline             map[string]uint64
	// dropsAllowed: an apply since the baseline ran with a flag that lets stored messages go.
	dropsAllowed bool
	// lastFault is when a node was last killed or stopped, lastApply what the last apply that
	// exited 0 said: to say beside a violation.
	lastFault time.Time
	lastApply string
	// history is, per consumer, what was done to it (made legacy by the soak; each line an
	// apply's plan had for it) and when: said beside a violation of its.
	history    map[string][]string
	violations []string
	stats      soakStats
	faults     sync.WaitGroup
}

type soakStats struct {
	evolutions, legacy, applies, nothingChanged, replaces       int
	nodeKills, nodeStops, killedApplies, locksBroken, published int
	exits                                                       [4]int
}

func (s *soak) violation(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.violations = append(s.violations, fmt.Sprintf("seed %d: ", *soakSeed)+fmt.Sprintf(format, args...))
}

func (s *soak) controller() []nats.Option {
	return []nats.Option{nats.UserInfo(compiler.ControllerUser, s.pw[compiler.ControllerUser]),
		nats.CustomInboxPrefix(compiler.InboxPrefix(compiler.ControllerUser))}
}

func (s *soak) as() []string {
	return []string{"--server", s.cluster.URLs(), "--user", compiler.ControllerUser, "--password", s.pw[compiler.ControllerUser]}
}

// compose lints the catalogue, mints whoever has no password yet, and returns the accounts file
// meshc emits.
func (s *soak) compose() []byte {
	s.t.Helper()
	if code, out, errs := meshc(s.t, "lint", s.dir); code != exitOK {
		s.t.Fatalf("the soak wrote a catalogue that does not lint (a fault of the soak's):\n%s%s", out, errs)
	}
	for u, p := range mint(s.t, s.dir, "--missing") {
		if u != "" {
			s.pw[u] = p
		}
	}
	if code, _, errs := meshc(s.t, "emit", s.dir); code != exitOK {
		s.t.Fatalf("emit: %s", errs)
	}
	data, err := os.ReadFile(filepath.Join(s.dir, "golden", "accounts.conf"))
	if err != nil {
		s.t.Fatal(err)
	}
	return data
}

// step is one evolution, delivered and applied under faults, and checked.
func (s *soak) step() {
	t := s.t
	var did string
	for did == "" {
		e := soakEvolutions[s.r.IntN(len(soakEvolutions))]
		did = e.do(s.cat, s.r)
	}
	s.stats.evolutions++
	s.cat.write(t, s.dir)
	accounts := s.compose()
	for _, srv := range s.cluster.Servers {
		srv.WriteFile("accounts.conf", accounts)
		if srv.Running() {
			srv.Reload()
		}
	}
	s.syncWorkers()
	if s.r.IntN(5) == 0 {
		if legacy := s.makeLegacy(); legacy != "" {
			did += "; " + legacy
		}
	}
	flags := s.flags()
	t.Logf("soak: %s; apply %s", did, strings.Join(flags, " "))

	before := s.snapshot()
	code, out := s.apply(flags, true)
	for attempt := 0; code != exitOK && code != exitFailed && attempt < 3; attempt++ {
		s.heal()
		before = s.snapshot()
		code, out = s.apply(flags, false)
	}
	switch code {
	case exitOK:
		s.lastApply = out
		s.checkpoint(slices.ContainsFunc(flags, func(f string) bool { return f == "--prune" }))
	case exitFailed:
		if strings.Contains(out, "nothing was changed") {
			s.stats.nothingChanged++
			s.heal()
			if after := s.snapshot(); before != "" && after != "" && after != before {
				s.violation("apply exited 1 saying nothing was changed, and the bus changed:\n%s\nbefore: %s\nafter:  %s", out, before, after)
			}
		}
	default:
		t.Logf("soak: apply still exits %d after reruns:\n%s", code, out)
	}
}

// flags picks what this apply may do.
func (s *soak) flags() []string {
	flags := []string{"--lock-timeout", "3m"}
	replace, prune := s.r.IntN(10) < 7, s.r.IntN(2) == 0
	if replace {
		flags = append(flags, "--allow-replace")
	}
	if prune {
		flags = append(flags, "--prune")
	}
	if s.r.IntN(2) == 0 {
		flags = append(flags, "--allow-discard")
	}
	if (replace || prune) && s.r.IntN(3) == 0 {
		flags = append(flags, "--purge-non-empty")
	}
	return flags
}

// apply runs `meshc apply` as a process of its own, and, when faulted, kills it, a node, or
// stops a node at a random moment. It returns the exit status (-1 killed) and what it said.
func (s *soak) apply(flags []string, faulted bool) (int, string) {
	t := s.t
	s.stats.applies++
	if slices.Contains(flags, "--allow-discard") || slices.Contains(flags, "--purge-non-empty") {
		s.mu.Lock()
		s.dropsAllowed = true
		s.mu.Unlock()
	}
	cmd := exec.Command("meshc", append(append([]string{"apply", s.dir}, s.as()...), flags...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	killApply := false
	if faulted {
		// An apply here takes 0.1–0.4 s when nothing stops it: mostly a moment inside one, and
		// now and then one up to three seconds on, between the apply's end and the checks.
		window := 400 * time.Millisecond
		if s.r.IntN(4) == 0 {
			window = 3 * time.Second
		}
		at := time.Duration(s.r.Int64N(int64(window)))
		node := s.cluster.Servers[s.r.IntN(len(s.cluster.Servers))]
		switch k := s.r.IntN(20); {
		case k < 7:
		case k < 11:
			killApply = true
		case k < 15:
			s.fault(at, func() { node.Kill(); s.count(&s.stats.nodeKills) })
		case k < 19:
			stopFor := time.Second + time.Duration(s.r.Int64N(int64(5*time.Second)))
			s.fault(at, func() {
				node.Pause()
				s.count(&s.stats.nodeStops)
				select {
				case <-exited:
				case <-time.After(stopFor):
				}
				node.Resume()
			})
		default:
			killApply = true
			s.fault(at/2, func() { node.Kill(); s.count(&s.stats.nodeKills) })
		}
		if killApply {
			select {
			case <-exited:
				killApply = false
			case <-time.After(at):
				cmd.Process.Signal(syscall.SIGKILL)
			}
		}
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Minute):
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		t.Logf("soak: apply ran past 5 minutes and was killed")
	}
	code := cmd.ProcessState.ExitCode()
	switch {
	case code < 0:
		s.stats.killedApplies++
		// An operator who killed a job may break its lock; otherwise it expires.
		if s.r.IntN(2) == 0 {
			s.heal()
			if c, _, _ := meshc(t, append([]string{"apply", s.dir, "--break-lock"}, s.as()...)...); c == exitOK {
				s.stats.locksBroken++
			}
		}
	case code < len(s.stats.exits):
		s.stats.exits[code]++
	}
	s.consumersChanged(code, out.String())
	return code, out.String()
}

// consumersChanged keeps what an apply said it does to each consumer, counts the replaces of one
// that exited 0, and ends the life of each consumer it deletes: --prune lets a consumer's
// position go (docs/commands.md, the data-loss flags), so one made again later under the same
// name is a new consumer, which delivers from its own start what the old one acknowledged. The
// plan is printed before the first write, so an apply killed before it deleted nothing; one that
// says nothing was changed did not either.
func (s *soak) consumersChanged(code int, out string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	unchanged := strings.Contains(out, "nothing was changed")
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[1] != "consumer" {
			continue
		}
		name := f[2][strings.LastIndex(f[2], "/")+1:]
		s.history[name] = append(s.history[name], fmt.Sprintf("an apply that ended at %s exiting %d said %q", time.Now().Format(time.StampMilli), code, strings.TrimSpace(line)))
		switch {
		case f[0] == "-/+" && code == exitOK:
			s.stats.replaces++
		case f[0] == "-" && !unchanged:
			delete(s.acked, name)
		}
	}
}

// count adds one to a count the faults keep.
func (s *soak) count(n *int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*n++
}

// fault does f after d, in the background; heal waits for it.
func (s *soak) fault(d time.Duration, f func()) {
	s.faults.Add(1)
	go func() {
		defer s.faults.Done()
		<-time.After(d) // a random moment of the apply, not a wait for anything
		s.mu.Lock()
		s.lastFault = time.Now()
		s.mu.Unlock()
		s.t.Logf("soak: a node fault at %s", s.lastFault.Format(time.StampMilli))
		f()
	}()
}

// heal waits for the faults in flight, then starts every killed node and continues every stopped
// one, and waits until JetStream answers on each.
func (s *soak) heal() {
	s.faults.Wait()
	for _, srv := range s.cluster.Servers {
		if srv.Paused() {
			srv.Resume()
		}
		if !srv.Running() {
			srv.Start()
		}
	}
	for _, srv := range s.cluster.Servers {
		srv.WaitJetStream(2*time.Minute, s.controller()...)
	}
}

// checkpoint stops the module instances, heals the cluster, and checks the bus: `meshc plan`
// has nothing to do, and every subject of EVENTS holds what was published to it (up to its
// cap) unless an apply since was let drop messages — then what it holds is the new baseline.
func (s *soak) checkpoint(prune bool) {
	t := s.t
	s.world.Lock()
	defer s.world.Unlock()
	s.heal()
	args := append([]string{"plan", s.dir}, s.as()...)
	if prune {
		args = append(args, "--prune")
	}
	var code int
	var out, errs string
	deadline := time.Now().Add(2 * time.Minute)
	for {
		code, out, errs = meshc(t, args...)
		if code != exitUnread || time.Now().After(deadline) {
			break
		}
		<-time.After(time.Second) // asked again while the cluster elects leaders for what it reports missing
	}
	if code != exitOK {
		s.violation("after an apply that exited 0, meshc plan exits %d:\n%s%s\nthe apply said:\n%s", code, out, errs, s.lastApply)
	}

	nc, err := nats.Connect(s.cluster.URLs(), s.controller()...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	stream, err := js.Stream(ctx, compiler.EventsStream)
	if err != nil {
		s.violation("EVENTS could not be read after a checkpoint: %v", err)
		return
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter("mesh.mod.>"))
	if err != nil {
		s.violation("EVENTS' subjects could not be read after a checkpoint: %v", err)
		return
	}
	held := info.State.Subjects
	perSubject := info.Config.MaxMsgsPerSubject
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dropsAllowed {
		for subject, n := range s.published {
			want := s.baseline[subject] + uint64(n)
			if perSubject > 0 {
				want = min(want, uint64(perSubject))
			}
			if held[subject] < want {
				s.violations = append(s.violations, fmt.Sprintf("seed %d: %s holds %d messages, and %d were stored (%d before, %d published since, a cap of %d); no apply since was let drop any",
					*soakSeed, subject, held[subject], want, s.baseline[subject], n, perSubject))
			}
		}
	}
	s.dropsAllowed = false
	s.baseline = map[string]uint64{}
	for subject, n := range held {
		s.baseline[subject] = n
	}
	s.published, s.uncertain = map[string]int{}, map[string]int{}
}

// snapshot is every stream's and consumer's configuration as the bus holds it, "" when it cannot
// be read whole.
func (s *soak) snapshot() string {
	bus, err := wire.Connect(wire.Endpoint{URL: s.cluster.URLs(), User: compiler.ControllerUser, Options: s.controller()})
	if err != nil {
		return ""
	}
	defer bus.Close()
	ctx, cancel := context.WithTimeout(s.t.Context(), time.Minute)
	defer cancel()
	live, err := wire.Read(ctx, bus, wire.ReadOptions{})
	if err != nil {
		return ""
	}
	var objects []any
	for _, st := range live.Streams {
		if st.Unavailable != "" || st.ConsumersUnread {
			return ""
		}
		objects = append(objects, st.Config)
		for _, c := range st.Consumers {
			if c.Unavailable != "" {
				return ""
			}
			objects = append(objects, c.Config)
		}
	}
	data, _ := json.Marshal(objects)
	return string(data)
}

// makeLegacy remakes one module's consumer as an older meshc might have left it (a max_waiting
// the plan does not have, which only a replace changes), from where it stood, with nothing
// pending, so the remake itself delivers nothing again: the next apply must replace it.
func (s *soak) makeLegacy() string {
	s.world.Lock()
	defer s.world.Unlock()
	var consumers []string
	for _, in := range s.cat.instances() {
		if in.consumer != "" {
			consumers = append(consumers, in.consumer)
		}
	}
	if len(consumers) == 0 {
		return ""
	}
	name := consumers[s.r.IntN(len(consumers))]
	nc, err := nats.Connect(s.cluster.URLs(), s.controller()...)
	if err != nil {
		return ""
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(s.t.Context(), 30*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, compiler.EventsStream)
	if err != nil {
		return ""
	}
	cons, err := stream.Consumer(ctx, name)
	if err != nil {
		return ""
	}
	info := cons.CachedInfo()
	if info.NumAckPending != 0 || info.Config.MaxWaiting == 100 {
		return "" // a remake would deliver again what is pending, or it is legacy already
	}
	cfg := info.Config
	cfg.MaxWaiting = 100
	if info.AckFloor.Stream > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq, cfg.OptStartTime = jetstream.DeliverByStartSequencePolicy, info.AckFloor.Stream+1, nil
	}
	if err := stream.DeleteConsumer(ctx, name); err != nil {
		return ""
	}
	if _, err := stream.CreateConsumer(ctx, cfg); err != nil {
		s.violation("the soak could not remake consumer %s as legacy: %v", name, err)
		return ""
	}
	s.stats.legacy++
	s.mu.Lock()
	s.history[name] = append(s.history[name], fmt.Sprintf("made legacy at %s from stream sequence %d (ack floor %d, delivered %d)",
		time.Now().Format(time.StampMilli), cfg.OptStartSeq, info.AckFloor.Stream, info.Delivered.Stream))
	s.mu.Unlock()
	return "consumer " + name + " made legacy (max_waiting 100)"
}

// soakWorker is one module instance: its connection, publishing its events and reading its
// consumer, as its own user.
type soakWorker struct {
	soakInstance
	nc     *nats.Conn
	js     jetstream.JetStream
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// syncWorkers starts an instance for each the catalogue runs now and stops the others.
func (s *soak) syncWorkers() {
	want := map[string]soakInstance{}
	for _, in := range s.cat.instances() {
		want[in.user] = in
	}
	s.mu.Lock()
	var stop []*soakWorker
	for user, w := range s.workers {
		// A module that consumes other events, or none, has another consumer (or none) under
		// the same user: its instance starts again.
		if in, ok := want[user]; !ok || in.consumer != w.consumer || !slices.Equal(in.subjects, w.subjects) {
			stop = append(stop, w)
			delete(s.workers, user)
		}
	}
	s.mu.Unlock()
	for _, w := range stop {
		w.stop()
	}
	for user, in := range want {
		s.mu.Lock()
		_, running := s.workers[user]
		s.mu.Unlock()
		if running {
			continue
		}
		w := &soakWorker{soakInstance: in}
		testwait.ForNil(s.t, "module instance "+user+" to connect after the reload", 30*time.Second, func() error {
			var err error
			w.nc, err = nats.Connect(s.cluster.URLs(), nats.UserInfo(user, s.pw[user]), nats.CustomInboxPrefix(compiler.InboxPrefix(user)),
				nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond),
				// Between a reload that takes a grant away and the instance stopping, its
				// publishes or pulls are refused: expected, and not the soak's news.
				nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
			return err
		})
		w.js, _ = jetstream.New(w.nc)
		ctx, cancel := context.WithCancel(context.Background())
		w.cancel = cancel
		w.done.Add(1)
		go func() { defer w.done.Done(); s.publish(ctx, w) }()
		if w.consumer != "" {
			w.done.Add(1)
			go func() { defer w.done.Done(); s.read(ctx, w) }()
		}
		s.mu.Lock()
		s.workers[user] = w
		s.mu.Unlock()
	}
}

func (w *soakWorker) stop() {
	w.cancel()
	w.done.Wait()
	w.nc.Close()
}

func (s *soak) stopWorkers() {
	s.mu.Lock()
	workers := s.workers
	s.workers = map[string]*soakWorker{}
	s.mu.Unlock()
	for _, w := range workers {
		w.stop()
	}
}

// publish publishes numbered events, each with its number as its message id (so a publish
// retried is stored once). The numbers are this instance's life's: an instance started again
// under the same user counts afresh, and within the stream's duplicate window a reused id is
// answered as a duplicate and not stored.
func (s *soak) publish(ctx context.Context, w *soakWorker) {
	life := time.Now().UnixNano()
	r := rand.New(rand.NewPCG(uint64(len(w.user)), uint64(life)))
	for n := 0; ctx.Err() == nil; n++ {
		s.world.RLock()
		subject := w.subjects[r.IntN(len(w.subjects))]
		id := fmt.Sprintf("%s#%d#%d", w.user, life, n)
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		// Every id is this publish's own, so an answer "duplicate" is nats.go's retry of it
		// finding it stored: stored once, counted once.
		_, err := w.js.Publish(pctx, subject, []byte(id), jetstream.WithMsgID(id))
		cancel()
		s.mu.Lock()
		switch {
		case err == nil:
			s.published[subject]++
			s.stats.published++
		default:
			s.uncertain[subject]++
		}
		s.mu.Unlock()
		s.world.RUnlock()
		select {
		case <-ctx.Done():
		case <-time.After(150*time.Millisecond + time.Duration(r.IntN(200))*time.Millisecond):
		}
	}
}

// read fetches the instance's consumer and acknowledges each message, waiting for the server to
// confirm; a message it confirmed before, delivered again, is a violation.
func (s *soak) read(ctx context.Context, w *soakWorker) {
	var cons jetstream.Consumer
	for ctx.Err() == nil {
		if cons == nil {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			c, err := w.js.Consumer(cctx, compiler.EventsStream, w.consumer)
			cancel()
			if err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(500 * time.Millisecond):
				}
				continue
			}
			cons = c
		}
		s.world.RLock()
		batch, err := cons.Fetch(10, jetstream.FetchMaxWait(time.Second))
		if err == nil {
			for m := range batch.Messages() {
				id := string(m.Data())
				s.mu.Lock()
				if at, ok := s.acked[w.consumer][id]; ok {
					meta, _ := m.Metadata()
					var seq, delivered uint64
					if meta != nil {
						seq, delivered = meta.Sequence.Stream, meta.NumDelivered
					}
					s.violations = append(s.violations, fmt.Sprintf("seed %d: consumer %s delivered %s again at %s (stream sequence %d, delivery %d), acknowledged (and confirmed) at %s; the last node fault was at %s; what was done to the consumer: %s",
						*soakSeed, w.consumer, id, time.Now().Format(time.StampMilli), seq, delivered, at.Format(time.StampMilli), s.lastFault.Format(time.StampMilli), strings.Join(s.history[w.consumer], "; ")))
				}
				s.mu.Unlock()
				actx, cancel := context.WithTimeout(ctx, 5*time.Second)
				if m.DoubleAck(actx) == nil {
					s.mu.Lock()
					if s.acked[w.consumer] == nil {
						s.acked[w.consumer] = map[string]time.Time{}
					}
					s.acked[w.consumer][id] = time.Now()
					s.mu.Unlock()
				}
				cancel()
			}
		}
		s.world.RUnlock()
		if err != nil && !errors.Is(err, context.Canceled) {
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}
