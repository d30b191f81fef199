package main

import (
	"flag"
	"io"
	"reflect"
	"strings"
)

// A command's help is its value's words around a Flags block rendered from the FlagSet its run
// declares: the flags a command parses are the flags its help lists, each with the words it was
// declared with, so the two cannot drift apart. Completion (completion.go) and docs/commands.md
// read the same FlagSet.

// flagsOf returns the flags the command name declares, asked of the command itself: its run
// declares them and hands them to parseArgs, which hands them here instead of parsing.
func flagsOf(name string) *flag.FlagSet {
	var fs *flag.FlagSet
	commands[name].run(&invocation{stdout: io.Discard, stderr: io.Discard, declared: func(f *flag.FlagSet) { fs = f }}, nil)
	return fs
}

// helpWidth is the column the help's lines wrap at.
const helpWidth = 95

// writeHelp writes the help of the command fs parses for: its usage, what it does, its own
// flags, the connection flags it takes, and its exit status.
func writeHelp(w io.Writer, fs *flag.FlagSet) {
	io.WriteString(w, helpText(commands[fs.Name()], fs))
}

func helpText(cmd command, fs *flag.FlagSet) string {
	block := func(s string) string { return strings.TrimRight(s, "\n") + "\n" }
	var b strings.Builder
	b.WriteString(block(cmd.usage))
	if cmd.help != "" {
		b.WriteString("\n" + block(cmd.help))
	}
	b.WriteString(flagsText(fs))
	if cmd.exits != "" {
		b.WriteString("\n" + block(cmd.exits))
	}
	return b.String()
}

// flagsText renders fs's flags: the command's own under "Flags:", then the connection flags
// under what connectFlags says of them; empty for a command with no flags.
func flagsText(fs *flag.FlagSet) string {
	own, conn := flagRows(fs)
	var b strings.Builder
	if len(own) > 0 {
		b.WriteString("\nFlags:\n")
		writeRows(&b, own)
	}
	if len(conn) > 0 {
		b.WriteString("\n" + connectIntro(fs))
		writeRows(&b, conn)
	}
	return b.String()
}

// A flagRow is one flag as help lists it: "-s, --server URL" and what it does.
type flagRow struct {
	label, usage string
}

// flagRows returns fs's flags in name order, the command's own and the connection flags apart.
// An alias (see alias) is listed beside the flag it stands for, not on a row of its own.
func flagRows(fs *flag.FlagSet) (own, conn []flagRow) {
	aliases := map[string][]string{}
	fs.VisitAll(func(f *flag.Flag) {
		if of := aliasOf(fs, f); of != "" {
			aliases[of] = append(aliases[of], f.Name)
		}
	})
	fs.VisitAll(func(f *flag.Flag) {
		if aliasOf(fs, f) != "" {
			return
		}
		value, usage := flagValue(f)
		var names []string
		for _, a := range aliases[f.Name] {
			if len(a) == 1 {
				names = append(names, dashed(a)) // a short name goes first: -s, --server
			}
		}
		names = append(names, dashed(f.Name))
		for _, a := range aliases[f.Name] {
			if len(a) > 1 {
				names = append(names, dashed(a))
			}
		}
		label := strings.Join(names, ", ")
		if value != "" {
			label += " " + value
		}
		var notes []string
		if d := shownDefault(f); d != "" {
			notes = append(notes, "default "+d)
		}
		if env := connectEnvOf(f); env != "" {
			notes = append(notes, "$"+env)
		}
		if len(notes) > 0 {
			usage += " (" + strings.Join(notes, "; ") + ")"
		}
		if isConnect(f) {
			conn = append(conn, flagRow{label, usage})
			return
		}
		own = append(own, flagRow{label, usage})
	})
	return own, conn
}

// aliasUsage is the usage of a flag that is another's second name.
const aliasUsage = "the same as --"

// alias declares name as a second name of the flag of: the same value, set by either.
func alias(fs *flag.FlagSet, name, of string) {
	fs.Var(fs.Lookup(of).Value, name, aliasUsage+of)
}

// aliasOf returns the name of the flag f is an alias of, or "".
func aliasOf(fs *flag.FlagSet, f *flag.Flag) string {
	of, ok := strings.CutPrefix(f.Usage, aliasUsage)
	if !ok {
		return ""
	}
	if g := fs.Lookup(of); g != nil && sameValue(g.Value, f.Value) {
		return of
	}
	return ""
}

func sameValue(a, b flag.Value) bool {
	return reflect.TypeOf(a) == reflect.TypeOf(b) && reflect.TypeOf(a).Comparable() && a == b
}

// flagValue returns the placeholder of f's value as help writes it (none for a switch) and its
// usage: a `FILE` quoted in the usage names the placeholder, as flag does; else a number is N, a
// duration DURATION, and anything else the flag's name (--format FORMAT).
func flagValue(f *flag.Flag) (value, usage string) {
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return "", f.Usage
	}
	value, usage = flag.UnquoteUsage(f)
	switch {
	case strings.Contains(f.Usage, "`"):
	case value == "duration":
		value = "DURATION"
	case value == "int" || value == "uint" || value == "int64" || value == "uint64" || value == "float":
		value = "N"
	default:
		value = f.Name
	}
	return strings.ToUpper(value), usage
}

// shownDefault is f's default as help says it, or "" when it is the zero value (nothing to say).
func shownDefault(f *flag.Flag) string {
	switch d := f.DefValue; d {
	case "", "0", "false", "0s", "[]":
		return ""
	default:
		// 1m0s reads as 1m.
		if strings.HasSuffix(d, "m0s") {
			d = strings.TrimSuffix(d, "0s")
		}
		if strings.HasSuffix(d, "h0m") {
			d = strings.TrimSuffix(d, "0m")
		}
		return d
	}
}

// writeRows writes rows as two columns, the usage wrapped at helpWidth under its own column; a
// label too long for the column has its usage on the lines below it.
func writeRows(b *strings.Builder, rows []flagRow) {
	const maxLabel = 26
	width := 0
	for _, r := range rows {
		if n := len(r.label); n <= maxLabel && n > width {
			width = n
		}
	}
	indent := strings.Repeat(" ", 2+width+2)
	for _, r := range rows {
		line := "  " + r.label
		if len(r.label) > width {
			b.WriteString(line + "\n")
			line = indent
		} else {
			line += strings.Repeat(" ", width-len(r.label)+2)
		}
		empty := true
		for _, word := range strings.Fields(r.usage) {
			if !empty && len(line)+1+len(word) > helpWidth {
				b.WriteString(line + "\n")
				line, empty = indent, true
			}
			if !empty {
				line += " "
			}
			line += word
			empty = false
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
}
