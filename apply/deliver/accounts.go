package deliver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
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
	// target is the file written (the path given, with symlinks resolved).
	target   string
	exists   bool
	mode     fs.FileMode
	uid, gid int
	current  []byte
}

func lookAtAccounts(path string) (*accountsFile, error) {
	f := &accountsFile{target: path, mode: 0o600, uid: -1, gid: -1}
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
	f.exists, f.mode = true, info.Mode().Perm()
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
	f.current, f.exists = data, true
	return true, nil
}

// SignalledServer is a nats-server process to signal, as `nats-server --signal reload` does,
// with its configuration file (read from its command line) and its monitoring endpoint, which
// says what it has loaded.
type SignalledServer struct {
	pid     int
	config  string
	monitor string
	// wait bounds a reload: how long the server may take to load the file.
	wait time.Duration
	// log is where the server writes its log, "" when meshc cannot read it: its refusal of a
	// reload is read there rather than waited out.
	log string
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

// Signalled reads --reload (a process id or a pid file) and checks, before anything is written,
// that it is a running nats-server (a stale pid file's pid now belonging to a shell must not be
// sent SIGHUP), started from a configuration file (a server reloads only that: nats-server -c),
// and that the server at monitor is that process (docs/nats.md, "Reloading a server by
// signal").
func Signalled(ctx context.Context, target, monitor string, wait time.Duration) (*SignalledServer, error) {
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
	if err := IsNATSServer(pid); err != nil {
		return nil, fmt.Errorf("--reload %s: %v; give the nats-server's pid or pid file", target, err)
	}
	config, err := configOf(pid)
	if err != nil {
		return nil, fmt.Errorf("--reload %s: %v", target, err)
	}
	r := &SignalledServer{pid: pid, config: config, monitor: strings.TrimRight(monitor, "/"), wait: wait}
	if err := r.identify(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// configOf reads the configuration file a nats-server process was started with from its
// command line (-c, --config), relative to its working directory.
func configOf(pid int) (string, error) {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return "", fmt.Errorf("cannot read the command line of process %d: %v", pid, err)
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	config := ""
	for i, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || (name != "c" && name != "config") {
			continue
		}
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		config = value
	}
	if config == "" {
		return "", fmt.Errorf("nats-server (pid %d) was not started from a configuration file (-c): it has none to reload, so it cannot serve an accounts file meshc writes", pid)
	}
	if !filepath.IsAbs(config) {
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if err != nil {
			return "", fmt.Errorf("nats-server (pid %d) names its configuration %s relative to its working directory, which meshc cannot read (%v); start it with an absolute -c path, or run apply as its user", pid, config, err)
		}
		config = filepath.Join(cwd, config)
	}
	return config, nil
}

// identify checks that the server answering at the monitoring endpoint is the signalled
// process, or the endpoint is another server's — another nats-server on the default port, say —
// and what it loaded says nothing about the process signalled. The server says which port its
// monitoring listens on (/varz http_port, else the URL's); the process must hold that listening socket
// (/proc/PID/net/tcp and /proc/PID/fd, readable by whoever may signal it). Where /proc cannot
// say, the server's start (/varz start) must fall just after the process's own. The reload's
// own proof, the configuration digest the endpoint reports after the signal, holds it again.
func (r *SignalledServer) identify(ctx context.Context) error {
	v, err := varzOf(ctx, r)
	if err != nil {
		return err
	}
	another := fmt.Errorf("--monitor %s: the server there is not nats-server (pid %d): it is another server; give --monitor the monitoring URL of the server --reload names", r.monitor, r.pid)
	// The port the server says it listens on (a configured one; -1 takes a free one and says
	// -1), or else the one the URL names.
	port := v.HTTPPort
	if u, err := url.Parse(r.monitor); port <= 0 && err == nil {
		port, _ = strconv.Atoi(u.Port())
	}
	if owns, known := listensOn(r.pid, port); known {
		if !owns {
			return another
		}
	} else if started, err := processStart(r.pid); err == nil &&
		(v.Start.Before(started.Add(-2*time.Second)) || v.Start.After(started.Add(time.Minute))) {
		return fmt.Errorf("%w (it started at %s, the process at %s)", another, v.Start.Format(time.RFC3339), started.Format(time.RFC3339))
	}
	if r.log == "" {
		r.log = logOf(r.pid)
	}
	return nil
}

// listensOn reports whether the process holds a socket listening on the TCP port, and whether
// that could be known (its /proc entries readable).
func listensOn(pid, port int) (owns, known bool) {
	if port <= 0 {
		return false, false
	}
	inodes := map[string]bool{}
	for _, table := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, _ := strings.Cut(f[1], ":")
			if p, err := strconv.ParseInt(hexPort, 16, 32); err == nil && int(p) == port {
				inodes[f[9]] = true
			}
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return false, false
	}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok && inodes[strings.TrimSuffix(inode, "]")] {
			return true, true
		}
	}
	return false, true
}

// processStart reads when a process started: /proc/PID/stat's start time, in clock ticks since
// boot (USER_HZ, 100 on Linux), after /proc/stat's boot time.
func processStart(pid int) (time.Time, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return time.Time{}, err
	}
	// The command name may hold spaces and parentheses: fields are counted after its last ')'.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) < 20 {
		return time.Time{}, errors.New("short /proc stat")
	}
	ticks, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	boot, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, err
	}
	for _, line := range strings.Split(string(boot), "\n") {
		if rest, ok := strings.CutPrefix(line, "btime "); ok {
			secs, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
			if err != nil {
				return time.Time{}, err
			}
			return time.Unix(secs, 0).Add(time.Duration(ticks) * 10 * time.Millisecond), nil
		}
	}
	return time.Time{}, errors.New("no boot time in /proc/stat")
}

// logOf finds where a nats-server process writes its log when meshc can read it: its standard
// error redirected to a file. (A log_file in its configuration is read from the configuration.)
func logOf(pid int) string {
	target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/2", pid))
	if err != nil || !filepath.IsAbs(target) {
		return "" // a terminal, a pipe, the journal's socket: not readable after the fact
	}
	if info, err := os.Stat(target); err != nil || !info.Mode().IsRegular() {
		return ""
	}
	return target
}

// ConfigFile is the configuration file the server was started from.
func (r *SignalledServer) ConfigFile() string { return r.config }

// Monitor asks the server's monitoring endpoint.
func (r *SignalledServer) Monitor(ctx context.Context, pathAndQuery string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.monitor+pathAndQuery, nil)
	if err != nil {
		return nil, fmt.Errorf("--monitor %s: %w", r.monitor, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("--monitor %s: %w: meshc reads what the server has loaded from its monitoring endpoint (nats-server -m PORT, or http: in its configuration)", r.monitor, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("--monitor %s: %s answered %s; give --monitor the server's monitoring URL (nats-server -m PORT, or http: in its configuration)", r.monitor, pathAndQuery, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 64<<20))
}

// Signal sends SIGHUP, as nats-server --signal reload does. The server answers only in its log:
// rejected reads it, from where it ended when the signal was sent.
func (r *SignalledServer) Signal(ctx context.Context, logFile string) (func() string, error) {
	if err := IsNATSServer(r.pid); err != nil {
		return nil, fmt.Errorf("--reload: %v: the server stopped or was replaced since apply began; apply again", err)
	}
	log := r.log
	if logFile != "" {
		log = logFile
	}
	from := int64(-1)
	if info, err := os.Stat(log); log != "" && err == nil {
		from = info.Size()
	}
	p, err := os.FindProcess(r.pid)
	if err == nil {
		err = p.Signal(syscall.SIGHUP)
	}
	if err != nil {
		return nil, fmt.Errorf("--reload: signalling nats-server (pid %d) to reload: %w; reload it by hand (nats-server --signal reload=%d)", r.pid, err, r.pid)
	}
	return func() string {
		if from < 0 {
			return ""
		}
		return refusalLogged(log, from)
	}, nil
}

// refusalLogged reads a server's log from offset for its refusal of a reload, the line
// "Failed to reload server configuration: …".
func refusalLogged(log string, from int64) string {
	f, err := os.Open(log)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return ""
	}
	data, _ := io.ReadAll(io.LimitReader(f, 1<<20))
	const failed = "Failed to reload server configuration: "
	for _, line := range strings.Split(string(data), "\n") {
		if _, why, ok := strings.Cut(line, failed); ok {
			return strings.TrimSpace(why)
		}
	}
	return ""
}

// Where is the server, for messages.
func (r *SignalledServer) Where() string { return fmt.Sprintf("nats-server (pid %d)", r.pid) }

// Wait bounds one reload.
func (r *SignalledServer) Wait() time.Duration { return r.wait }

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
