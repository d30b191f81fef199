package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"go.yaml.in/yaml/v3"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/emit"
	"github.com/meshc-dev/meshc/operator"
)

// docs/commands.md's operator-mode commands, run as written: the block under its marker, line by line
// in bash, in the catalogue's directory, with HOME a scratch directory (so ~/mesh-secrets is
// where the page says) — on a new catalogue, and on one that ran on passwords (hashes recorded,
// golden/accounts.conf committed), against a real nats-server process whose configuration
// includes the operator.conf init wrote, from its own working directory (where operator.conf's
// resolver keeps the accounts). The CI lines get their `…` from the secrets the earlier lines
// wrote, nothing else: the first apply creates the mesh on the new bus, the one after changes
// nothing, and a module's credentials from ~/mesh-creds connect.
func TestTheCommandsPagesOperatorPath(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a nats-server process: not in -short")
	}
	data, err := os.ReadFile("../../docs/commands.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), "<!-- operator path: run as written by TestTheCommandsPagesOperatorPath -->\n```sh\n")
	if !ok {
		t.Fatal("docs/commands.md has no operator path marked for this test")
	}
	block, _, _ := strings.Cut(after, "```")
	var local, ci []string
	for _, line := range strings.Split(block, "\n") {
		switch {
		case strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "":
		case strings.HasPrefix(line, "MESHC_"):
			ci = append(ci, line)
		default:
			local = append(local, line)
		}
	}
	if len(local) != 3 || len(ci) != 2 {
		t.Fatalf("docs/commands.md's operator path has %d local and %d CI commands; this test knows 3 and 2:\n%s", len(local), len(ci), block)
	}

	for _, existing := range []bool{false, true} {
		name := "a new catalogue"
		if existing {
			name = "a catalogue that ran on passwords"
		}
		t.Run(name, func(t *testing.T) {
			isolateNATSSettings(t)
			dir := copyCatalogue(t, "../../examples/modules/catalogue", false)
			home := t.TempDir()
			if existing {
				for _, args := range [][]string{{"mint", "--dir", dir, "--missing"}, {"emit", dir}} {
					if code, _, errs := meshc(t, args...); code != 0 {
						t.Fatalf("meshc %v: %d %s", args, code, errs)
					}
				}
			}
			meshYAML := filepath.Join(dir, catalogue.MeshFile)
			m, _ := os.ReadFile(meshYAML)
			os.WriteFile(meshYAML, append(m, "auth: operator\n"...), 0o644)

			sh := func(line string, env ...string) string {
				t.Helper()
				cmd := exec.Command("bash", "--noprofile", "--norc", "-euo", "pipefail", "-c", line)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), append([]string{"HOME=" + home}, env...)...)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("docs/commands.md's %q: %v\n%s", line, err, out)
				}
				return string(out)
			}
			for _, line := range local {
				sh(line)
			}
			if _, err := os.Stat(filepath.Join(dir, catalogue.GoldenDir, emit.AccountsFile)); err == nil {
				t.Error("golden/accounts.conf outlived the switch to operator mode")
			}
			if code, out, errs := meshc(t, "emit", "--check", dir); code != 0 {
				t.Errorf("emit --check after the page's emit: %d\n%s%s", code, out, errs)
			}

			// The server's host: its configuration includes operator.conf, as the page says.
			host := t.TempDir()
			secrets := filepath.Join(home, "mesh-secrets")
			opConf, err := os.ReadFile(filepath.Join(secrets, operator.ServerConfFile))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(host, operator.ServerConfFile), opConf, 0o644)
			conf := filepath.Join(host, "server.conf")
			os.WriteFile(conf, []byte("host: 127.0.0.1\nport: -1\nhttp: \"127.0.0.1:-1\"\njetstream { store_dir: \""+filepath.Join(host, "js")+"\" }\ninclude \""+operator.ServerConfFile+"\"\n"), 0o644)
			s := startServerProcessIn(t, host, conf, "")

			secret := func(path string) string { b, _ := os.ReadFile(path); return string(b) }
			controller, err := os.ReadFile(filepath.Join(home, "mesh-creds", "mesh-controller.creds"))
			if err != nil {
				t.Fatal(err)
			}
			token, kp, err := operator.ParseCreds(controller)
			if err != nil {
				t.Fatal(err)
			}
			seed, _ := kp.Seed()
			values := map[string]string{
				"MESHC_OPERATOR_SIGNING_KEY": secret(filepath.Join(secrets, operator.SigningFile)),
				"MESHC_SYSTEM_CREDS":         secret(filepath.Join(secrets, operator.SystemFile)),
				"NATS_URL":                   s.url,
				"NATS_JWT":                   token,
				"NATS_SEED":                  string(seed),
			}
			var env []string
			for k, v := range values {
				env = append(env, "SECRET_"+k+"="+v)
			}
			given := regexp.MustCompile(`\b([A-Z_]+)=…`)
			withSecrets := func(line string) string {
				return given.ReplaceAllStringFunc(line, func(m string) string {
					k := strings.TrimSuffix(m, "=…")
					if _, ok := values[k]; !ok {
						t.Fatalf("the page's CI line names %s, which this test does not know the value of", k)
					}
					return k + `="$SECRET_` + k + `"`
				})
			}
			if said := sh(withSecrets(ci[0]), env...); !strings.Contains(said, "accounts: pushed") {
				t.Errorf("the first apply:\n%s", said)
			}
			if said := sh(withSecrets(ci[1]), env...); strings.Contains(said, "accounts: pushed") || !strings.Contains(said, "users and accounts: unchanged") || !strings.Contains(said, "0 to create, 0 to change") {
				t.Errorf("the apply after it changed something:\n%s", said)
			}
			nc, err := nats.Connect(s.url, nats.UserCredentials(filepath.Join(home, "mesh-creds", "mod.box.indexer.creds")),
				nats.CustomInboxPrefix("_INBOX.mod.box.indexer"), nats.NoReconnect())
			if err != nil {
				t.Fatalf("a module's credentials from ~/mesh-creds: %v", err)
			}
			nc.Close()
		})
	}
}

// The example workflow can start a mesh on servers that never ran it: a run by hand with its
// new-bus input applies main with --new-bus, where the apply on push (the reviewed plan) would
// refuse to start the mesh empty and has no way to be told otherwise.
func TestTheWorkflowStartsANewBusByHand(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../examples/github/meshc.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		On struct {
			Dispatch struct {
				Inputs map[string]struct {
					Type    string `yaml:"type"`
					Default bool   `yaml:"default"`
				} `yaml:"inputs"`
			} `yaml:"workflow_dispatch"`
		} `yaml:"on"`
		Jobs map[string]struct {
			If    string `yaml:"if"`
			Steps []struct {
				If  string            `yaml:"if"`
				Run string            `yaml:"run"`
				Env map[string]string `yaml:"env"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatal(err)
	}
	if in, ok := wf.On.Dispatch.Inputs["new-bus"]; !ok || in.Type != "boolean" || in.Default {
		t.Fatalf("the workflow has no manual run with a new-bus input that is off unless asked: %+v", wf.On.Dispatch)
	}
	apply := wf.Jobs["apply"]
	if !strings.Contains(apply.If, "workflow_dispatch") {
		t.Fatalf("the apply job does not run by hand: if %q", apply.If)
	}
	found := false
	for _, s := range apply.Steps {
		if strings.Contains(s.If, "workflow_dispatch") && strings.Contains(s.Run, "meshc apply . $NEW_BUS") &&
			s.Env["NEW_BUS"] == "${{ inputs.new-bus && '--new-bus' || '' }}" && s.Env["NATS_URL"] != "" {
			found = true
		}
		if strings.Contains(s.Run, "meshc-plan.json") && !strings.Contains(s.If, "push") {
			t.Errorf("a step using the reviewed plan runs on a manual run too: if %q, run %q", s.If, s.Run)
		}
	}
	if !found {
		t.Error("no step of the apply job applies main with --new-bus when the manual run asks")
	}
}
