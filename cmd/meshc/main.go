// Command meshc compiles a catalogue of module manifests into the configuration of a NATS bus,
// and checks the catalogue on the way. Run `meshc help` for the commands.
//
// Each subcommand lives in a file of its own and is one entry in commands; only this package
// imports every other.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/meshc-dev/meshc/internal/suggest"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// Exit codes, the same for every command (docs/commands.md, "Exit status").
const (
	exitOK      = 0 // clean: nothing wrong, nothing to change
	exitFailed  = 1 // findings or differences: meshc did its job and the answer is "no"
	exitCantRun = 2 // meshc could not do its job: bad flags, unreadable input, server unreachable
	// exitUnread: plan or apply did its job on what the bus let it read, and left objects the
	// server reported missing or offline as they are: the bus may still differ from the plan
	// there, which a CI job must not read as success.
	exitUnread = 3
)

// A command is one subcommand, as a value: its name, what `meshc help` says of it, its help, and
// the function that declares its flags and runs it. Adding one is a file holding its value and
// run function, and one entry in init's list.
//
// The flags are declared once, in run, on the FlagSet run hands parseArgs: the help's Flags
// block, completion and docs/commands.md are all rendered from that FlagSet (flagsOf), so none
// of them is a list kept by hand.
type command struct {
	// name is what meshc is given to run it, and the name of the FlagSet run declares.
	name string
	// summary is the line `meshc help` shows beside the command's name.
	summary string
	// usage is the help's first lines: "Usage: meshc NAME …", one line per form.
	usage string
	// help says what the command does: the paragraphs between the usage and the flags.
	help string
	// exits is the help's last block: the command's exit status.
	exits string
	// run runs the command with the arguments after its name. It declares its flags on a
	// FlagSet named after the command and parses them with parseArgs before anything else:
	// `-h` prints the help on stdout and returns exitOK there.
	run func(inv *invocation, args []string) int
	// args are what completion offers for each positional argument, in order: words, or
	// "@rules", "@users", "@modules" for the rule table's ids and the catalogue's own names.
	args []string
}

// An invocation is one run of meshc: where it writes, and what completion or a test asks of it.
// Carried to every command rather than kept in globals, so two runs in one process (the tests')
// never see each other's.
type invocation struct {
	stdout, stderr io.Writer
	// stdin is what a command reads a secret from (meshc context --stdin); os.Stdin when nil.
	stdin io.Reader
	// declared, when set, makes parseArgs hand it the command's flags instead of parsing: how
	// help, completion and the docs ask a command for its flags (flagsOf), through the one place
	// every command parses.
	declared func(fs *flag.FlagSet)
}

var commands = map[string]command{}

// init fills commands: completion lists the commands, so the table cannot refer to it directly.
// The order does not matter: help and completion sort by name.
func init() {
	for _, c := range []*command{
		&applyCommand,
		&canCommand,
		&completionCommand,
		&contextCommand,
		&emitCommand,
		&explainCommand,
		&exportCommand,
		&graphCommand,
		&lintCommand,
		&mintCommand,
		&operatorCommand,
		&planCommand,
		&schemaCommand,
		&statusCommand,
		&upCommand,
		&verifyCommand,
		&versionCommand,
		&whoCanCommand,
	} {
		commands[c.name] = *c
	}
}

const usageHead = `meshc turns a catalogue of module manifests (mesh.yaml, modules/*.yaml, inventory.yaml,
credentials.yaml) into the configuration of a NATS bus: its users, their permissions, and
the JetStream streams and consumers; and checks the catalogue on the way.

Usage:

	meshc <command> [arguments]

Commands:
`

const usageTail = `
Run 'meshc help <command>' (or 'meshc <command> -h') for a command's flags.

Exit status: 0 clean; 1 findings or differences; 2 meshc could not do its job (bad
flags, a directory that is not a catalogue, an unreadable file, a server it cannot reach).
`

func usage(w io.Writer) {
	io.WriteString(w, usageHead)
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(tw, "\t%s\t%s\n", name, commands[name].summary)
	}
	fmt.Fprintf(tw, "\t%s\t%s\n", "help", "show this help, or a command's")
	tw.Flush()
	io.WriteString(w, usageTail)
}

func run(args []string, stdout, stderr io.Writer) int {
	return runWith(&invocation{stdout: stdout, stderr: stderr}, args)
}

// runWith runs meshc with the arguments after its name.
func runWith(inv *invocation, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	if inv.stdin == nil {
		inv.stdin = os.Stdin
	}
	if len(args) == 0 {
		usage(stderr)
		return exitCantRun
	}
	name, rest := args[0], args[1:]
	switch name {
	case "--version", "-version", "-V":
		return runVersion(inv, rest)
	case "help", "-h", "-help", "--help":
		if len(rest) == 0 || name != "help" {
			usage(stdout)
			return exitOK
		}
		// `meshc help lint` is `meshc lint -h`: one help text per command, kept in one place.
		name, rest = rest[0], []string{"-h"}
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "meshc: unknown command %q%s\n\n", name, didYouMean(name))
		usage(stderr)
		return exitCantRun
	}
	return cmd.run(inv, rest)
}

func didYouMean(name string) string {
	names := []string{"help"}
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	if near := suggest.Closest(name, names); near != "" {
		return "; did you mean " + near + "?"
	}
	return ""
}

// parseArgs parses flags wherever they stand among the arguments, so `meshc lint DIR --format
// json` works as well as `meshc lint --format json DIR`; after `--` everything is an argument.
// The flag package alone stops at the first argument that is not a flag.
//
// It returns the arguments that are not flags, and the exit code to return now, if any: -h
// prints help on stdout (exitOK); a bad flag is one line on stderr, with the flag it was
// probably meant to be and where the help is (exitCantRun): the whole usage under it buried the
// one line that mattered. The help is writeHelp's, from the command's value and fs.
func parseArgs(fs *flag.FlagSet, args []string, inv *invocation) (positional []string, exit int, done bool) {
	stdout, stderr := inv.stdout, inv.stderr
	if inv.declared != nil {
		inv.declared(fs)
		return nil, exitOK, true
	}
	fs.SetOutput(io.Discard) // errors are printed below, once, with the command's name
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			writeHelp(stdout, fs)
			return nil, exitOK, true
		}
		if err != nil {
			fmt.Fprintf(stderr, "meshc %s: %s; 'meshc help %s' lists its flags\n", fs.Name(), flagError(fs, err), fs.Name())
			return nil, exitCantRun, true
		}
		consumed := len(args) - fs.NArg()
		rest := fs.Args()
		if consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), 0, false
		}
		if len(rest) == 0 {
			return positional, 0, false
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// flagError says what was wrong with a flag in meshc's words: an unknown one with the flag it
// is closest to.
func flagError(fs *flag.FlagSet, err error) string {
	const unknown = "flag provided but not defined: -"
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, unknown); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if near := suggest.Closest(name, names); near != "" {
			return fmt.Sprintf("unknown flag --%s (did you mean --%s?)", name, near)
		}
		return fmt.Sprintf("unknown flag --%s", name)
	}
	return strings.Replace(msg, ": -", ": --", 1)
}

// catalogueArg returns a command's one optional argument, the catalogue's directory ("." when
// none is given); more than one is reported as a bad flag is, and ok is false.
func catalogueArg(fs *flag.FlagSet, rest []string, stderr io.Writer) (dir string, exit int, ok bool) {
	switch len(rest) {
	case 0:
		return ".", 0, true
	case 1:
		return rest[0], 0, true
	}
	return "", tooMany(fs, stderr, rest[1:]), false
}

// tooMany reports arguments a command does not take, the way a bad flag is reported.
func tooMany(fs *flag.FlagSet, stderr io.Writer, extra []string) int {
	fmt.Fprintf(stderr, "meshc %s: unexpected arguments %s; 'meshc help %s' says what it takes\n", fs.Name(), strings.Join(extra, " "), fs.Name())
	return exitCantRun
}

// catalogueFlag declares --dir, the catalogue of a command whose positional arguments are
// something else (mint's users, can's question).
func catalogueFlag(fs *flag.FlagSet) *string {
	return fs.String("dir", ".", "the catalogue's `DIR`")
}

// choiceFlag is a string flag that knows its values, so completion offers them: the command's own
// table, never a copy. The command still judges the value it is given, with its own message.
type choiceFlag struct {
	value   string
	choices []string
}

func (c *choiceFlag) String() string     { return c.value }
func (c *choiceFlag) Set(s string) error { c.value = s; return nil }
func (c *choiceFlag) Choices() []string  { return c.choices }

// choice defines a choiceFlag on fs.
func choice(fs *flag.FlagSet, name, def, usage string, choices ...string) *string {
	c := &choiceFlag{value: def, choices: choices}
	fs.Var(c, name, usage)
	return &c.value
}
