package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/catalogue/cataloguetest"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/natstest"
	"github.com/meshc-dev/meshc/principal"
	"github.com/meshc-dev/meshc/up"
)

// A pull request's plan job connects as mesh-planner (controller.planner): `meshc plan` as it
// says what mesh-controller's says, and whatever holds its password can change nothing — not
// through apply, and not through any JetStream request or subject apply's own would use.
func TestThePlannerPlansAsTheControllerDoesAndChangesNothing(t *testing.T) {
	for _, isolation := range []string{catalogue.IsolationPerModule, catalogue.IsolationShared} {
		t.Run(isolation, func(t *testing.T) { plannerPlansAndChangesNothing(t, isolation) })
	}
}

func plannerPlansAndChangesNothing(t *testing.T, isolation string) {
	isolateNATSSettings(t)
	dir := cataloguetest.Extract(t, "testdata/up.txtar")
	meshYAML := filepath.Join(dir, "mesh.yaml")
	data, _ := os.ReadFile(meshYAML)
	if err := os.WriteFile(meshYAML, append(data, []byte("isolation: "+isolation+"\ncontroller: {planner: true}\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	pw := mint(t, dir, "--missing")
	if pw[compiler.PlannerUser] == "" {
		t.Fatalf("mint --missing minted no %s: %v", compiler.PlannerUser, pw)
	}
	if code, _, errs := meshc(t, "emit", dir); code != 0 {
		t.Fatalf("emit: %d %s", code, errs)
	}
	state := t.TempDir()
	accounts, _ := os.ReadFile(filepath.Join(dir, "golden", "accounts.conf"))
	if err := os.WriteFile(filepath.Join(state, "accounts.conf"), accounts, 0o600); err != nil {
		t.Fatal(err)
	}
	conf, err := up.WriteServerConf(state, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	url := natstest.FromConfig(t, conf, false).ClientURL()
	t.Setenv("NATS_URL", url)
	as := func(user string) {
		t.Setenv("NATS_USER", user)
		t.Setenv("NATS_PASSWORD", pw[user])
	}

	as(compiler.ControllerUser)
	if code, out, errs := meshc(t, "apply", dir); code != exitOK {
		t.Fatalf("apply as the controller: %d\n%s%s", code, out, errs)
	}
	as(compiler.PlannerUser)
	if code, out, errs := meshc(t, "plan", dir); code != exitOK {
		t.Fatalf("plan as the planner of the bus just applied: %d\n%s%s", code, out, errs)
	}

	// A change: the planner's plan shows it, exactly as the controller's does.
	catalog := filepath.Join(dir, "modules", "catalog.yaml")
	if err := os.WriteFile(catalog, []byte("module: catalog\ntools: [lookup]\nconsumes: [builder.built, builder.failed]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	codeP, byPlanner, errs := meshc(t, "plan", dir)
	if codeP != exitFailed || !strings.Contains(byPlanner, "anchor_catalog") {
		t.Fatalf("plan as the planner after a change: %d\n%s%s", codeP, byPlanner, errs)
	}
	as(compiler.ControllerUser)
	if code, byController, _ := meshc(t, "plan", dir); code != codeP || byController != byPlanner {
		t.Fatalf("the planner's plan (%d) is not the controller's (%d):\n%s\n--\n%s", codeP, code, byPlanner, byController)
	}

	// The planner's apply writes nothing: the change is still to be made.
	as(compiler.PlannerUser)
	if code, out, errs := meshc(t, "apply", dir); code == exitOK || !strings.Contains(errs, "connect as mesh-controller to apply") {
		t.Fatalf("apply as the planner: %d, not refused saying who applies:\n%s%s", code, out, errs)
	}
	as(compiler.ControllerUser)
	if code, out, _ := meshc(t, "plan", dir); code != exitFailed || out != byPlanner {
		t.Fatalf("after the planner's apply the plan is not what it was: %d\n%s", code, out)
	}

	// The pull request's flow: the plan saved as the planner, applied on merge as the controller.
	saved := filepath.Join(t.TempDir(), "plan.json")
	as(compiler.PlannerUser)
	if code, out, errs := meshc(t, "plan", dir, "--save", saved); code != exitFailed {
		t.Fatalf("plan --save as the planner: %d\n%s%s", code, out, errs)
	}
	as(compiler.ControllerUser)
	if code, out, errs := meshc(t, "apply", saved); code != exitOK {
		t.Fatalf("the planner's saved plan, applied as the controller: %d\n%s%s", code, out, errs)
	}
	as(compiler.PlannerUser)
	if code, out, errs := meshc(t, "plan", dir); code != exitOK {
		t.Fatalf("plan as the planner after the saved plan was applied: %d\n%s%s", code, out, errs)
	}

	// Every write apply makes, and every read of a message, refused to the planner by the server.
	c, err := principal.Connect(url, compiler.PlannerUser, nats.UserInfo(compiler.PlannerUser, pw[compiler.PlannerUser]))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	consumer := "EVENTS." + compiler.ModuleConsumer("anchor", "catalog")
	for _, subject := range []string{
		"$JS.API.STREAM.CREATE.STOLEN", "$JS.API.STREAM.UPDATE.EVENTS", "$JS.API.STREAM.DELETE.EVENTS",
		"$JS.API.STREAM.PURGE.EVENTS", "$JS.API.STREAM.MSG.DELETE.EVENTS", "$JS.API.STREAM.MSG.GET.EVENTS",
		"$JS.API.DIRECT.GET.EVENTS", "$JS.API.DIRECT.GET.EVENTS.mesh.mod.builder.event.built",
		"$JS.API.CONSUMER.CREATE.EVENTS", "$JS.API.CONSUMER.DURABLE.CREATE.EVENTS.stolen",
		"$JS.API.CONSUMER.CREATE.EVENTS.stolen.>", "$JS.API.CONSUMER.DELETE." + consumer,
		"$JS.API.CONSUMER.MSG.NEXT." + consumer, "$JS.API.CONSUMER.PAUSE." + consumer,
		"$JS.API.STREAM.MSG.DELETE." + compiler.ApplyBucketStream, "$JS.API.STREAM.PURGE." + compiler.ApplyBucketStream,
		"$JS.API.DIRECT.GET.KV_other.$KV.other.x", "$JS.API.STREAM.SNAPSHOT.EVENTS", "$JS.API.META.LEADER.STEPDOWN",
		"$JS.API.ACCOUNT.PURGE.novox",
	} {
		if err := c.IsRefusedRequesting(subject); err != nil {
			t.Error(err)
		}
	}
	for _, subject := range []string{"$KV." + compiler.ApplyBucket + ".lock", "mesh.mod.builder.event.built", "$JS.ACK.EVENTS.>"} {
		if err := c.IsRefusedPublishing(subject, "x"); err != nil {
			t.Error(err)
		}
	}
	for _, subject := range []string{">", "mesh.>", "_INBOX.mesh-controller.>", "$JS.API.>"} {
		if err := c.IsRefusedSubscribing(subject); err != nil {
			t.Error(err)
		}
	}

	// A server whose accounts file gives the planner less than plan reads (an older file): the
	// refused read is said at once, naming it, not waited out as a server that did not answer.
	var older []string
	for _, line := range strings.Split(string(accounts), "\n") {
		if !strings.Contains(line, "KV_meshc") {
			older = append(older, line)
		}
	}
	state = t.TempDir()
	if err := os.WriteFile(filepath.Join(state, "accounts.conf"), []byte(strings.Join(older, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	if conf, err = up.WriteServerConf(state, 0, ""); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NATS_URL", natstest.FromConfig(t, conf, false).ClientURL())
	as(compiler.ControllerUser)
	if code, out, errs := meshc(t, "apply", dir); code != exitOK {
		t.Fatalf("apply as the controller on the older file: %d\n%s%s", code, out, errs)
	}
	as(compiler.PlannerUser)
	began := time.Now()
	code, out, errs := meshc(t, "plan", dir)
	if code != exitCantRun || !strings.Contains(errs, "the bus refused mesh-planner") || !strings.Contains(errs, "KV_meshc") || time.Since(began) > 20*time.Second {
		t.Fatalf("plan as a planner refused a read: %d after %s\n%s%s", code, time.Since(began), out, errs)
	}
}
