package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/meshc-dev/meshc/catalogue"
	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/internal/suggest"
)

var canCommand = command{
	name:    "can",
	summary: "say whether a bus user may publish or subscribe a subject, and which manifest line grants it",
	usage: `Usage: meshc can USER pub|sub SUBJECT [--dir DIR]
       meshc can USER call|serve MODULE.TOOL | emit EMITTER.EVENT | submit SEAT.KIND [--dir DIR]
`,
	help: `Says whether the bus user USER may publish (pub) or subscribe (sub) SUBJECT, from the
catalogue in DIR (default: the current directory), offline: the same derivation emit writes
to accounts.conf. For yes, it names the manifest line(s) whose declaration grants it; for no,
the nearest grant and why it does not cover the subject. SUBJECT may hold wildcards: a grant
covers it only if it covers every subject it matches.

Or ask in the catalogue's words, and meshc derives the subject: call a tool, serve one (in its
module's queue group, as a module instance's serving user serve.<machine>.<module>), emit an
event (a module's, or a seat's it holds; EMITTER.** for every event of one emitter), submit work
to a seat. Asked of one of a module instance's two users what only the other may, the no names
the other: its tools are served as serve.<machine>.<module>, everything else is done as
mod.<machine>.<module>.

    meshc can person.bob call builder.build-now
    meshc can serve.anchor.catalog serve catalog.lookup
    meshc can mod.forge.builder emit mesh-build-machine.built
    meshc can person.bob pub mesh.mod.builder.tool.build-now

`,
	exits: `Exit status:
  0  yes
  1  no
  2  meshc could not answer: a bad flag, an unknown user, DIR is not a catalogue or has errors
`,
	run:  runCan,
	args: []string{"@users", "pub sub"},
}

var whoCanCommand = command{
	name:    "who-can",
	summary: "list every bus user who may publish or subscribe a subject, and why",
	usage: `Usage: meshc who-can pub|sub SUBJECT [--dir DIR]
`,
	help: `Lists every bus user who may publish (pub) or subscribe (sub) SUBJECT, from the catalogue in
DIR (default: the current directory), offline, each with the manifest line(s) whose
declaration grants it.

    meshc who-can pub mesh.mod.catalog.event.upgraded

`,
	exits: `Exit status:
  0  at least one user may
  1  nobody may
  2  meshc could not answer: a bad flag, DIR is not a catalogue or has errors
`,
	run:  runWhoCan,
	args: []string{"pub sub"},
}

func runCan(inv *invocation, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	fs := flag.NewFlagSet("can", flag.ContinueOnError)
	dir := catalogueFlag(fs)
	rest, exit, done := parseArgs(fs, args, inv)
	if done {
		return exit
	}
	if len(rest) != 3 {
		return wrongArgs(fs, stderr, "give USER, pub or sub, and SUBJECT (or call, serve, emit or submit, and what)")
	}
	name, subject := rest[0], rest[2]
	asked := ""
	if words, ok := catalogueWords[rest[1]]; ok {
		asked = rest[1] + " " + subject
		rest[1] = words.action
	}
	action, c, plan, ok := question(fs, rest[1], *dir, stderr)
	if !ok {
		return exitCantRun
	}
	if asked != "" {
		verb, written, _ := strings.Cut(asked, " ")
		derived, err := catalogueWords[verb].subject(catalogue.NewIndex(c), written)
		if err != "" {
			fmt.Fprintf(stderr, "meshc can: %s %s: %s\n", verb, written, err)
			return exitCantRun
		}
		subject = derived
	}
	u := plan.User(name)
	if u == nil {
		names := make([]string, len(plan.Users))
		for i := range plan.Users {
			names[i] = plan.Users[i].Name
		}
		hint := ""
		if near := suggest.Closest(name, names); near != "" {
			hint = fmt.Sprintf("; did you mean %s?", near)
		}
		fmt.Fprintf(stderr, "meshc can: the catalogue has no bus user %q%s (users are mesh-controller, node.<machine>, mod.<machine>.<module>, serve.<machine>.<module>, enrol.<machine>, person.<name>)\n", name, hint)
		return exitCantRun
	}
	verb := verbOf(action)
	what := verb + " " + subject
	if asked != "" {
		what = fmt.Sprintf("%s (%s %s)", asked, verb, subject)
	}
	if why := u.Why(action, subject); len(why) > 0 {
		fmt.Fprintf(stdout, "yes: %s may %s\n", u.Name, what)
		writeWhy(stdout, *dir, why)
		return exitOK
	}
	fmt.Fprintf(stdout, "no: %s may not %s\n", u.Name, what)
	if other := instanceUser(plan, u); other != nil {
		if why := other.Why(action, subject); len(why) > 0 {
			does := "does everything but serve its tools as its module user"
			if other.Kind == compiler.KindServer {
				does = "serves its tools as its serving user, on a second connection with a credential of its own"
			}
			fmt.Fprintf(stdout, "  %s may: a module's instance %s\n", other.Name, does)
			writeWhy(stdout, *dir, why)
			return exitFailed
		}
	}
	if g, why, ok := u.Nearest(action, subject); ok {
		fmt.Fprintf(stdout, "  nearest grant: %s: %s (grants %s)\n  it does not cover the subject: %s\n", g.Source.Under(*dir), g.Because, g.Permission(), why)
	} else {
		fmt.Fprintf(stdout, "  %s may %s nothing at all: its permission is deny >\n", u.Name, verb)
	}
	if action == compiler.Publish && len(u.Grants.Responses) > 0 {
		fmt.Fprintf(stdout, "  (it may still answer a request it received on a tool it serves, once, at the request's reply subject: allow_responses)\n")
	}
	return exitFailed
}

// instanceUser is the other user of a module user's or a serving user's instance: the serving user
// of a module user (nil when its module serves no tools), the module user of a serving user. The
// two come from the one `runs:` entry that puts the module on its machine, so they share the
// module and the declaration.
func instanceUser(plan *compiler.Plan, u *compiler.User) *compiler.User {
	want := compiler.KindServer
	switch u.Kind {
	case compiler.KindModule:
	case compiler.KindServer:
		want = compiler.KindModule
	default:
		return nil
	}
	for i := range plan.Users {
		if o := &plan.Users[i]; o.Kind == want && o.Module == u.Module && o.Source == u.Source {
			return o
		}
	}
	return nil
}

func runWhoCan(inv *invocation, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	fs := flag.NewFlagSet("who-can", flag.ContinueOnError)
	dir := catalogueFlag(fs)
	rest, exit, done := parseArgs(fs, args, inv)
	if done {
		return exit
	}
	if len(rest) != 2 {
		return wrongArgs(fs, stderr, "give pub or sub, and SUBJECT")
	}
	action, _, plan, ok := question(fs, rest[0], *dir, stderr)
	if !ok {
		return exitCantRun
	}
	subject := rest[1]
	var b strings.Builder
	n := 0
	for i := range plan.Users {
		u := &plan.Users[i]
		why := u.Why(action, subject)
		if len(why) == 0 {
			continue
		}
		n++
		fmt.Fprintf(&b, "%s\n", u.Name)
		writeWhy(&b, *dir, why)
	}
	if n == 0 {
		fmt.Fprintf(stdout, "nobody may %s %s\n", verbOf(action), subject)
		return exitFailed
	}
	fmt.Fprintf(stdout, "%d users may %s %s:\n%s", n, verbOf(action), subject, b.String())
	return exitOK
}

func parseAction(fs *flag.FlagSet, s string, stderr io.Writer) (compiler.Action, bool) {
	switch s {
	case "pub", "publish":
		return compiler.Publish, true
	case "sub", "subscribe":
		return compiler.Subscribe, true
	}
	wrongArgs(fs, stderr, fmt.Sprintf("%q is neither pub nor sub", s))
	return "", false
}

func verbOf(a compiler.Action) string {
	if a == compiler.Subscribe {
		return "subscribe"
	}
	return "publish"
}

// question reads what can and who-can both ask about: pub or sub, and the catalogue in dir,
// compiled. A catalogue with errors cannot answer (the derivation would be partial), and that is
// exit 2 here: 1 means "no".
func question(fs *flag.FlagSet, action, dir string, stderr io.Writer) (compiler.Action, *catalogue.Catalogue, *compiler.Plan, bool) {
	a, ok := parseAction(fs, action, stderr)
	if !ok {
		return "", nil, nil, false
	}
	c, plan, _ := compileLoaded(fs.Name(), dir, stderr)
	return a, c, plan, plan != nil
}

// catalogueWords are the questions can takes in the catalogue's words: each the action it asks
// about and the subject it derives, through the same names the grants are derived with.
var catalogueWords = map[string]struct {
	action  string
	subject func(ix *catalogue.Index, written string) (string, string)
}{
	"call": {"pub", toolSubject},
	"serve": {"sub", func(ix *catalogue.Index, written string) (string, string) {
		subject, err := toolSubject(ix, written)
		if err != "" {
			return "", err
		}
		module, _ := compiler.Call(written)
		// Served in the module's queue group, the one form the grant takes.
		return compiler.QueueGrant(subject, compiler.ToolQueue(module)), ""
	}},
	"emit": {"pub", func(ix *catalogue.Index, written string) (string, string) {
		if !strings.Contains(written, ".") || written == compiler.AllEvents {
			return "", "name the emitter and the event, EMITTER.EVENT: a module or a seat, then its event"
		}
		return compiler.Consume(ix, written).Subjects[0], ""
	}},
	"submit": {"pub", func(ix *catalogue.Index, written string) (string, string) {
		seat, kind, ok := strings.Cut(written, ".")
		if !ok || kind == "" {
			return "", "name the seat and the kind of work, SEAT.KIND"
		}
		if s := ix.Seat(seat); s != nil {
			seat = s.Name.Value
		}
		return compiler.Work(seat, kind), ""
	}},
}

func toolSubject(_ *catalogue.Index, written string) (string, string) {
	module, tool := compiler.Call(written)
	if module == "" || tool == "" {
		return "", "name the module and the tool, MODULE.TOOL"
	}
	return compiler.Tool(module, tool), ""
}

// writeWhy writes the grants that allow an action, one line each, with the declaration that
// grants it shown from where meshc was run.
func writeWhy(w io.Writer, dir string, why []compiler.Grant) {
	for _, g := range why {
		fmt.Fprintf(w, "  %s: %s (grants %s)\n", g.Source.Under(dir), g.Because, g.Permission())
	}
}

// wrongArgs reports arguments that do not fit, the way a bad flag is reported.
func wrongArgs(fs *flag.FlagSet, stderr io.Writer, what string) int {
	fmt.Fprintf(stderr, "meshc %s: %s\n\n", fs.Name(), what)
	writeHelp(stderr, fs)
	return exitCantRun
}
