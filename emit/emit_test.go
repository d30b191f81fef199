package emit

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/compiler"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current renderings")

// Recorded hashes, as credentials.yaml would hold them (bcrypt cost 4 of "a" … "e"): fixed so the
// golden files are fixed.
var recorded = []string{
	"$2a$04$40zwVa4klPkRE6r7SwipiOVaC97kPJ5aKmo6zpBgcZ9mFEZxdFdXa",
	"$2a$04$4eh0LRfwPjRr3D/rAD3I0eQuMZXBbQghjPui0BlZn8oSnA/ikhymu",
	"$2a$04$nUqdmHSN1AfbX2fZbNKTruWw8qg/al3AEqmvHRnWvSpLD355jz3Iq",
	"$2a$04$/9iv8rCqaLKbl0DgP33IduKxGkuwnppHSc1kLMz0r/ogG3uF7UgP6",
	"$2a$04$1NW9N4azUn3QRejePqcc6.Ks.Wf0.VJit07lnqJGqH1owS1ws/3QC",
}

func allow(s ...string) compiler.Permission { return compiler.Permission{Allow: s} }

// nothing is the compiler's "nothing to publish".
var nothing = compiler.Permission{Deny: []string{">"}}

// testPlan is a small mesh by hand: the controller, one machine with one module, a machine
// holding an enrolment token, a person who may call nothing. Streams and consumers are out of
// order on purpose: plan.json must sort them.
func testPlan() *compiler.Plan {
	return &compiler.Plan{
		Account: "novox",
		Users: []compiler.User{
			{Name: "mesh-controller", Kind: compiler.KindController, Hash: recorded[0],
				Publish:   allow("$JS.API.>", "_INBOX.enrol.*.>", "mesh.node.*.declare"),
				Subscribe: allow("_INBOX.mesh-controller.>", "mesh.control.heartbeat.*")},
			{Name: "node.anchor", Kind: compiler.KindNode, Hash: recorded[1],
				Publish: allow("$JS.ACK.*.*.NODES.anchor.*.*.*.*.>", "$JS.ACK.NODES.anchor.*.*.*.*.*", "$JS.API.CONSUMER.INFO.NODES.anchor",
					"mesh.control.heartbeat.anchor", "mesh.control.report.anchor"),
				Subscribe: allow("_DELIVER.NODES.anchor", "_INBOX.node.anchor.>")},
			{Name: "mod.anchor.catalog", Kind: compiler.KindModule, Hash: recorded[2],
				Publish:        allow("mesh.mod.catalog.event.upgraded"),
				Subscribe:      allow("_INBOX.mod.anchor.catalog.>", "mesh.mod.catalog.tool.lookup catalog"),
				AllowResponses: true},
			{Name: "enrol.laptop", Kind: compiler.KindEnrolment, Hash: recorded[3],
				Publish:   allow("mesh.control.enrol.laptop"),
				Subscribe: allow("_INBOX.enrol.laptop.>")},
			{Name: "person.carol", Kind: compiler.KindPerson, Hash: recorded[4],
				Publish:   nothing,
				Subscribe: allow("_INBOX.person.carol.>")},
		},
		Streams: []compiler.Stream{
			{Config: jetstream.StreamConfig{Name: "NODES", Subjects: []string{"mesh.node.*.declare"},
				Retention: jetstream.LimitsPolicy, MaxMsgsPerSubject: 1, Storage: jetstream.FileStorage, Replicas: 1}},
			{Config: jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"mesh.mod.*.event.>", "mesh.seat.*.event.>"},
				Retention: jetstream.LimitsPolicy, MaxAge: 720 * time.Hour, MaxMsgsPerSubject: 10000,
				Storage: jetstream.FileStorage, Replicas: 1}},
			{Config: jetstream.StreamConfig{Name: "CONTROL", Subjects: []string{"mesh.control.report.*", "mesh.control.enrol.*"},
				Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, Replicas: 1}},
		},
		Consumers: []compiler.Consumer{
			{Stream: "NODES", Config: jetstream.ConsumerConfig{Durable: "anchor", DeliverSubject: "_DELIVER.NODES.anchor",
				AckPolicy: jetstream.AckExplicitPolicy, AckWait: 5 * time.Minute, MaxDeliver: -1,
				FilterSubjects: []string{"mesh.node.anchor.declare"}}},
			{Stream: "CONTROL", Config: jetstream.ConsumerConfig{Durable: "reports", AckPolicy: jetstream.AckExplicitPolicy,
				MaxDeliver: -1, FilterSubjects: []string{"mesh.control.report.*"}}},
			{Stream: "CONTROL", Config: jetstream.ConsumerConfig{Durable: "enrolments", AckPolicy: jetstream.AckExplicitPolicy,
				MaxDeliver: -1, FilterSubjects: []string{"mesh.control.enrol.*"}}},
			{Stream: "EVENTS", Config: jetstream.ConsumerConfig{Durable: "mesh-controller", AckPolicy: jetstream.AckExplicitPolicy,
				FilterSubjects: []string{"mesh.mod.catalog.event.upgraded"}}},
		},
		Tools: []compiler.ServedTool{
			{Subject: "mesh.mod.catalog.tool.lookup", Module: "catalog", Queue: "catalog", Account: "novox", Callers: []string{"novox"}},
		},
	}
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `go test ./emit -update` to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: got\n%s\nwant\n%s\n(run `go test ./emit -update` if the change is meant)", path, got, want)
	}
}

func TestGolden(t *testing.T) {
	renderings := map[string]func(*compiler.Plan) ([]byte, error){
		"accounts.conf.golden":  func(p *compiler.Plan) ([]byte, error) { return Accounts(p, AccountsOptions{}) },
		"plan.json.golden":      PlanJSON,
		"permissions.md.golden": func(p *compiler.Plan) ([]byte, error) { return Permissions(p), nil },
	}
	for name, render := range renderings {
		t.Run(name, func(t *testing.T) {
			first, err := render(testPlan())
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name, first)
			// Rendering again, from a Plan built again, gives the same bytes: the server reloads
			// on the file's digest.
			second, err := render(testPlan())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(first, second) {
				t.Errorf("two renderings of one plan differ:\n%s\n---\n%s", first, second)
			}
		})
	}
}

func TestAccountsMissingHash(t *testing.T) {
	p := testPlan()
	p.Users[1].Hash = ""
	p.Users[3].Hash = ""

	_, err := Accounts(p, AccountsOptions{})
	if err == nil {
		t.Fatal("a plan with users that have no hash was written")
	}
	for _, want := range []string{`"node.anchor"`, `"enrol.laptop"`, "meshc mint --missing"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not mention %s", err, want)
		}
	}

	out, err := Accounts(p, AccountsOptions{AllowMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"node.anchor", "enrol.laptop"} {
		comment := "# left out: \"" + name + "\" has no recorded hash; mint one with `meshc mint \"" + name + "\"`"
		if !strings.Contains(string(out), comment) {
			t.Errorf("no comment %q in\n%s", comment, out)
		}
		if strings.Contains(string(out), `user: "`+name+`"`) {
			t.Errorf("user %s without a hash was written as a user", name)
		}
	}
	// The users that have hashes are all still there.
	users := parsedUsers(t, out, "novox")
	if len(users) != 3 {
		t.Errorf("got %d users, want the 3 with hashes", len(users))
	}

	// Quiet when every user has a hash: no comment, every user written.
	out, err = Accounts(testPlan(), AccountsOptions{AllowMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "left out") || len(parsedUsers(t, out, "novox")) != 5 {
		t.Errorf("a plan with every hash recorded lost a user or gained a comment:\n%s", out)
	}
}

func TestAccountsRefuses(t *testing.T) {
	cases := []struct {
		name   string
		change func(p *compiler.Plan)
		want   []string
	}{
		{"empty publish", func(p *compiler.Plan) { p.Users[4].Publish = compiler.Permission{} },
			[]string{`"person.carol"`, "publish", "nothing at all"}},
		{"empty allow written as list", func(p *compiler.Plan) { p.Users[4].Publish = compiler.Permission{Allow: []string{}} },
			[]string{`"person.carol"`, "publish"}},
		{"deny without allow", func(p *compiler.Plan) { p.Users[2].Publish = compiler.Permission{Deny: []string{"mesh.>"}} },
			[]string{`"mod.anchor.catalog"`, "only a deny list"}},
		{"empty subscribe", func(p *compiler.Plan) { p.Users[0].Subscribe = compiler.Permission{} },
			[]string{`"mesh-controller"`, "subscribe"}},
		{"plaintext for a hash", func(p *compiler.Plan) { p.Users[1].Hash = "hunter2" },
			[]string{`"node.anchor"`, "not a bcrypt hash", "plaintext", "meshc mint node.anchor"}},
		{"truncated hash", func(p *compiler.Plan) { p.Users[1].Hash = recorded[1][:40] },
			[]string{`"node.anchor"`, "not a bcrypt hash"}},
		{"account name with a quote", func(p *compiler.Plan) { p.Account = `no"vox` },
			[]string{"account name", "mesh.yaml"}},
		{"account name with a dot", func(p *compiler.Plan) { p.Account = "no.vox" },
			[]string{"account name"}},
		{"empty account name", func(p *compiler.Plan) { p.Account = "" },
			[]string{"account name"}},
		{"nameless user", func(p *compiler.Plan) { p.Users[3].Name = "" },
			[]string{"no name"}},
		{"user twice", func(p *compiler.Plan) { p.Users[3].Name = "node.anchor" },
			[]string{`"node.anchor" appears twice`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := testPlan()
			c.change(p)
			out, err := Accounts(p, AccountsOptions{AllowMissing: true})
			if err == nil {
				t.Fatalf("written instead of refused:\n%s", out)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q does not mention %q", err, w)
				}
			}
		})
	}
	// Quiet: a deny-only permission is fine when it denies everything, and the test plan as a
	// whole is written.
	if _, err := Accounts(testPlan(), AccountsOptions{}); err != nil {
		t.Errorf("the test plan was refused: %v", err)
	}
}

func TestAccountsNeverWritesEmptyList(t *testing.T) {
	out, err := Accounts(testPlan(), AccountsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("[]")) {
		t.Errorf("an empty list was written:\n%s", out)
	}
	if !bytes.Contains(out, []byte(`deny: [">"]`)) {
		t.Errorf("the user with nothing to publish is not written deny \">\":\n%s", out)
	}
	// Nothing but the accounts block: the server's own settings belong to its own file.
	if users := parsedUsers(t, out, "novox"); len(users) != 5 {
		t.Errorf("got %d users, want 5", len(users))
	}
}

func TestPlanJSON(t *testing.T) {
	out, err := PlanJSON(testPlan())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(out, []byte("}\n")) || bytes.Contains(out, []byte(`\u003e`)) {
		t.Errorf("plan.json must end in a newline and show subjects as written:\n%s", out)
	}

	// The API's own names and units: durations are nanoseconds.
	var raw struct {
		Streams   []map[string]any `json:"streams"`
		Consumers []struct {
			Stream string         `json:"stream_name"`
			Config map[string]any `json:"config"`
		} `json:"consumers"`
	}
	if err := json.Unmarshal(out, &raw); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range raw.Streams {
		names = append(names, s["name"].(string))
	}
	if want := []string{"CONTROL", "EVENTS", "NODES"}; !reflect.DeepEqual(names, want) {
		t.Errorf("streams in order %v, want %v", names, want)
	}
	if got := raw.Streams[1]["max_age"]; got != float64(720*time.Hour) {
		t.Errorf("EVENTS max_age = %v, want %d nanoseconds", got, 720*time.Hour)
	}
	if got := raw.Streams[1]["num_replicas"]; got != float64(1) {
		t.Errorf("EVENTS num_replicas = %v", got)
	}
	var consumers []string
	for _, c := range raw.Consumers {
		consumers = append(consumers, c.Stream+"/"+c.Config["durable_name"].(string))
	}
	if want := []string{"CONTROL/enrolments", "CONTROL/reports", "EVENTS/mesh-controller", "NODES/anchor"}; !reflect.DeepEqual(consumers, want) {
		t.Errorf("consumers in order %v, want %v", consumers, want)
	}
	if got := raw.Consumers[3].Config["ack_wait"]; got != float64(5*time.Minute) {
		t.Errorf("NODES/anchor ack_wait = %v, want %d nanoseconds", got, 5*time.Minute)
	}

	// What apply would decode from the file is what the plan holds.
	var back planFile
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	for _, s := range testPlan().Streams {
		found := false
		for _, b := range back.Streams {
			found = found || reflect.DeepEqual(b, s.Config)
		}
		if !found {
			t.Errorf("stream %s does not come back from plan.json as it went in", s.Config.Name)
		}
	}

	// The served tools come back as they went in: a tool server reads its callers from here.
	read, err := ReadPlanJSON(out)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(read.Tools, testPlan().Tools) || read.ServedTool("mesh.mod.catalog.tool.lookup") == nil {
		t.Errorf("tools read back %+v, want %+v", read.Tools, testPlan().Tools)
	}

	// An empty plan is empty lists, not null.
	out, err = PlanJSON(&compiler.Plan{Account: "novox"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"streams\": [],\n  \"consumers\": [],\n  \"tools\": []\n}\n"; string(out) != want {
		t.Errorf("empty plan: got %q, want %q", out, want)
	}
}

func TestPlanJSONRefusesDuplicates(t *testing.T) {
	p := testPlan()
	p.Streams = append(p.Streams, p.Streams[0])
	if _, err := PlanJSON(p); err == nil || !strings.Contains(err.Error(), `"NODES"`) {
		t.Errorf("two NODES streams: err = %v", err)
	}
	p = testPlan()
	p.Consumers = append(p.Consumers, p.Consumers[1])
	if _, err := PlanJSON(p); err == nil || !strings.Contains(err.Error(), `"reports"`) {
		t.Errorf("two reports consumers: err = %v", err)
	}
	// Quiet: one durable name on two streams is two consumers.
	p = testPlan()
	p.Consumers = append(p.Consumers, compiler.Consumer{Stream: "EVENTS", Config: jetstream.ConsumerConfig{Durable: "reports"}})
	if _, err := PlanJSON(p); err != nil {
		t.Errorf("one durable name on two streams was refused: %v", err)
	}
}

func TestReviewCellsStayInTheirColumns(t *testing.T) {
	p := testPlan()
	p.Users[2].Name = "mod.a|b`c\nd"
	p.Users[2].Subscribe.Allow = append(p.Users[2].Subscribe.Allow, "x|y")
	out := string(Permissions(p))
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| user ") {
			continue
		}
		if !strings.Contains(line, "mod.a") {
			continue
		}
		rows++
		if got := strings.Count(line, "|") - strings.Count(line, `\|`); got != 5 {
			t.Errorf("row has %d cell borders, want 5: %q", got, line)
		}
	}
	if rows != 5 {
		t.Errorf("%d rows for the renamed user, want 5 (1 publish, 3 subscribe, 1 reply):\n%s", rows, out)
	}
}

// Render gives exactly what the three renderers give one by one.
func TestRenderIsTheThreeRenderings(t *testing.T) {
	p := testPlan()
	r, err := Render(p, AccountsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	accounts, _ := Accounts(p, AccountsOptions{})
	plan, _ := PlanJSON(p)
	want := map[string][]byte{AccountsFile: accounts, PlanFile: plan, PermissionsFile: Permissions(p)}
	if len(r.Files) != len(want) || r.Retired != ClaimsFile {
		t.Fatalf("Render gives %d files retiring %q, want accounts.conf, plan.json and permissions.md retiring claims.json", len(r.Files), r.Retired)
	}
	for _, f := range r.Files {
		// Twice: a rendering is written once to compare and again to write.
		if !bytes.Equal(bytesOf(t, f), want[f.Name]) || !bytes.Equal(bytesOf(t, f), want[f.Name]) {
			t.Errorf("Render's %s differs from what its renderer gives alone", f.Name)
		}
	}
	p.Users[0].Hash = ""
	if _, err := Render(p, AccountsOptions{}); err == nil {
		t.Fatal("Render did not pass on the refusal of a user without a hash")
	}
}

// The reader gives back the plan the writer wrote: written again, the bytes are the same, and
// every stream and consumer comes back whole.
func TestReadPlanJSONReadsWhatPlanJSONWrote(t *testing.T) {
	out, err := PlanJSON(testPlan())
	if err != nil {
		t.Fatal(err)
	}
	back, err := ReadPlanJSON(out)
	if err != nil {
		t.Fatal(err)
	}
	again, err := PlanJSON(back)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, again) {
		t.Errorf("written, read and written again differs:\n%s\nvs\n%s", out, again)
	}
	if len(back.Streams) != 3 || len(back.Consumers) != 4 || back.Consumers[3].Stream != "NODES" || back.Consumers[3].Config.AckWait != 5*time.Minute {
		t.Errorf("read back %d streams, %d consumers: %+v", len(back.Streams), len(back.Consumers), back.Consumers)
	}
}

func TestReadPlanJSONRefuses(t *testing.T) {
	for name, tc := range map[string]struct{ file, says string }{
		"not json":           {`{"streams": [`, "not a plan meshc wrote"},
		"orphan consumer":    {`{"streams": [], "consumers": [{"stream_name": "EVENTS", "config": {"durable_name": "x"}}]}`, "does not list"},
		"duplicate stream":   {`{"streams": [{"name": "A"}, {"name": "A"}], "consumers": []}`, `two streams named "A"`},
		"duplicate consumer": {`{"streams": [{"name": "A"}], "consumers": [{"stream_name": "A", "config": {"durable_name": "x"}}, {"stream_name": "A", "config": {"name": "x"}}]}`, `two consumers named "x"`},
	} {
		if _, err := ReadPlanJSON([]byte(tc.file)); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.says)
		}
	}
	// Quiet: an empty plan reads as an empty plan.
	if p, err := ReadPlanJSON([]byte(`{"streams": [], "consumers": []}`)); err != nil || len(p.Streams)+len(p.Consumers) != 0 {
		t.Errorf("empty plan: %v, %v", p, err)
	}
}

// The refusal names up to ten users without a hash and counts the rest: a fresh catalogue of
// 10,000 modules lacks 24,655, and naming every one made a line of 600 KB.
func TestMissingHashesAreNamedUpToTenAndCounted(t *testing.T) {
	p := testPlan()
	for i := range 12 {
		p.Users = append(p.Users, compiler.User{Name: fmt.Sprintf("person.p%02d", i), Kind: compiler.KindPerson, Publish: nothing,
			Subscribe: allow(fmt.Sprintf("_INBOX.person.p%02d.>", i))})
	}
	_, err := Accounts(p, AccountsOptions{})
	if err == nil || !strings.Contains(err.Error(), `"person.p09", and 2 more:`) || strings.Contains(err.Error(), "p10") {
		t.Errorf("12 users without a hash: %v; want ten named and 2 more", err)
	}
	p.Users = p.Users[:len(p.Users)-10]
	_, err = Accounts(p, AccountsOptions{})
	if err == nil || !strings.Contains(err.Error(), `"person.p00", "person.p01": `) || strings.Contains(err.Error(), "more") {
		t.Errorf("2 users without a hash: %v; want both named and no count", err)
	}
}

// bytesOf renders f into memory.
func bytesOf(t *testing.T, f Rendering) []byte {
	t.Helper()
	data, err := f.Bytes()
	if err != nil {
		t.Fatalf("rendering %s: %v", f.Name, err)
	}
	return data
}
