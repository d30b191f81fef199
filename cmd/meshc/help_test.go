package main

import (
	"flag"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// helpOf is `meshc help NAME`, as a user reads it.
func helpOf(t *testing.T, name string) string {
	t.Helper()
	code, out, errs := meshc(t, "help", name)
	if code != exitOK || errs != "" {
		t.Fatalf("meshc help %s: %d %s", name, code, errs)
	}
	return out
}

// declaredFlags are the flags a command declares, as help writes their names: -s, --server.
func declaredFlags(t *testing.T, name string) []string {
	t.Helper()
	fs := flagsOf(name)
	if fs == nil {
		t.Fatalf("meshc %s never hands its flags to parseArgs", name)
	}
	if fs.Name() != name {
		t.Fatalf("meshc %s declares its flags on a FlagSet named %q: its help is looked up by that name", name, fs.Name())
	}
	var out []string
	fs.VisitAll(func(f *flag.Flag) { out = append(out, dashed(f.Name)) })
	return out
}

var (
	// listedFlag is a row of a help's flag blocks: "  -s, --server URL  the server…".
	listedFlag = regexp.MustCompile(`(?m)^  (-[^ ,]+(?:, -[^ ,]+)*)`)
	// usageFlag is a flag a usage line names, not after "meshc " (meshc --version is meshc's own).
	usageFlag = regexp.MustCompile(`(meshc)?(?:^|[\s\[|(])(--?[a-z][a-z-]*)`)
	// usageValue is a flag a usage line gives a value: --format FORMAT.
	usageValue = regexp.MustCompile(`(--?[a-z][a-z-]*) ([A-Z][A-Z:_]*)\b`)
)

// Every command's help lists every flag it declares and no other, and its usage lines name
// only flags it declares: the Flags block is rendered from the FlagSet, and this keeps it so.
func TestHelpListsExactlyTheDeclaredFlags(t *testing.T) {
	t.Parallel()
	for name, cmd := range commands {
		t.Run(name, func(t *testing.T) {
			declared := declaredFlags(t, name)
			help := helpOf(t, name)
			var listed []string
			for _, m := range listedFlag.FindAllStringSubmatch(help, -1) {
				listed = append(listed, strings.Split(m[1], ", ")...)
			}
			slices.Sort(declared)
			slices.Sort(listed)
			if !slices.Equal(declared, listed) {
				t.Errorf("meshc help %s lists %q; the command declares %q", name, listed, declared)
			}
			for _, m := range usageFlag.FindAllStringSubmatch(cmd.usage, -1) {
				if m[1] == "" && !slices.Contains(declared, m[2]) {
					t.Errorf("meshc %s's usage names %s, which it does not declare", name, m[2])
				}
			}
			// A usage's --flag VALUE calls the value what the Flags block calls it.
			for _, m := range usageValue.FindAllStringSubmatch(cmd.usage, -1) {
				label := regexp.MustCompile(`(?m)^  (?:-[^ ,]+, )*` + regexp.QuoteMeta(m[1]) + `(?:, -[^ ,]+)* ([A-Z][^ \n]*)`).FindStringSubmatch(help)
				if label != nil && label[1] != m[2] {
					t.Errorf("meshc %s's usage writes %s %s; its flags, %s %s", name, m[1], m[2], m[1], label[1])
				}
			}
		})
	}
}

// The completion scripts name every command and, for each, every flag it declares.
func TestCompletionNamesEveryCommandAndFlag(t *testing.T) {
	t.Parallel()
	script := map[string]string{}
	for _, shell := range shells {
		code, out, errs := meshc(t, "completion", shell)
		if code != exitOK {
			t.Fatalf("completion %s: %d %s", shell, code, errs)
		}
		script[shell] = out
	}
	for name := range commands {
		bash := regexp.MustCompile(`(?m)^    ` + regexp.QuoteMeta(name) + `\) flags="([^"]*)"`).FindStringSubmatch(script["bash"])
		if bash == nil {
			t.Errorf("the bash completion has no flags for %s", name)
			continue
		}
		if !slices.Contains(strings.Fields(firstWords(script["bash"], `COMPREPLY=($(compgen -W "`)), name) {
			t.Errorf("the bash completion does not complete the command %s", name)
		}
		if !slices.Contains(strings.Fields(firstWords(script["fish"], `__fish_use_subcommand -a "`)), name) {
			t.Errorf("the fish completion does not complete the command %s", name)
		}
		for _, f := range declaredFlags(t, name) {
			if !slices.Contains(strings.Fields(bash[1]), f) {
				t.Errorf("the bash completion of %s lacks %s", name, f)
			}
			opt := " -l " + strings.TrimPrefix(f, "--")
			if len(f) == 2 {
				opt = " -s " + f[1:]
			}
			if !strings.Contains(script["fish"], "'__fish_seen_subcommand_from "+name+"'"+opt+"\n") &&
				!strings.Contains(script["fish"], "'__fish_seen_subcommand_from "+name+"'"+opt+" ") {
				t.Errorf("the fish completion of %s lacks %s", name, f)
			}
		}
	}
	if !strings.HasPrefix(script["zsh"], "#compdef meshc\n") || !strings.Contains(script["zsh"], script["bash"]) {
		t.Error("the zsh completion is not the bash one under bashcompinit")
	}
}

// firstWords returns what follows the first prefix in s, up to the next double quote.
func firstWords(s, prefix string) string {
	_, after, ok := strings.Cut(s, prefix)
	if !ok {
		return ""
	}
	words, _, _ := strings.Cut(after, `"`)
	return words
}

// The last section of docs/commands.md is every command's usage, flags and exit status as its
// help prints them, and the README's table of commands is each command's summary: both rendered
// from the command values, so neither is a list kept by hand.
func TestTheCommandsPageListsEveryCommandsFlags(t *testing.T) {
	t.Parallel()
	const begin, end = "<!-- flags: generated from the commands by `go test ./cmd/meshc -update-docs` -->\n", "<!-- /flags -->"
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(commands)) {
		cmd := commands[name]
		fmt.Fprintf(&b, "\n### meshc %s\n\n%s.\n\n```text\n%s```\n", name, capitalised(cmd.summary), referenceText(cmd, flagsOf(name)))
	}
	b.WriteString("\n")
	generatedIn(t, "docs/commands.md", begin, end, b.String(), "docs/commands.md's flags are stale; run `go test ./cmd/meshc -run TestTheCommandsPage -update-docs`")
}

func TestTheREADMEListsTheCommands(t *testing.T) {
	t.Parallel()
	const begin, end = "<!-- commands: generated from the commands by `go test ./cmd/meshc -update-docs` -->\n", "<!-- /commands -->"
	var b strings.Builder
	b.WriteString("| command | what it does |\n| --- | --- |\n")
	for _, name := range slices.Sorted(maps.Keys(commands)) {
		fmt.Fprintf(&b, "| [`meshc %s`](docs/commands.md"+"#meshc-%s) | %s |\n", name, name, strings.ReplaceAll(commands[name].summary, "|", `\|`))
	}
	generatedIn(t, "README.md", begin, end, b.String(), "the README's table of commands is stale; run `go test ./cmd/meshc -run TestTheREADMEListsTheCommands -update-docs`")
}

// referenceText is a command's help without what it does: usage, flags, exit status.
func referenceText(cmd command, fs *flag.FlagSet) string {
	cmd.help = ""
	return helpText(cmd, fs)
}

func capitalised(s string) string {
	return strings.ToUpper(s[:1]) + s[1:]
}
