package review

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"

	"github.com/meshc-dev/meshc/internal/output"
)

const (
	bobHash        = "$2a$06$Cj3ONs794RN8xHbeGbjCveQbaCTmE0G.nHFO.huqzkfWvu1FkCo0K"
	controllerHash = "$2a$06$RIhgbLJrEEjFdd7EXwbXzuM7OHdz9TBerSURE2S7g6gk3zg.0FhAu"
	rotatedHash    = "$2a$06$o6helysq4k8ebedRGnMcz.LK49JAPEuI8PSAJJNf/YpjOiEOhYBTu"
)

// swap gives mesh-controller the hash recorded for person.bob, and rotates node.anchor's: no
// grant changes, and before this the review said "0 users added, 0 removed, 0 with changed
// permissions" — after apply whoever knew bob's password logged in as mesh-controller.
const swap = `-- base/mesh.yaml --
name: novox
-- base/modules/catalog.yaml --
module: catalog
tools: [lookup]
-- base/inventory.yaml --
nodes:
  - {name: anchor, runs: [catalog]}
people:
  - {name: bob, may-call: [catalog.lookup]}
-- base/credentials.yaml --
mesh-controller: ` + controllerHash + `
person.bob: ` + bobHash + `
node.anchor: $2a$06$Q6mabJCrgtj.L7OpVcNZputKgz/6PrRcFb10aBVmlER.qd4a58jOu
-- head/mesh.yaml --
name: novox
-- head/modules/catalog.yaml --
module: catalog
tools: [lookup]
-- head/inventory.yaml --
nodes:
  - {name: anchor, runs: [catalog]}
people:
  - {name: bob, may-call: [catalog.lookup]}
-- head/credentials.yaml --
mesh-controller: ` + bobHash + `
person.bob: ` + bobHash + `
node.anchor: ` + rotatedHash + `
`

// A credential that moves is a change of the review in every format: taken from another user it
// says whose, and re-minted it says whoever minted it can log in; both are counted.
func TestACredentialSwapIsSeenInReview(t *testing.T) {
	r := compare(t, swap).Review(false)
	if n := r.Count(); n.UsersReminted != 2 || n.UsersChanged != 2 {
		t.Fatalf("counts %+v, want 2 users re-minted (and changed)", n)
	}
	var text, md, js bytes.Buffer
	for f, w := range map[output.Format]*bytes.Buffer{output.Text: &text, output.Markdown: &md, output.JSON: &js} {
		if err := r.Write(w, f); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{
		"0 users added, 0 removed, 2 with changed permissions, 0 widened, 2 re-minted.",
		"~ mesh-controller takes the credential person.bob records: whoever holds it can log in as mesh-controller",
		"~ node.anchor is re-minted (…d4a58jOu → …iEOhYBTu): whoever minted it can log in as node.anchor",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text review lacks %q:\n%s", want, text.String())
		}
	}
	if !strings.Contains(md.String(), "**takes the credential person.bob records: whoever holds it can log in as mesh-controller**") {
		t.Errorf("the markdown review lacks the swap:\n%s", md.String())
	}
	var doc struct {
		Review struct {
			Reminted int `json:"users_reminted"`
		} `json:"review"`
		Users []struct {
			User       string `json:"user"`
			Credential *struct {
				Was, Now string
				Of       []string
			} `json:"credential"`
		} `json:"users"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, u := range doc.Users {
		if u.User == "mesh-controller" && u.Credential != nil && len(u.Credential.Of) == 1 && u.Credential.Of[0] == "person.bob" {
			found = true
		}
	}
	if !found || doc.Review.Reminted != 2 {
		t.Fatalf("the JSON review: %s", js.String())
	}
	// No hash is ever printed whole.
	for _, out := range []string{text.String(), md.String(), js.String()} {
		for _, h := range []string{bobHash, controllerHash, rotatedHash} {
			if strings.Contains(out, h) {
				t.Fatalf("a review printed a whole hash: %s", out)
			}
		}
	}
}

// A catalogue whose credentials did not move shows no credential change: only an added user's
// first credential, which is its being added.
func TestAnUnmovedCredentialIsQuiet(t *testing.T) {
	same := strings.Replace(strings.Replace(swap, "head/credentials.yaml --\nmesh-controller: "+bobHash, "head/credentials.yaml --\nmesh-controller: "+controllerHash, 1), "node.anchor: "+rotatedHash, "node.anchor: $2a$06$Q6mabJCrgtj.L7OpVcNZputKgz/6PrRcFb10aBVmlER.qd4a58jOu", 1)
	r := compare(t, same).Review(false)
	if n := r.Count(); n.UsersReminted != 0 || len(r.Users) != 0 {
		t.Fatalf("an unchanged catalogue: %+v, users %+v", n, r.Users)
	}
}

// In operator mode keys.yaml is reviewed too: a changed probe key and a re-keyed account are
// rows of their own, each saying what it does to the bus; the mesh's account re-keyed says apply
// refuses it.
func TestKeysThatMoveAreSeenInReview(t *testing.T) {
	key := func(prefix string) string {
		t.Helper()
		var kp nkeys.KeyPair
		var err error
		if prefix == "O" {
			kp, err = nkeys.CreateOperator()
		} else {
			kp, err = nkeys.CreateAccount()
		}
		if err != nil {
			t.Fatal(err)
		}
		pub, _ := kp.PublicKey()
		return pub
	}
	op, signing, system, mesh, catalog := key("O"), key("O"), key("A"), key("A"), key("A")
	keys := func(probe, meshKey string) string {
		return "operator: " + op + "\nsigning-key: " + signing + "\nsystem-account: " + system + "\nprobe-key: " + probe +
			"\naccounts:\n  novox: " + meshKey + "\n  mod.catalog: " + catalog + "\n"
	}
	side := func(name, probe, meshKey string) string {
		return "-- " + name + "/mesh.yaml --\nname: novox\nauth: operator\n-- " + name + "/modules/catalog.yaml --\nmodule: catalog\n-- " + name + "/keys.yaml --\n" + keys(probe, meshKey)
	}
	probe := key("A")
	r := compare(t, side("base", probe, mesh)+side("head", key("A"), key("A"))).Review(false)
	if len(r.Keys) != 2 {
		t.Fatalf("keys changed: %+v, want the probe key and the mesh's account", r.Keys)
	}
	var text bytes.Buffer
	if err := r.Write(&text, output.Text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Keys: 2 keys changed in keys.yaml.", "~ probe key: " + probe + " → ", "~ account novox: " + mesh + " → ", "apply refuses to move it"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the review lacks %q:\n%s", want, text.String())
		}
	}
	if r := compare(t, side("base", probe, mesh)+side("head", probe, mesh)).Review(false); len(r.Keys) != 0 {
		t.Fatalf("keys that did not move: %+v", r.Keys)
	}
}
