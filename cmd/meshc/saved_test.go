package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `meshc plan --save FILE` then `meshc apply FILE`, as mesh-controller on a bus running meshc's
// own accounts: the saved plan applies exactly, and is refused, naming what moved, when the
// catalogue or the bus changed since it was saved.
func TestASavedPlanAppliesExactlyAndRefusesAfterDrift(t *testing.T) {
	dir, url, pw := emittedBus(t, nil)
	t.Setenv("NATS_URL", url)
	t.Setenv("NATS_USER", "mesh-controller")
	t.Setenv("NATS_PASSWORD", pw["mesh-controller"])
	saved := filepath.Join(t.TempDir(), "plan.json")

	// Saving needs a bus: the plan records what the bus holds.
	t.Setenv("NATS_URL", "")
	if code, _, errs := meshc(t, "plan", dir, "--save", saved, "--server", ""); code != exitCantRun || !strings.Contains(errs, "--save records what the bus holds") {
		t.Fatalf("plan --save with no bus: %d %s", code, errs)
	}
	t.Setenv("NATS_URL", url)

	code, planned, errs := meshc(t, "plan", dir, "--save", saved)
	if code != exitFailed || !strings.Contains(errs, "saved to "+saved) {
		t.Fatalf("plan --save: %d\n%s%s", code, planned, errs)
	}

	// The catalogue moved: a manifest edited after the plan was saved.
	catalog := filepath.Join(dir, "modules", "catalog.yaml")
	before, _ := os.ReadFile(catalog)
	os.WriteFile(catalog, append(before, []byte("description: changed after the review\n")...), 0o644)
	code, _, errs = meshc(t, "apply", saved)
	if code != exitFailed || !strings.Contains(errs, "the catalogue in "+dir+" changed since the plan was saved") || !strings.Contains(errs, "modules/catalog.yaml changed") {
		t.Fatalf("apply of a plan whose catalogue moved: %d %s", code, errs)
	}
	os.WriteFile(catalog, before, 0o644)

	// credentials.yaml moved too: a credential re-minted after the review is a change the review
	// did not show (and in operator mode keys.yaml is read and digested the same way).
	creds := filepath.Join(dir, "credentials.yaml")
	credsBefore, _ := os.ReadFile(creds)
	mint(t, dir, "mesh-controller")
	code, _, errs = meshc(t, "apply", saved)
	if code != exitFailed || !strings.Contains(errs, "credentials.yaml changed") {
		t.Fatalf("apply of a plan whose credentials moved: %d %s", code, errs)
	}
	os.WriteFile(creds, credsBefore, 0o600)

	// Another bus than the one it was saved against is refused.
	data, _ := os.ReadFile(saved)
	elsewhere := filepath.Join(t.TempDir(), "elsewhere.json")
	os.WriteFile(elsewhere, []byte(strings.Replace(string(data), `"identity": "server at `, `"identity": "cluster elsewhere`+"`"+`x`, 1)), 0o644)
	code, _, errs = meshc(t, "apply", elsewhere)
	if code != exitFailed || !strings.Contains(errs, "the plan was saved against cluster elsewhere") {
		t.Fatalf("apply of a plan saved against another bus: %d %s", code, errs)
	}

	// --prune was decided when the plan was made.
	if code, _, errs = meshc(t, "apply", saved, "--prune"); code != exitCantRun || !strings.Contains(errs, "drop --prune") {
		t.Fatalf("apply FILE --prune: %d %s", code, errs)
	}

	// Applied as saved: the same change set, and the bus then holds the plan.
	code, applied, errs := meshc(t, "apply", saved)
	if code != 0 || applied != planned {
		t.Fatalf("apply of the saved plan: %d\n%s\nwant the saved plan:\n%s\n%s", code, applied, planned, errs)
	}
	if code, out, errs := meshc(t, "plan", dir); code != 0 {
		t.Fatalf("plan after the saved plan was applied: %d\n%s%s", code, out, errs)
	}
	// Applied again (a CI job re-run after it succeeded): nothing is left to do, and that is no
	// drift of the bus.
	if code, _, errs := meshc(t, "apply", saved); code != 0 || !strings.Contains(errs, "the saved plan's changes are all on the bus already") {
		t.Fatalf("the saved plan applied twice: %d %s", code, errs)
	}

	// The bus moved: the plan was saved against the bus as it was, and applied since. A second
	// saved plan, made while the catalogue consumed one more event, is overtaken by an apply of
	// another catalogue that changes the same consumer.
	os.WriteFile(catalog, []byte("module: catalog\ntools: [lookup]\nconsumes: [builder.built, builder.failed]\n"), 0o644)
	if code, _, errs = meshc(t, "plan", dir, "--save", saved); code != exitFailed {
		t.Fatalf("plan --save: %d %s", code, errs)
	}
	other := copyCatalogue(t, dir, false)
	os.WriteFile(filepath.Join(other, "modules", "catalog.yaml"), []byte("module: catalog\ntools: [lookup]\nconsumes: [builder.failed]\n"), 0o644)
	if code, _, errs = meshc(t, "apply", other); code != 0 {
		t.Fatalf("the other apply: %d %s", code, errs)
	}
	code, _, errs = meshc(t, "apply", saved)
	if code != exitFailed || !strings.Contains(errs, "the bus changed since the plan was saved") || !strings.Contains(errs, "consumer EVENTS/anchor_catalog changed on the bus") {
		t.Fatalf("apply of a plan whose bus moved: %d %s", code, errs)
	}
	// Nothing was applied: the bus is still the other catalogue's.
	if code, _, _ := meshc(t, "plan", other); code != 0 {
		t.Fatal("a refused saved plan changed the bus")
	}
	// Saved again, it applies.
	if code, _, errs = meshc(t, "plan", dir, "--save", saved); code != exitFailed {
		t.Fatalf("plan --save: %d %s", code, errs)
	}
	if code, _, errs = meshc(t, "apply", saved); code != 0 {
		t.Fatalf("apply of the plan saved again: %d %s", code, errs)
	}
	if code, _, _ := meshc(t, "plan", dir); code != 0 {
		t.Fatal("the bus does not hold the saved plan")
	}

	// What is not a saved plan is refused as such.
	junk := filepath.Join(t.TempDir(), "junk.json")
	os.WriteFile(junk, []byte(`{"hello": 1}`), 0o644)
	if code, _, errs = meshc(t, "apply", junk); code != exitFailed || !strings.Contains(errs, "not a plan saved by meshc plan --save") {
		t.Fatalf("apply of a file that is not a saved plan: %d %s", code, errs)
	}
}

// A retention change the review approved in mesh.yaml is applied from the saved plan on merge
// without --allow-discard, as the example workflow applies it: the approval, carried by the plan
// that was reviewed, is what allows that drop and only that drop; a plain apply still needs the
// flag, and a drop the approval does not name is refused.
func TestASavedPlanCarriesTheApprovedDrops(t *testing.T) {
	dir, url, pw := emittedBus(t, nil)
	t.Setenv("NATS_URL", url)
	t.Setenv("NATS_USER", "mesh-controller")
	t.Setenv("NATS_PASSWORD", pw["mesh-controller"])
	if code, _, errs := meshc(t, "apply", dir); code != 0 {
		t.Fatalf("the first apply: %d %s", code, errs)
	}
	meshYAML := filepath.Join(dir, "mesh.yaml")
	base, _ := os.ReadFile(meshYAML)
	saved := filepath.Join(t.TempDir(), "plan.json")

	// The default max-age of EVENTS is none: lowering it to 24h drops what is older.
	approved := string(base) + "streams:\n  events: {max-age: 24h}\napprove:\n  - {rule: retention, on: EVENTS, from: max-age unlimited, to: max-age 24h, reason: nobody reads a day-old event}\n"
	os.WriteFile(meshYAML, []byte(approved), 0o644)
	code, planned, errs := meshc(t, "plan", dir, "--save", saved)
	if code != exitFailed || !strings.Contains(planned, "max_age: 0s → 24h0m0s") || !strings.Contains(planned, "(approved in mesh.yaml:") {
		t.Fatalf("plan --save of an approved drop: %d\n%s%s", code, planned, errs)
	}
	if code, _, errs := meshc(t, "apply", dir); code != exitFailed || !strings.Contains(errs, "--allow-discard") {
		t.Fatalf("a plain apply of the approved drop: %d %s", code, errs)
	}
	if code, _, errs := meshc(t, "apply", saved); code != 0 {
		t.Fatalf("apply of the reviewed plan carrying the approval: %d %s", code, errs)
	}
	if code, out, _ := meshc(t, "plan", dir); code != 0 {
		t.Fatalf("after the approved drop was applied: %d\n%s", code, out)
	}

	// The approval names 24h: a change to 1h is another drop, which it does not allow.
	os.WriteFile(meshYAML, []byte(strings.Replace(approved, "{max-age: 24h}", "{max-age: 1h}", 1)), 0o644)
	if code, _, errs := meshc(t, "plan", dir, "--save", saved); code != exitFailed {
		t.Fatalf("plan --save: %d %s", code, errs)
	}
	if code, _, errs := meshc(t, "apply", saved); code != exitFailed || !strings.Contains(errs, "max_age 24h0m0s → 1h0m0s") || !strings.Contains(errs, "--allow-discard") {
		t.Fatalf("apply of a plan with a drop nobody approved: %d %s", code, errs)
	}
}
