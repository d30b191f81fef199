package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/lint"
	"github.com/meshc-dev/meshc/up"
	"github.com/meshc-dev/meshc/verify"
)

// meshc verify examples/mesh proves the example's golden files as committed, says what each class
// tried, and exits 0; the same golden files with one grant added by hand exit 1, naming the
// principal, the subject and the line of accounts.conf that let it through — in text, JSON and
// SARIF alike.
func TestVerifyTheExampleAndAHandWidenedCopy(t *testing.T) {
	t.Parallel()
	code, out, errs := meshc(t, "verify", "../../examples/mesh")
	if code != exitOK {
		t.Fatalf("meshc verify examples/mesh exited %d:\n%s%s", code, out, errs)
	}
	for _, c := range verify.Classes {
		if !strings.Contains(out, "  "+c.ID+" ") || strings.Contains(out, c.ID+" not tried") {
			t.Errorf("the output does not say what class %s tried:\n%s", c.ID, out)
		}
	}
	if !strings.Contains(out, "no failures") {
		t.Errorf("the output does not say it found nothing:\n%s", out)
	}
	if testing.Short() {
		t.Skip("-short: the example once")
	}

	dir := copyCatalogue(t, "../../examples/mesh", false)
	if err := os.CopyFS(filepath.Join(dir, catalogue.GoldenDir), os.DirFS("../../examples/mesh/golden")); err != nil {
		t.Fatal(err)
	}
	accounts := filepath.Join(dir, catalogue.GoldenDir, emit.AccountsFile)
	data, err := os.ReadFile(accounts)
	if err != nil {
		t.Fatal(err)
	}
	// bob may call builder's build-now and audit-log's search; by hand, registry's prune too.
	at := strings.Index(string(data), `user: "person.bob"`)
	widened := string(data[:at]) + strings.Replace(string(data[at:]), `"mesh.mod.builder.tool.build-now"`, `"mesh.mod.builder.tool.build-now"
              "mesh.mod.registry.tool.prune"`, 1)
	if err := os.WriteFile(accounts, []byte(widened), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = meshc(t, "verify", dir, "--format", "json")
	if code != exitFailed {
		t.Fatalf("meshc verify on a hand-widened accounts.conf exited %d, want 1:\n%s%s", code, out, errs)
	}
	var r verify.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("the JSON: %v\n%s", err, out)
	}
	found := false
	for _, f := range r.Failures {
		if f.Class == verify.Refusal.ID && f.Principal == "person.bob" && f.Subject == "mesh.mod.registry.tool.prune" &&
			f.Grant == "mesh.mod.registry.tool.prune" && f.Line > 0 && strings.HasSuffix(f.File, "accounts.conf") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no refusal failure names person.bob, its subject, grant and line: %s", out)
	}
	_, sarif, _ := meshc(t, "verify", dir, "--format", "sarif")
	for _, want := range []string{`"ruleId": "refusal"`, `"principal": "person.bob"`, `"startLine"`} {
		if !strings.Contains(sarif, want) {
			t.Errorf("the SARIF holds no %s:\n%s", want, sarif)
		}
	}
}

// A flag verify would ignore is refused: it connects as each principal, never as one user (it has
// no --user), and --credentials means nothing without a live bus.
func TestVerifyRefusesFlagsItWouldIgnore(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"verify", "--user", "mesh-controller", "../../examples/mesh"},
		{"verify", "--credentials", t.TempDir(), "../../examples/mesh"},
		{"verify", "--credentials", t.TempDir(), "-o", t.TempDir(), "--server", "nats://127.0.0.1:1", "../../examples/mesh"},
		{"verify", "--server", "nats://127.0.0.1:1", "../../examples/mesh"},
		{"verify", "--sample", "0", "../../examples/mesh"},
	} {
		if code, _, errs := meshc(t, args...); code != exitCantRun || errs == "" {
			t.Errorf("meshc %s exited %d (%q), want 2 and why", strings.Join(args, " "), code, errs)
		}
	}
}

// meshc verify --credentials proves a live bus — here `meshc up`'s, as the principals whose
// contexts up wrote — and leaves it as it found it: no stream gains a message, no consumer
// delivers anything. The same bus with a grant added by hand to its accounts file, reloaded, is
// a failure naming the principal.
func TestVerifyALiveBusAndChangeNothing(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: a bus of its own")
	}
	dir := cataloguetest.Extract(t, "../../verify/testdata/mesh.txtar")
	if code, _, errs := meshc(t, "mint", "--dir", dir, "--missing"); code != exitOK {
		t.Fatalf("mint: %s", errs)
	}
	if code, _, errs := meshc(t, "emit", dir); code != exitOK {
		t.Fatalf("emit: %s", errs)
	}
	cat, loaded, err := catalogue.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, plan := lint.Check(cat, loaded)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bus, _, err := up.Start(ctx, plan, up.Options{State: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Stop()
	contexts, err := bus.WriteContexts()
	if err != nil {
		t.Fatal(err)
	}
	creds := filepath.Dir(contexts[compiler.ControllerUser])
	before := busState(t, bus)
	code, out, errs := meshc(t, "verify", dir, "--credentials", creds, "--server", bus.URL, "--format", "json")
	if code != exitOK {
		t.Fatalf("meshc verify of a live bus exited %d:\n%s%s", code, out, errs)
	}
	var r verify.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if !r.Live || len(r.Principals) != len(plan.Users) {
		t.Errorf("the live proof proved %d principals of %d (live %v)", len(r.Principals), len(plan.Users), r.Live)
	}
	for _, c := range r.Classes {
		if tried := c.Tries > 0; tried != (verify.ClassByID(c.Class).Live != "") {
			t.Errorf("on a live bus class %s tried %d (%s), want tries only where it says what it tries live", c.Class, c.Tries, c.Skipped)
		}
	}
	if after := busState(t, bus); after != before {
		t.Errorf("the proof changed the bus:\nbefore %s\nafter  %s", before, after)
	}

	accounts := filepath.Join(bus.State, emit.AccountsFile)
	data, err := os.ReadFile(accounts)
	if err != nil {
		t.Fatal(err)
	}
	at := strings.Index(string(data), `user: "person.bob"`)
	widened := string(data[:at]) + strings.Replace(string(data[at:]), `"mesh.mod.catalog.tool.lookup"`, `"mesh.mod.catalog.tool.lookup"
              "mesh.mod.registry.tool.prune"`, 1)
	if err := os.WriteFile(accounts, []byte(widened), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := bus.Server.Reload(); err != nil {
		t.Fatal(err)
	}
	code, out, errs = meshc(t, "verify", dir, "--credentials", creds, "--server", bus.URL)
	if code != exitFailed || !strings.Contains(out, "refusal: person.bob may publish mesh.mod.registry.tool.prune") {
		t.Fatalf("meshc verify of a live bus whose accounts gained a grant by hand exited %d:\n%s%s", code, out, errs)
	}
}

// busState is what a bus holds, as its controller reads it: each stream's last sequence and each
// consumer's deliveries and acknowledgements.
func busState(t *testing.T, bus *up.Bus) string {
	t.Helper()
	nc, err := bus.Connect(compiler.ControllerUser)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, s := range bus.Plan().Streams {
		st, err := js.Stream(t.Context(), s.Config.Name)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s:%d ", s.Config.Name, st.CachedInfo().State.LastSeq)
	}
	for _, c := range bus.Plan().Consumers {
		info, err := js.Consumer(t.Context(), c.Stream, compiler.ConsumerName(c.Config))
		if err != nil {
			// A push consumer: read by the API's INFO request instead.
			continue
		}
		i := info.CachedInfo()
		fmt.Fprintf(&b, "%s/%s:%d/%d ", c.Stream, i.Name, i.Delivered.Consumer, i.AckFloor.Consumer)
	}
	return b.String()
}

// The action runs meshc verify when its verify input says so, and not by default: on a push of
// a catalogue whose golden files are current, the step proves them and the job passes.
func TestTheActionVerifiesWhenAsked(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: a proof of its own")
	}
	work := t.TempDir()
	cat := filepath.Join(work, "cat")
	if err := os.CopyFS(cat, os.DirFS(cataloguetest.Extract(t, "../../verify/testdata/mesh.txtar"))); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"mint", "--dir", cat, "--missing"}, {"emit", cat}} {
		if code, _, errs := meshc(t, args...); code != exitOK {
			t.Fatalf("meshc %s: %s", strings.Join(args, " "), errs)
		}
	}
	push := map[string]string{"inputs.catalogue": "cat", "github.repository": "novox/catalogue", "github.event_name": "push"}
	if job := runAction(t, work, push); job.failed || !strings.Contains(job.log, "meshc verify: skipped") {
		t.Fatalf("by default the action ran meshc verify, or failed:\n%s", job.log)
	}
	push["inputs.verify"] = "true"
	job := runAction(t, work, push)
	if job.failed || !strings.Contains(job.log, "no failures: least privilege holds") {
		t.Fatalf("with verify: true the action did not prove the golden files:\n%s", job.log)
	}
}

// docs/commands.md's table of verify's classes is rendered from verify.Classes, the table that
// also drives verify's help and its SARIF rules.
func TestTheCommandsPagesVerifyClassesMatchTheClasses(t *testing.T) {
	t.Parallel()
	const begin, end = "<!-- verify classes: generated from verify.Classes by `go test ./cmd/meshc -update-docs` -->\n", "<!-- /verify classes -->"
	var b strings.Builder
	b.WriteString("| class | tries | a failure means |\n| --- | --- | --- |\n")
	for _, c := range verify.Classes {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", c.ID, strings.ReplaceAll(c.Summary, "|", `\|`), strings.ReplaceAll(c.Why, "|", `\|`))
	}
	generatedIn(t, "docs/commands.md", begin, end, b.String(), "docs/commands.md's table of verify's classes is stale; run `go test ./cmd/meshc -run TestTheCommandsPagesVerify -update-docs`")
}
