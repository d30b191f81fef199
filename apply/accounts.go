package apply

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/meshc-dev/meshc/internal/atomicfile"
)

// accountsFile is where the composed accounts file goes, looked at before anything is written:
// a symlink is followed to the file the server reads, and an existing file's owner, group and
// mode are what the new one gets — the server may run as another user, and a file it cannot
// read fails its reload.
type accountsFile struct {
	// path as given, target the file written (path with symlinks resolved).
	path, target string
	exists       bool
	mode         fs.FileMode
	uid, gid     int
	modTime      time.Time
	current      []byte
}

func lookAtAccounts(path string) (*accountsFile, error) {
	f := &accountsFile{path: path, target: path, mode: 0o600, uid: -1, gid: -1}
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		f.target = resolved
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("--accounts %s: %w", path, err)
	} else if link, lerr := os.Readlink(path); lerr == nil {
		// A link to a file not there yet: written where it points.
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(path), link)
		}
		f.target = link
	}
	info, err := os.Stat(f.target)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--accounts %s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("--accounts %s: not a regular file; give the accounts file the server's configuration includes (or a symlink to it)", path)
	}
	f.exists, f.mode, f.modTime = true, info.Mode().Perm(), info.ModTime()
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		f.uid, f.gid = int(st.Uid), int(st.Gid)
		if euid := os.Geteuid(); euid != 0 && f.uid != euid {
			// The new file would be meshc's user's, and the server reading it as the old
			// owner may no longer be allowed to.
			return nil, fmt.Errorf("--accounts %s: the file belongs to uid %d and meshc runs as uid %d, so it cannot keep its owner; run apply as its owner (or root)", path, f.uid, euid)
		}
	}
	if f.current, err = os.ReadFile(f.target); err != nil {
		return nil, fmt.Errorf("--accounts %s: %w", path, err)
	}
	return f, nil
}

// write replaces the file's bytes atomically, keeping owner, group and mode, and reports
// whether it wrote. Unchanged bytes are left alone, file and modification time both.
func (f *accountsFile) write(data []byte) (bool, error) {
	if f.exists && bytes.Equal(f.current, data) {
		return false, nil
	}
	// A new file is 0600: it holds every user's hash.
	if err := atomicfile.WriteOwned(f.target, data, f.mode, f.uid, f.gid); err != nil {
		return false, err
	}
	info, err := os.Stat(f.target)
	if err != nil {
		return false, err
	}
	f.modTime, f.current, f.exists = info.ModTime(), data, true
	return true, nil
}

// Reloader is a server that can be made to load its configuration again, and asked when it last
// did: a nats-server process signalled as `nats-server --signal reload` does (SignalledServer),
// or a server embedded in meshc's own process (meshc up's).
type Reloader interface {
	// Loaded is when the server last loaded its configuration.
	Loaded(ctx context.Context) (time.Time, error)
	// Reload makes the server load its configuration again, and returns once it has loaded it
	// after before, or says why it did not.
	Reload(ctx context.Context, before time.Time) error
}

// SignalledServer is a nats-server process to signal, and its monitoring endpoint, which says
// what the server has loaded and whether a reload took.
type SignalledServer struct {
	pid     int
	monitor string
	// wait bounds a reload: how long the server may take to load the file.
	wait time.Duration
}

// IsNATSServer reads the process's name and executable from /proc: a stale pid file's pid now
// belonging to a shell or a sleep must not be sent SIGHUP (which ends most programs).
func IsNATSServer(pid int) error {
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return fmt.Errorf("no process %d (%v)", pid, err)
	}
	name := strings.TrimSpace(string(comm))
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if name == "nats-server" || filepath.Base(exe) == "nats-server" {
		return nil
	}
	return fmt.Errorf("process %d is %q, not nats-server", pid, name)
}

// Signalled reads --reload (a process id or a pid file) and checks it is a nats-server before
// anything is written: a stale pid file's pid now belonging to a shell must not be sent SIGHUP.
// isServer decides that; nil reads the process's name from /proc (a test passes its own check,
// since it runs the server in its own process). monitor is the server's monitoring URL, and wait
// bounds a reload.
func Signalled(target, monitor string, wait time.Duration, isServer func(pid int) error) (*SignalledServer, error) {
	if isServer == nil {
		isServer = IsNATSServer
	}
	pid, err := strconv.Atoi(target)
	if err != nil {
		data, rerr := os.ReadFile(target)
		if rerr != nil {
			return nil, fmt.Errorf("--reload %s: neither a process id nor a readable pid file: %w", target, rerr)
		}
		if pid, err = strconv.Atoi(strings.TrimSpace(string(data))); err != nil {
			return nil, fmt.Errorf("--reload %s: the pid file does not hold a process id; give the nats-server's pid, or the file its pid_file (-P) names", target)
		}
	}
	if pid <= 0 {
		// kill(0) signals the caller's process group, kill(-N) group N: never a server.
		return nil, fmt.Errorf("--reload %s: %d is not a process id (it must be above 0)", target, pid)
	}
	if err := isServer(pid); err != nil {
		return nil, fmt.Errorf("--reload %s: %v; give the nats-server's pid or pid file", target, err)
	}
	return &SignalledServer{pid: pid, monitor: strings.TrimRight(monitor, "/"), wait: wait}, nil
}

// varz is what the monitoring endpoint says of the loaded configuration.
type varz struct {
	ConfigLoadTime time.Time `json:"config_load_time"`
}

// Loaded reads when the server last loaded its configuration from its monitoring endpoint.
func (r *SignalledServer) Loaded(ctx context.Context) (time.Time, error) {
	v, err := r.varz(ctx)
	return v.ConfigLoadTime, err
}

func (r *SignalledServer) varz(ctx context.Context) (varz, error) {
	var v varz
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.monitor+"/varz", nil)
	if err != nil {
		return v, fmt.Errorf("--monitor %s: %w", r.monitor, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return v, fmt.Errorf("--monitor %s: %w: meshc reads what the server has loaded from its monitoring endpoint (nats-server -m PORT, or http: in its configuration)", r.monitor, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return v, fmt.Errorf("--monitor %s: /varz answered %s; give --monitor the server's monitoring URL (nats-server -m PORT, or http: in its configuration)", r.monitor, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || v.ConfigLoadTime.IsZero() {
		if err == nil {
			err = errors.New("no config_load_time")
		}
		return v, fmt.Errorf("--monitor %s: /varz is not a nats-server's (%v); give --monitor the server's monitoring URL (nats-server -m PORT, or http: in its configuration)", r.monitor, err)
	}
	return v, nil
}

// Reload signals the server (SIGHUP, as nats-server --signal reload does) and waits until its
// monitoring endpoint shows a configuration loaded after the signal. A server that refuses the
// new configuration keeps the old one and logs why; meshc says what it can see of why.
func (r *SignalledServer) Reload(ctx context.Context, before time.Time) error {
	p, err := os.FindProcess(r.pid)
	if err != nil {
		return fmt.Errorf("--reload: no process %d: %w", r.pid, err)
	}
	if err := p.Signal(syscall.SIGHUP); err != nil {
		return fmt.Errorf("--reload: signalling nats-server (pid %d) to reload: %w; reload it by hand (nats-server --signal reload=%d)", r.pid, err, r.pid)
	}
	deadline := time.Now().Add(r.wait)
	for {
		now, err := r.Loaded(ctx)
		if err == nil && now.After(before) {
			return nil
		}
		if time.Now().After(deadline) {
			why := "it kept the configuration it loaded at " + before.Format(time.RFC3339Nano)
			if err != nil {
				why = err.Error()
			}
			return &notReloaded{pid: r.pid, wait: r.wait, why: why}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// notReloaded is a signalled server that kept its configuration: Deliver adds whether its user
// can read the file, the most common reason.
type notReloaded struct {
	pid  int
	wait time.Duration
	why  string
}

func (e *notReloaded) Error() string {
	return fmt.Sprintf("--reload: nats-server (pid %d) did not reload within %s: %s", e.pid, e.wait, e.why)
}

// readableBy says whether the server's user can read the accounts file: the most common
// reason a reload is refused.
func readableBy(pid int, f *accountsFile) string {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "the server's user could not be read"
	}
	uid := -1
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			if fields := strings.Fields(rest); len(fields) > 1 {
				uid, _ = strconv.Atoi(fields[1]) // effective
			}
		}
	}
	switch {
	case uid == 0, uid == f.uid && f.mode&0o400 != 0, f.mode&0o004 != 0:
		return fmt.Sprintf("the server's user (uid %d) can read %s", uid, f.target)
	}
	return fmt.Sprintf("the server's user (uid %d) may not be able to read %s (owner uid %d, group %d, mode %04o)", uid, f.target, f.uid, f.gid, f.mode)
}
