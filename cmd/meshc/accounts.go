package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"

	"meshc/compiler"
	"meshc/emit"
	"meshc/internal/atomicfile"
)

// deliverAccounts writes the composed accounts file to path when its bytes changed, atomically,
// and reports whether it did. Unchanged bytes are left alone, file and modification time both:
// the server reloads on the file, and every reload re-checks the password of every connected
// client (NATS-FACTS §3), so a reload with nothing new is a cost with no benefit.
func deliverAccounts(plan *compiler.Plan, path string, allowMissing bool) (bool, error) {
	data, err := emit.Accounts(plan, emit.AccountsOptions{AllowMissing: allowMissing})
	if err != nil {
		return false, err
	}
	old, err := os.ReadFile(path)
	if err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	// 0600: the file holds every user's hash; the server reads it as the user it runs as.
	return true, atomicfile.Write(path, data, 0o600)
}

// signalReload asks a running nats-server to reload its configuration, as `nats-server --signal
// reload=PID` does: SIGHUP to the process. target is a process id or a pid file (the server's
// own pid_file option writes one).
func signalReload(target string) error {
	pid, err := strconv.Atoi(target)
	if err != nil {
		data, rerr := os.ReadFile(target)
		if rerr != nil {
			return fmt.Errorf("--reload %s: neither a process id nor a readable pid file: %w", target, rerr)
		}
		if pid, err = strconv.Atoi(strings.TrimSpace(string(data))); err != nil {
			return fmt.Errorf("--reload %s: the pid file does not hold a process id", target)
		}
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return fmt.Errorf("--reload: no process %d: %w", pid, err)
	}
	if err := p.Signal(syscall.SIGHUP); err != nil {
		return fmt.Errorf("--reload: signalling nats-server (pid %d) to reload: %w; reload it by hand (nats-server --signal reload=%d)", pid, err, pid)
	}
	return nil
}
