package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The action, run as GitHub runs it: a scratch catalogue repository with a base branch and a
// pull-request branch, cloned at depth 1 (actions/checkout's default), and action.yml's steps
// run one by one — its expressions evaluated against the pull request's event, each run: block
// in bash as the runner does, step outputs carried to the next — with a stand-in `gh` on PATH
// that records the comment. The action must fetch the base itself, comment the real change in
// the catalogue's words with what it breaks, and, from a fork, show the plan in the job summary
// without commenting or uploading, failing only on findings.
func TestTheAction(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	origin := t.TempDir()
	git := func(dir string, args ...string) string { t.Helper(); return runGit(t, dir, args...) }
	// commit writes files over the catalogue, mints what is missing and emits the golden files
	// (so the action's emit --check passes), and commits: a catalogue repository as kept. A
	// catalogue with errors cannot be emitted: broken commits it as a pull request would.
	broken := false
	commit := func(files map[string]string, msg string) {
		t.Helper()
		for name, data := range files {
			p := filepath.Join(origin, "cat", name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, args := range [][]string{{"mint", "--dir", "cat", "--missing"}, {"emit", "cat"}} {
			if broken {
				break
			}
			cmd := exec.Command("meshc", args...)
			cmd.Dir = origin
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("meshc %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
		git(origin, "add", "-A")
		git(origin, "commit", "-q", "-m", msg)
	}
	git(origin, "init", "-q", "-b", "main")
	commit(map[string]string{
		"mesh.yaml":              "name: novox\nstreams:\n  events: {max-age: 720h}\n",
		"modules/registry.yaml":  "module: registry\nemits: [image.pushed, image.deleted]\n",
		"modules/photos.yaml":    "module: photos\n",
		"inventory.yaml":         "nodes:\n  - {name: anchor, runs: [registry, photos]}\n",
		".meshc/.gitignore":      "*\n",
		"../README.md":           "a catalogue repository\n",
		"../.github/placeholder": "\n",
	}, "base")
	base := git(origin, "rev-parse", "HEAD")
	// The pull request: photos starts reading registry's image.pushed, registry stops emitting
	// image.deleted (a contract break), and EVENTS keeps a day instead of a month (retention).
	git(origin, "checkout", "-q", "-b", "pr")
	change := map[string]string{
		"mesh.yaml":             "name: novox\nstreams:\n  events: {max-age: 24h}\n",
		"modules/registry.yaml": "module: registry\nemits: [image.pushed]\n",
		"modules/photos.yaml":   "module: photos\nconsumes:\n  - registry.image.pushed\n",
	}
	commit(change, "photos reads pushes")
	// The same change with every break approved, as its findings say to.
	git(origin, "checkout", "-q", "-b", "pr-approved")
	commit(map[string]string{"mesh.yaml": `name: novox
streams:
  events: {max-age: 24h}
approve:
  - {rule: retention, on: EVENTS, from: max-age 720h, to: max-age 24h, reason: nobody reads a day-old event}
  - {rule: contract, on: registry.image.deleted, reason: nobody consumed it}
  - {rule: widening, on: mod.anchor.photos, to: read its own consumer EVENTS/anchor_photos, reason: photos indexes pushes}
`}, "approve")
	// A pull request whose catalogue has errors: a manifest consuming an event nobody emits, and
	// another misspelling a key. It cannot be compiled, so there is no plan to show.
	git(origin, "checkout", "-q", "-b", "pr-broken", "pr")
	broken = true
	commit(map[string]string{
		"modules/stray.yaml":  "module: stray\nconsumes: [nobody.happened]\n",
		"modules/photos.yaml": "module: photos\nconsume:\n  - registry.image.pushed\n",
	}, "broken")
	git(origin, "checkout", "-q", "main")

	for _, tc := range []struct {
		name, branch string
		fork, fails  bool
	}{
		{"pull request", "pr", false, true},
		{"from a fork", "pr", true, true},
		{"from a fork, every break approved", "pr-approved", true, false},
		{"a catalogue with lint errors", "pr-broken", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := filepath.Join(t.TempDir(), "work")
			git(filepath.Dir(work), "clone", "-q", "--depth", "1", "--branch", tc.branch, "file://"+origin, work)
			if git(work, "rev-parse", "--is-shallow-repository") != "true" {
				t.Fatal("the checkout is not shallow")
			}
			if err := exec.Command("git", "-C", work, "cat-file", "-e", base+"^{commit}").Run(); err == nil {
				t.Fatal("a depth-1 checkout already holds the base: the test proves nothing")
			}
			headRepo := "novox/catalogue"
			if tc.fork {
				headRepo = "someone/catalogue"
			}
			job := runAction(t, work, map[string]string{
				"inputs.catalogue":                              "cat",
				"github.repository":                             "novox/catalogue",
				"github.event_name":                             "pull_request",
				"github.token":                                  "read-only-in-a-fork",
				"github.event.pull_request.number":              "7",
				"github.event.pull_request.base.sha":            base,
				"github.event.pull_request.head.repo.full_name": headRepo,
			})
			if job.failed != tc.fails {
				t.Fatalf("the job failed: %v, want %v; log:\n%s", job.failed, tc.fails, job.log)
			}
			if !strings.Contains(job.log, "fetching the pull request's base") {
				t.Errorf("the action did not fetch the base:\n%s", job.log)
			}
			if tc.branch == "pr-broken" {
				// The comment says there is no plan and why — the count and the first errors —
				// and replaces the last plan; the failure names the errors, not the golden files
				// (which cannot be judged while the catalogue is not compiled).
				if !strings.Contains(job.log, "meshc: meshc lint found 2 error(s) in the catalogue, so it was not compiled: see the annotations") {
					t.Errorf("the failure does not name the catalogue's errors:\n%s", job.log)
				}
				if strings.Contains(job.log, "golden") {
					t.Errorf("the failure blames the golden files:\n%s", job.log)
				}
				for _, w := range []string{"<!-- meshc plan -->", "**meshc lint found 2 error(s) in the catalogue, so there is no plan**",
					"cat/modules/stray.yaml:2:12: error: consume-agreement: ", "cat/modules/photos.yaml:2:1: error: yaml: ", "2 errors, "} {
					if !strings.Contains(job.comment, w) {
						t.Errorf("the comment lacks %q:\n%s", w, job.comment)
					}
				}
				if strings.Contains(job.comment, "to create") {
					t.Errorf("the comment shows a plan:\n%s", job.comment)
				}
				if job.comment != job.summary {
					t.Errorf("the comment is not what the summary says:\n%s\n---\n%s", job.comment, job.summary)
				}
				return
			}
			if tc.fails && !strings.Contains(job.log, "meshc: meshc lint found what the change breaks: see the annotations") {
				t.Errorf("the job failed for something else than findings:\n%s", job.log)
			}
			// The plan is the real change, against the base, in the catalogue's words, with what
			// it breaks: in the job summary always, and as the comment unless from a fork.
			wants := []string{
				"<!-- meshc plan -->",
				"**1 to create, 1 to change, 0 to replace, 0 to delete, ",
				"| `+` | consumer `EVENTS/anchor_photos` | created |",
				"| `+` | photos may now read registry's image.pushed | `cat/modules/photos.yaml:3:5` consumes registry.image.pushed |",
				"stream EVENTS keeps less: max-age 720h → 24h",
				"event registry.image.deleted is gone",
				"bus user mod.anchor.photos may now read its own consumer EVENTS/anchor_photos",
			}
			if tc.fails {
				wants = append(wants, "**3 breaking changes, 0 of them approved**", "| `retention` | error |", "| `contract` | error |")
			} else {
				wants = append(wants, "**3 breaking changes, 3 of them approved**")
			}
			for _, w := range wants {
				if !strings.Contains(job.summary, w) {
					t.Errorf("the job summary lacks %q:\n%s", w, job.summary)
				}
			}
			if tc.fork {
				if job.comment != "" || job.ghCalls != "" {
					t.Errorf("from a fork the action called gh (%q)", job.ghCalls)
				}
				if job.uploaded {
					t.Error("from a fork the action uploaded SARIF")
				}
				return
			}
			if job.comment != job.summary {
				t.Errorf("the comment is not the plan in the summary:\n%s\n---\n%s", job.comment, job.summary)
			}
			if !job.uploaded {
				t.Error("the SARIF upload did not run")
			}
			// GitHub annotations with the breaking findings, on the lines they are about.
			if !strings.Contains(job.log, "::error file=cat/mesh.yaml,line=3,col=3,title=retention::") {
				t.Errorf("no retention annotation:\n%s", job.log)
			}
		})
	}
}

// job is what running the action did.
type job struct {
	failed, uploaded      bool
	log, summary, comment string
	ghCalls               string
}

// runAction runs action.yml's steps in workspace with the given context, as the runner does:
// `uses:` steps are noted (actions/setup-go: Go is here; upload-sarif: whether it runs), the
// install step is skipped (meshc is this test binary, on PATH), and every other step's run:
// block runs in bash -eo pipefail with its env: evaluated, until one fails.
func runAction(t *testing.T, workspace string, context map[string]string) job {
	t.Helper()
	data, err := os.ReadFile("../../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var action struct {
		Inputs map[string]struct {
			Default string `yaml:"default"`
		} `yaml:"inputs"`
		Runs struct {
			Steps []struct {
				ID               string            `yaml:"id"`
				Name             string            `yaml:"name"`
				If               string            `yaml:"if"`
				Uses             string            `yaml:"uses"`
				Run              string            `yaml:"run"`
				Shell            string            `yaml:"shell"`
				Env              map[string]string `yaml:"env"`
				WorkingDirectory string            `yaml:"working-directory"`
			} `yaml:"steps"`
		} `yaml:"runs"`
	}
	if err := yaml.Unmarshal(data, &action); err != nil {
		t.Fatal(err)
	}
	actionPath, _ := filepath.Abs("../..")
	temp := t.TempDir()
	ctx := map[string]string{"runner.temp": temp, "github.action_path": actionPath, "github.workspace": workspace}
	for k, v := range context {
		ctx[k] = v
	}
	for name, in := range action.Inputs {
		if _, ok := ctx["inputs."+name]; !ok {
			ctx["inputs."+name] = expand(t, in.Default, ctx)
		}
	}
	// The stand-in gh: it records every call, refuses --edit-last while there is no comment
	// yet (as gh does), and keeps the comment's body.
	bin := filepath.Join(temp, "bin")
	os.MkdirAll(bin, 0o755)
	gh := `#!/usr/bin/env bash
echo "gh $*" >> "$RUNNER_TEMP/gh.calls"
body=
while [ $# -gt 0 ]; do case "$1" in --body-file) body=$2; shift;; --edit-last) edit=1;; esac; shift; done
if [ -n "${edit:-}" ] && [ ! -f "$RUNNER_TEMP/gh.comment" ]; then echo "no comments found" >&2; exit 1; fi
cp "$body" "$RUNNER_TEMP/gh.comment"
`
	if err := os.WriteFile(filepath.Join(bin, "gh"), []byte(gh), 0o755); err != nil {
		t.Fatal(err)
	}
	var j job
	var log strings.Builder
	summary := filepath.Join(temp, "summary.md")
	for i, step := range action.Runs.Steps {
		if step.If != "" && evalIf(t, step.If, ctx) != "true" {
			fmt.Fprintf(&log, "-- step %d %s: skipped\n", i, step.Name)
			continue
		}
		switch {
		case strings.HasPrefix(step.Uses, "actions/setup-go@"):
			continue
		case strings.HasPrefix(step.Uses, "github/codeql-action/upload-sarif@"):
			j.uploaded = true
			continue
		case step.Uses != "":
			t.Fatalf("step %d uses %s, which this test does not know how to stand in for", i, step.Uses)
		case step.Name == "Install meshc":
			if !strings.Contains(step.Run, "action/install.sh") {
				t.Fatalf("the install step no longer runs action/install.sh (TestTheActionsMeshcNamesItsCommit): %q", step.Run)
			}
			continue
		}
		if step.Shell != "bash" {
			t.Fatalf("step %d runs in %q: the test runs bash", i, step.Shell)
		}
		script := filepath.Join(temp, fmt.Sprintf("step%d.sh", i))
		os.WriteFile(script, []byte(expand(t, step.Run, ctx)), 0o644)
		output := filepath.Join(temp, fmt.Sprintf("step%d.out", i))
		os.WriteFile(output, nil, 0o644)
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", script)
		cmd.Dir = workspace
		if step.WorkingDirectory != "" {
			cmd.Dir = expand(t, step.WorkingDirectory, ctx)
		}
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"),
			"GITHUB_ACTION_PATH="+actionPath, "GITHUB_WORKSPACE="+workspace, "RUNNER_TEMP="+temp,
			"GITHUB_OUTPUT="+output, "GITHUB_STEP_SUMMARY="+summary, "CI=true")
		for k, v := range step.Env {
			cmd.Env = append(cmd.Env, k+"="+expand(t, v, ctx))
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		fmt.Fprintf(&log, "-- step %d %s\n%s", i, step.Name, out.String())
		outputs, _ := os.ReadFile(output)
		for _, line := range strings.Split(string(outputs), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok && step.ID != "" {
				ctx["steps."+step.ID+".outputs."+k] = v
			}
		}
		if err != nil {
			j.failed = true
			break
		}
	}
	j.log = log.String()
	read := func(p string) string { b, _ := os.ReadFile(p); return string(b) }
	j.summary, j.comment, j.ghCalls = read(summary), read(filepath.Join(temp, "gh.comment")), read(filepath.Join(temp, "gh.calls"))
	return j
}

var expression = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// expand replaces each ${{ … }} in s with its value.
func expand(t *testing.T, s string, ctx map[string]string) string {
	return expression.ReplaceAllStringFunc(s, func(m string) string {
		return evalIf(t, expression.FindStringSubmatch(m)[1], ctx)
	})
}

// evalIf evaluates the expressions action.yml uses: a context path, a 'string', ==, != and &&.
// Anything else fails the test, so a new kind of expression is taught here before it is trusted.
func evalIf(t *testing.T, e string, ctx map[string]string) string {
	t.Helper()
	e = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(e), "${{"), "}}"))
	if l, r, ok := strings.Cut(e, "&&"); ok {
		return fmt.Sprint(evalIf(t, l, ctx) == "true" && evalIf(t, r, ctx) == "true")
	}
	for _, op := range []string{"==", "!="} {
		if l, r, ok := strings.Cut(e, op); ok {
			return fmt.Sprint((evalIf(t, l, ctx) == evalIf(t, r, ctx)) == (op == "=="))
		}
	}
	if strings.HasPrefix(e, "'") && strings.HasSuffix(e, "'") {
		return strings.Trim(e, "'")
	}
	if !regexp.MustCompile(`^[a-z_][a-z0-9_.-]*$`).MatchString(e) {
		t.Fatalf("action.yml uses the expression %q, which this test cannot evaluate", e)
	}
	return ctx[e]
}

// GitHub hands an action over as an archive without .git, where Go records no commit: the
// action's meshc said "commit unknown", the first thing a bug report needs. action/install.sh gives
// the commit with -ldflags (which TestVersionOfABuildWithoutVCS proves meshc then says): the ref
// when it is a commit, else what the ref names in the action's repository, and nothing extra
// in a git checkout, where Go says it itself. A stand-in `go` records how it was asked to build.
func TestTheActionsMeshcNamesItsCommit(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	script, _ := filepath.Abs("../../action/install.sh")
	bin := t.TempDir()
	standIn := `#!/usr/bin/env bash
echo "$*" >> "$GO_CALLS"
[ "$1" = version ] && exit 0
exit 0
`
	for _, name := range []string{"go", "meshc"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(standIn), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A repository standing in for github.com/meshc-dev/meshc, its main at a known commit.
	server := t.TempDir()
	repo := filepath.Join(server, "meshc-dev", "meshc")
	gitIn := func(dir string, args ...string) string { t.Helper(); return runGit(t, dir, args...) }
	os.MkdirAll(repo, 0o755)
	gitIn(repo, "init", "-q", "-b", "main")
	gitIn(repo, "commit", "-q", "--allow-empty", "-m", "meshc")
	mainSha := gitIn(repo, "rev-parse", "HEAD")
	checkout := t.TempDir()
	gitIn(checkout, "init", "-q")

	const sha = "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		name, path, ref, repository string
		want                        string // the go install line
		warns                       bool
	}{
		{"named by a commit", t.TempDir(), sha, "meshc-dev/meshc", "install -ldflags -X github.com/meshc-dev/meshc/internal/buildinfo.commit=" + sha + " ./cmd/meshc", false},
		{"named by a branch", t.TempDir(), "main", "meshc-dev/meshc", "install -ldflags -X github.com/meshc-dev/meshc/internal/buildinfo.commit=" + mainSha + " ./cmd/meshc", false},
		{"a branch that cannot be resolved", t.TempDir(), "gone", "meshc-dev/meshc", "install ./cmd/meshc", true},
		{"a git checkout (uses: ./)", checkout, "", "", "install ./cmd/meshc", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := filepath.Join(t.TempDir(), "calls")
			cmd := exec.Command("bash", script)
			cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "GO_CALLS="+calls,
				"GITHUB_ACTION_PATH="+tc.path, "ACTION_REF="+tc.ref, "ACTION_REPOSITORY="+tc.repository,
				"GITHUB_SERVER_URL=file://"+server)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("install.sh: %v\n%s", err, out)
			}
			got, _ := os.ReadFile(calls)
			lines := strings.Split(strings.TrimSpace(string(got)), "\n")
			if len(lines) != 2 || lines[0] != tc.want || lines[1] != "version" {
				t.Errorf("install.sh ran %q, want %q then meshc version", lines, tc.want)
			}
			if warned := strings.Contains(string(out), "::warning"); warned != tc.warns {
				t.Errorf("warned: %v, want %v\n%s", warned, tc.warns, out)
			}
		})
	}
}

// runGit runs git in dir as a CI job would (a committer named ci), failing the test on an error.
func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=ci", "GIT_AUTHOR_EMAIL=ci@localhost", "GIT_COMMITTER_NAME=ci", "GIT_COMMITTER_EMAIL=ci@localhost")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
