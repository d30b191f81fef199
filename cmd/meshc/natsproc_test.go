package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meshc-dev/meshc/internal/testwait"
)

// serverProcess is a nats-server process started by a test.
type serverProcess struct {
	cmd *exec.Cmd
	// url is where clients connect, monitor its monitoring endpoint, log its log (its stderr).
	url, monitor, log string
}

func (p *serverProcess) pid() string { return fmt.Sprint(p.cmd.Process.Pid) }

var (
	listening = regexp.MustCompile(`Listening for client connections on ([0-9.]+:[0-9]+)`)
	monitorOn = regexp.MustCompile(`Starting http monitor on ([0-9.]+:[0-9]+)`)
)

// startServerProcess runs `nats-server -c conf` as a process of its own and waits until it is
// ready; the test's end stops it. conf must set host and http (port -1 takes a free one). Its
// log is logFile when the configuration names that log_file; otherwise the process writes it to
// a pipe, as to a terminal or the journal, which the test copies into a file of its own that
// meshc does not know of.
func startServerProcess(t *testing.T, conf, logFile string) *serverProcess {
	t.Helper()
	return startServerBinaryIn(t, "nats-server", "", conf, logFile)
}

// startServerProcessIn is startServerProcess in the working directory dir, from which the
// configuration's relative paths (a resolver's directory) are taken.
func startServerProcessIn(t *testing.T, dir, conf, logFile string) *serverProcess {
	t.Helper()
	return startServerBinaryIn(t, "nats-server", dir, conf, logFile)
}

// startServerBinary is startServerProcess with another nats-server binary: a release built by
// the test.
func startServerBinary(t *testing.T, binary, conf, logFile string) *serverProcess {
	t.Helper()
	return startServerBinaryIn(t, binary, "", conf, logFile)
}

func startServerBinaryIn(t *testing.T, binary, dir, conf, logFile string) *serverProcess {
	t.Helper()
	p := &serverProcess{cmd: exec.Command(binary, "-c", conf), log: logFile}
	p.cmd.Dir = dir
	if logFile == "" {
		p.log = filepath.Join(t.TempDir(), "nats-server.log")
		out, err := os.Create(p.log)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { out.Close() })
		pipe, err := p.cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		go io.Copy(out, pipe)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-done
		}
	})
	if logFile != "" {
		testwait.ForNil(t, "the server to write its log_file", 20*time.Second, func() error {
			_, err := os.Stat(logFile)
			return err
		})
	}
	waitForLog(t, p, "Server is ready")
	text := readLog(t, p)
	if m := listening.FindStringSubmatch(text); m != nil {
		p.url = "nats://" + m[1]
	}
	if m := monitorOn.FindStringSubmatch(text); m != nil {
		p.monitor = "http://" + m[1]
	}
	if p.url == "" || p.monitor == "" {
		t.Fatalf("the server's log names no client or monitoring port:\n%s", text)
	}
	return p
}

func readLog(t *testing.T, p *serverProcess) string {
	t.Helper()
	data, err := os.ReadFile(p.log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(data)
}

// waitForLog waits until the server's log holds the text, or fails naming what it holds.
func waitForLog(t *testing.T, p *serverProcess, text string) {
	t.Helper()
	testwait.For(t, fmt.Sprintf("the server to log %q", text), 20*time.Second, func() bool {
		return strings.Contains(readLog(t, p), text)
	})
}

// countLog counts the log's lines holding the text.
func countLog(t *testing.T, p *serverProcess, text string) int {
	t.Helper()
	n := 0
	s := bufio.NewScanner(strings.NewReader(readLog(t, p)))
	for s.Scan() {
		if strings.Contains(s.Text(), text) {
			n++
		}
	}
	return n
}
