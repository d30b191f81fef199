package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/meshc-dev/meshc/internal/natsproc"
	"github.com/meshc-dev/meshc/internal/natsserver"
	"github.com/meshc-dev/meshc/internal/testwait"

	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite the files scripts compare against with cmp")

// TestMain lets the test binary be meshc itself: a script's `exec meshc` runs run() in a fresh
// process, with real arguments, real exit codes and real stdout and stderr.
//
// Tests are hermetic: a machine's own NATS settings (a NATS CLI context selected, NATS_URL set)
// must not reach a test, as most NATS users' machines have both. So the whole test process runs
// with a configuration home of its own and no NATS_* variable, and each script with its own.
func TestMain(m *testing.M) {
	// A nats-server process of the test binary's own (internal/natsproc), for the tests that
	// stop or kill a cluster's nodes.
	natsproc.RunIfServer()
	testscript.Main(hermetic{m}, map[string]func(){
		"meshc": func() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) },
		// A real nats-server process for the tests that signal, kill and read the log of one
		// (natsproc_test.go), whose name /proc reports as nats-server, with nothing installed.
		"nats-server": func() { natsproc.Main(os.Args[1:]) },
	})
}

// hermetic runs the tests (not a script's `exec meshc`, which keeps the environment its script
// gives it) with a configuration home of their own and no NATS_* variable.
type hermetic struct{ m *testing.M }

func (h hermetic) Run() int {
	config, err := os.MkdirTemp("", "meshc-test-config-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(config)
	os.Setenv("XDG_CONFIG_HOME", config)
	for _, e := range os.Environ() {
		if name, _, _ := strings.Cut(e, "="); strings.HasPrefix(name, "NATS_") {
			os.Unsetenv(name)
		}
	}
	// Four at a time: the scripts compute, the tests beside them mostly wait on servers.
	testwait.Parallel(4)
	return h.m.Run()
}

// TestScripts runs testdata/script/*.txtar, one story of the command line each.
// `go test -run TestScripts -update` rewrites the files that cmp compares against.
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       *update,
		// The NATS CLI's contexts live under the configuration home: each script has its own.
		Setup: func(env *testscript.Env) error {
			env.Setenv("XDG_CONFIG_HOME", env.Getenv("WORK")+"/.config")
			return nil
		},
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"exits":      exits,
			"natsserver": natsServer,
		},
	})
}

// exits runs a command like exec and checks its exact exit status: `! exec` only says
// "non-zero", and meshc's 1 (findings) and 2 (could not run) mean different things to a hook.
//
//	exits CODE command [args...]
func exits(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("exits takes no !: give the status expected")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exits CODE command [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: %q is not a status", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", strings.Join(args[1:], " "), got, want)
	}
}

// natsServer starts a real nats-server with JetStream in the test process, on a free loopback
// port with its store in the script's work directory, and sets NATS_URL for the commands after
// it: meshc plan and apply then talk to a real server, as they do in CI.
//
//	natsserver
func natsServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: natsserver")
	}
	s, err := natsserver.Start(context.Background(), &server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: ts.MkAbs("jetstream"), NoSigs: true,
	}, 10*time.Second)
	if err != nil {
		ts.Fatalf("natsserver: %v", err)
	}
	ts.Defer(func() { s.Shutdown(); s.WaitForShutdown() })
	ts.Setenv("NATS_URL", s.ClientURL())
}
