package verify

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/lint"
)

// The modes every proof must pass in: both isolations, each with passwords, nkeys and operator
// mode (the recorded credentials replaced by the proof's in each).
var modes = []struct{ isolation, auth string }{
	{catalogue.IsolationPerModule, catalogue.AuthPassword},
	{catalogue.IsolationShared, catalogue.AuthPassword},
	{catalogue.IsolationPerModule, catalogue.AuthNKey},
	{catalogue.IsolationPerModule, catalogue.AuthOperator},
	{catalogue.IsolationShared, catalogue.AuthOperator},
}

// TestTheGoldenFilesAreProvenInEveryMode runs the whole proof on a mesh's golden files as meshc
// emits them, in every mode, and requires no failure and every class that applies to have tried
// something: a proof that passes by trying nothing proves nothing.
func TestTheGoldenFilesAreProvenInEveryMode(t *testing.T) {
	t.Parallel()
	for i, m := range modes {
		t.Run(m.isolation+"/"+m.auth, func(t *testing.T) {
			if testing.Short() && i > 0 {
				t.Skip("-short: one mode")
			}
			plan, dir := goldenFor(t, m.isolation, m.auth)
			r := prove(t, plan, dir)
			for _, f := range r.Failures {
				t.Errorf("%s: %s: %s", place(f), f.Class, said(f))
			}
			for _, c := range r.Classes {
				skippable := !r.Live && m.isolation == catalogue.IsolationShared && (c.Class == Injection.ID || c.Class == Forgery.ID)
				if c.Tries == 0 && !skippable {
					t.Errorf("class %s tried nothing (%s)", c.Class, c.Skipped)
				}
			}
			if len(r.Principals) != len(plan.Users) {
				t.Errorf("proved %d principals of %d", len(r.Principals), len(plan.Users))
			}
		})
	}
}

// Each class fails when the golden files are widened (or narrowed) by hand the way it exists to
// catch, and names the principal and, where the file says it, the line that let the try through.
func TestEachClassFailsOnAGoldenFileEditedByHand(t *testing.T) {
	t.Parallel()
	for i, c := range []struct {
		class, principal, subject string
		// file is the golden file edited; user the block of it edited ("" the whole file).
		file, user, old, new string
	}{
		{class: "refusal", principal: "person.bob", subject: "mesh.mod.registry.tool.prune",
			file: emit.AccountsFile, user: `user: "person.bob"`, old: `"mesh.mod.catalog.tool.lookup"`, new: `"mesh.mod.catalog.tool.lookup"
              "mesh.mod.registry.tool.prune"`},
		{class: "grant", principal: "mod.anchor.catalog", subject: "mesh.mod.catalog.event.upgraded",
			file: emit.AccountsFile, user: `user: "mod.anchor.catalog"`, old: `"mesh.mod.catalog.event.upgraded"`, new: ``},
		{class: "ack-steal", principal: "mod.laptop.notifier",
			file: emit.AccountsFile, user: `user: "mod.laptop.notifier"`, old: `"$JS.ACK.*.*.EVENTS.laptop_notifier.*.*.*.*.>"`, new: `"$JS.ACK.*.*.EVENTS.laptop_notifier.>"`},
		// One import more than the grants, as exact as the grants' own: an answer follows an
		// account's exact imports (docs/nats.md, "What accounts do not block").
		{class: "reply-injection", principal: "mod.anchor.catalog", subject: "mesh.mod.registry.event.pruned",
			file: emit.AccountsFile, old: `{service: {account: "proof", subject: "mesh.mod.catalog.event.upgraded"}}`, new: `{service: {account: "proof", subject: "mesh.mod.catalog.event.upgraded"}}
      {service: {account: "proof", subject: "mesh.mod.registry.event.pruned"}}`},
		{class: "flow", principal: "mod.laptop.notifier", subject: "mesh.mod.registry.event.pruned",
			file: emit.PlanFile, user: `"name": "laptop_notifier"`, old: `"filter_subject": "mesh.mod.catalog.event.upgraded",`, new: `"filter_subjects": ["mesh.mod.catalog.event.upgraded", "mesh.mod.registry.event.pruned"],`},
		{class: "caller-forgery", principal: "mod.laptop.notifier", subject: "mesh.mod.catalog.tool.lookup",
			file: emit.PlanFile, user: `"subject": "mesh.mod.catalog.tool.lookup"`, old: `"mod.laptop.notifier",`, new: ``},
		{class: "flood", principal: "mod.anchor.catalog",
			file: emit.AccountsFile, user: `"mod.anchor.catalog" {`, old: `, max_payload: 1048576`, new: ``},
		{class: "connect", principal: "person.mallory",
			file: emit.AccountsFile, old: `user: "person.bob"`, new: `user: "person.mallory"`},
		{class: "load",
			file: emit.AccountsFile, old: `accounts {`, new: `accounts { garbage`},
	} {
		t.Run(c.class, func(t *testing.T) {
			if testing.Short() && i > 0 {
				t.Skip("-short: one class")
			}
			plan, dir := goldenFor(t, catalogue.IsolationPerModule, catalogue.AuthPassword)
			edit(t, filepath.Join(dir, c.file), c.user, c.old, c.new)
			r := prove(t, plan, dir)
			var found *Failure
			for i, f := range r.Failures {
				if f.Class == c.class && f.Principal == c.principal && (c.subject == "" || strings.Contains(f.Subject, c.subject)) {
					found = &r.Failures[i]
				}
			}
			if found == nil {
				t.Fatalf("no %s failure naming %s %s; failures: %+v", c.class, c.principal, c.subject, r.Failures)
			}
			if (c.class == "refusal" || c.class == "reply-injection") && (found.Grant == "" || found.Line == 0) {
				t.Errorf("the failure does not name the golden grant and its line: %+v", found)
			}
		})
	}
}

// goldenFor emits the test mesh's golden files in a mode, with credentials minted as meshc mint
// mints them, and returns the plan the catalogue compiles to and the golden directory.
func goldenFor(t *testing.T, isolation, auth string) (*compiler.Plan, string) {
	t.Helper()
	cat, loaded := cataloguetest.Load(t, "testdata/mesh.txtar")
	cat.Mesh.Isolation.Value, cat.Mesh.Auth.Value = isolation, auth
	findings, plan := lint.Check(cat, loaded)
	for _, f := range findings {
		if f.Severity == catalogue.Error {
			t.Fatalf("the test mesh does not lint clean: %v", f)
		}
	}
	switch auth {
	case catalogue.AuthPassword:
		for i := range plan.Users {
			_, hash, err := catalogue.MintPassword()
			if err != nil {
				t.Fatal(err)
			}
			plan.Users[i].Hash = hash
		}
	case catalogue.AuthNKey:
		for i := range plan.Users {
			_, public, err := catalogue.MintNKey()
			if err != nil {
				t.Fatal(err)
			}
			plan.Users[i].NKey = public
		}
	case catalogue.AuthOperator:
		keys := &compiler.OperatorKeys{Accounts: map[string]string{}}
		for _, k := range []*string{&keys.Operator, &keys.SigningKey} {
			kp, _ := nkeys.CreateOperator()
			*k, _ = kp.PublicKey()
		}
		for _, k := range []*string{&keys.SystemAccount, &keys.ProbeKey} {
			*k, _ = catalogue.MintAccountKey()
		}
		for _, a := range plan.OperatorAccounts() {
			keys.Accounts[a], _ = catalogue.MintAccountKey()
		}
		plan = plan.WithOperatorKeys(keys)
		for i := range plan.Users {
			kp, _ := nkeys.CreateAccount()
			plan.Users[i].SigningKey, _ = kp.PublicKey()
		}
	}
	r, err := emit.Render(plan, emit.AccountsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range r.Files {
		data, err := f.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return plan, dir
}

// edit replaces old by new in a golden file, in the block after the line holding after (the
// whole file when after is ""), once, and fails the test when old is not there.
func edit(t *testing.T, path, after, old, new string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	from := 0
	if after != "" {
		if from = strings.Index(s, after); from < 0 {
			t.Fatalf("%s holds no %s", path, after)
		}
	}
	i := strings.Index(s[from:], old)
	if i < 0 {
		t.Fatalf("%s holds no %s after %s", path, old, after)
	}
	s = s[:from+i] + new + s[from+i+len(old):]
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func prove(t *testing.T, plan *compiler.Plan, dir string) *Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := Run(ctx, plan, Options{Golden: dir})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// An answer aimed at a subject follows its account's exact imports only (docs/nats.md, "What
// accounts do not block"): one exact import more than the grants lets a consumer info's answer be
// stored as another module's event (the reply-injection case above), while a wildcard import of
// the same subjects carries no answer at all. Checked here so the class's widening case stays an
// exact import for a reason the server gives.
func TestAnAnswerFollowsOnlyAnAccountsExactImports(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: a proof of its own")
	}
	plan, dir := goldenFor(t, catalogue.IsolationPerModule, catalogue.AuthPassword)
	edit(t, filepath.Join(dir, emit.AccountsFile), "", `{service: {account: "proof", subject: "mesh.mod.catalog.event.upgraded"}}`,
		`{service: {account: "proof", subject: "mesh.mod.catalog.event.upgraded"}}
      {service: {account: "proof", subject: "mesh.mod.registry.event.*"}}`)
	r := prove(t, plan, dir)
	for _, f := range r.Failures {
		if f.Class == Injection.ID {
			t.Fatalf("an answer crossed a wildcard import: %+v", f)
		}
	}
	if r.Classes[classOrder(Injection.ID)].Tries == 0 {
		t.Fatal("no injection was tried")
	}
}
