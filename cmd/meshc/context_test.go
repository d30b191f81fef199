package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jsm.go/natscontext"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// meshcIn runs meshc with stdin.
func meshcIn(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errs bytes.Buffer
	code := runWith(&invocation{stdout: &out, stderr: &errs, stdin: strings.NewReader(stdin)}, args)
	return code, out.String(), errs.String()
}

// meshc context writes a NATS CLI context for one user of a real bus (not up's), from what mint
// printed, and proves it: the context connects as the user, and a JetStream publish — a request
// whose acknowledgement comes to the user's inbox — is answered through the inbox prefix it
// carries, where a context written by hand without one times out. A password that is not the
// one recorded is refused before anything is written, and one the bus does not take yet (minted
// but not delivered) is said after the write.
func TestAContextForOneUserOfARealBus(t *testing.T) {
	// The context is written where every NATS client of the process would find it: this test's
	// configuration home, and so not beside another test.
	config := isolateNATSSettings(t)
	dir, url, pw := emittedBus(t, nil)
	if code, _, errs := meshc(t, "apply", dir, "--server", url, "--user", "mesh-controller", "--password", pw["mesh-controller"]); code != 0 {
		t.Fatalf("apply: %d %s", code, errs)
	}
	const user = "mod.anchor.builder"
	code, out, errs := meshcIn(t, user+" "+pw[user]+"\n", "context", user, "--dir", dir, "--server", url, "--stdin")
	if code != 0 || strings.TrimSpace(out) != user+"@novox" || !strings.Contains(errs, "connected as "+user) {
		t.Fatalf("meshc context: %d %q %s", code, out, errs)
	}
	var written map[string]string
	data, err := os.ReadFile(filepath.Join(config, "nats", "context", user+"@novox.json"))
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(data, &written)
	if written["inbox_prefix"] != "_INBOX."+user || written["user"] != user || written["url"] != url {
		t.Fatalf("the context holds %v", written)
	}

	publish := func(name string) error {
		nc, err := natscontext.Connect(name, nats.NoReconnect())
		if err != nil {
			return err
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err = js.Publish(ctx, "mesh.mod.builder.event.built", []byte("x"))
		return err
	}
	if err := publish(user + "@novox"); err != nil {
		t.Fatalf("publishing builder's event with the context meshc wrote: %v", err)
	}
	// The same user and password without the inbox prefix: the acknowledgement has nowhere to go.
	writeContext(t, config, "by-hand", map[string]string{"url": url, "user": user, "password": pw[user]})
	if err := publish("by-hand"); err == nil {
		t.Fatal("a context without the inbox prefix published and was acknowledged: the prefix proves nothing")
	}

	// A serving user has no inbox: its context names none, and the check is its connection.
	const server = "serve.anchor.catalog"
	code, _, errs = meshcIn(t, server+" "+pw[server]+"\n", "context", server, "--dir", dir, "--server", url, "--stdin", "--name", "serving")
	if code != 0 || !strings.Contains(errs, "connected as "+server+": the bus takes its credential\n") {
		t.Fatalf("meshc context for a serving user: %d %s", code, errs)
	}
	written = nil
	data, err = os.ReadFile(filepath.Join(config, "nats", "context", "serving.json"))
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(data, &written)
	if _, ok := written["inbox_prefix"]; ok || written["user"] != server {
		t.Fatalf("the serving user's context holds %v", written)
	}

	// Not the recorded password: refused, nothing written.
	code, _, errs = meshcIn(t, user+" hunter2\n", "context", user, "--dir", dir, "--server", url, "--stdin", "--name", "wrong")
	if code != 1 || !strings.Contains(errs, "is not the one credentials.yaml records for "+user) {
		t.Fatalf("a wrong password: %d %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(config, "nats", "context", "wrong.json")); err == nil {
		t.Fatal("a context was written for a password credentials.yaml does not record")
	}
	// Minted again, so credentials.yaml records the new one, but the bus still runs the old
	// file: written, and the check says the bus refused it.
	fresh := mint(t, dir, user)
	code, _, errs = meshcIn(t, user+" "+fresh[user]+"\n", "context", user, "--dir", dir, "--server", url, "--stdin", "--name", "fresh")
	if code != 1 || !strings.Contains(errs, "connecting with it as "+user+" failed") || !strings.Contains(strings.ToLower(errs), "authorization violation") {
		t.Fatalf("a password the bus does not have yet: %d %s", code, errs)
	}
	// Unknown users and missing credentials are said in one line each.
	if code, _, errs = meshcIn(t, "", "context", "mod.anchor.bilder", "--dir", dir, "--server", url, "--stdin"); code != 2 || !strings.Contains(errs, "did you mean mod.anchor.builder?") {
		t.Fatalf("an unknown user: %d %s", code, errs)
	}
	if code, _, errs = meshcIn(t, "", "context", user, "--dir", dir, "--server", url); code != 2 || !strings.Contains(errs, "--stdin (pipe `meshc mint "+user+"` into it)") {
		t.Fatalf("no credential: %d %s", code, errs)
	}
}
