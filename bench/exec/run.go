package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gavelhq/gavel/bench/exec/launch"
)

// Limits bound one run. Zero values take the defaults.
type Limits struct {
	Wall         time.Duration `json:"wall"`          // default 20 s
	CPU          time.Duration `json:"cpu"`           // default the wall time
	AddressSpace int64         `json:"address_space"` // bytes, default 2 GiB
	FileSize     int64         `json:"file_size"`     // bytes, default 16 MiB
	OpenFiles    int           `json:"open_files"`    // default 64
	Processes    int           `json:"processes"`     // default 64
	// Output is how much of stdout and of stderr is kept (default 64 KiB);
	// a program that writes more than 16 times that is stopped.
	Output int `json:"output"`
	// Disk is what the program may write in its working folder, a tmpfs
	// of that size (default 256 MiB); gavel's own files in the folder do
	// not count.
	Disk int64 `json:"disk"`
}

func (l Limits) norm() Limits {
	if l.Wall <= 0 {
		l.Wall = 20 * time.Second
	}
	if l.CPU <= 0 {
		l.CPU = l.Wall
	}
	if l.AddressSpace <= 0 {
		l.AddressSpace = 2 << 30
	}
	if l.FileSize <= 0 {
		l.FileSize = 16 << 20
	}
	if l.OpenFiles <= 0 {
		l.OpenFiles = 64
	}
	if l.Processes <= 0 {
		l.Processes = 64
	}
	if l.Output <= 0 {
		l.Output = 64 << 10
	}
	if l.Disk <= 0 {
		l.Disk = 256 << 20
	}
	return l
}

// rlimitNPROC is RLIMIT_NPROC on Linux.
const rlimitNPROC = 6

func (l Limits) rlimits() []launch.Rlimit {
	cpu := uint64((l.CPU + time.Second - 1) / time.Second)
	return []launch.Rlimit{
		{Name: "cpu", Resource: syscall.RLIMIT_CPU, Value: cpu},
		{Name: "as", Resource: syscall.RLIMIT_AS, Value: uint64(l.AddressSpace)},
		{Name: "fsize", Resource: syscall.RLIMIT_FSIZE, Value: uint64(l.FileSize)},
		{Name: "nofile", Resource: syscall.RLIMIT_NOFILE, Value: uint64(l.OpenFiles)},
		// The cgroup bounds a run's processes; RLIMIT_NPROC counts every
		// process of the user, other runs' (and dying ones') included, so
		// it is only the fallback.
		{Name: "nproc", Resource: rlimitNPROC, Value: uint64(l.Processes), UnlessCgroup: true},
		{Name: "core", Resource: syscall.RLIMIT_CORE, Value: 0},
	}
}

// Isolation says what a run was isolated by.
type Isolation struct {
	Network    string `json:"network"`
	Filesystem string `json:"filesystem"`
	User       string `json:"user"`
	Processes  string `json:"processes"`
}

// Run is the raw outcome of one sandboxed run.
type Run struct {
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
	// ForksRefused counts the forks the run's process limit refused (from
	// its pids cgroup's events; 0 without one).
	ForksRefused int `json:"forks_refused,omitempty"`
	// OutputLimit is set when the program wrote past the output cap and
	// was stopped.
	OutputLimit bool          `json:"output_limit,omitempty"`
	Stdout      string        `json:"stdout"`
	Stderr      string        `json:"stderr"`
	Truncated   bool          `json:"truncated,omitempty"`
	Wall        time.Duration `json:"wall_ns"`
	CPU         time.Duration `json:"cpu_ns"`
	Isolation   Isolation     `json:"isolation"`
}

// Cmd is a program to run in a sandbox.
type Cmd struct {
	Argv []string
	// Env is the program's whole environment (nothing is inherited); PATH
	// and HOME are added when missing.
	Env []string
	// Dir is the working folder; it must come from NewWorkdir.
	Dir    string
	Limits Limits
}

// sandboxUID is nobody's: a run's user when gavel is root and the run
// has no uid of its own (a folder not made by NewWorkdir).
const sandboxUID, sandboxGID = 65534, 65534

// As root each working folder, and the run in it, gets a user of its own
// (uid and gid runUIDBase + slot), from a range no account or container
// manager hands out (systemd leaves 1879048192-2147352575 unused). Other
// runs' processes and files are then another user's, and RLIMIT_NPROC
// counts the run's own processes only: a per-run process limit that needs
// no cgroup (joining a cgroup v1 costs a grace period of the kernel's,
// 10-20 ms a run). A slot is held by a lock on a file of its own under
// the folder of working folders, so concurrent gavels never share one,
// and a gavel that dies frees its slots.
const (
	runUIDBase  = 0x7A000000
	runUIDSlots = 4096
)

// RunUsers is the range of the runs' own uids, [lo, hi).
func RunUsers() (lo, hi int) { return runUIDBase, runUIDBase + runUIDSlots }

var (
	runUIDs    sync.Map // working folder -> its uid
	runUIDNext atomic.Int64
)

// claimUID takes a free slot and returns its uid and the function that
// frees it.
func claimUID(base string) (int, func(), error) {
	dir := filepath.Join(base, "uids")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, nil, err
	}
	start := runUIDNext.Add(1) + int64(os.Getpid())*61
	for i := range int64(runUIDSlots) {
		slot := int((start + i) % runUIDSlots)
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(slot)), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return 0, nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		return runUIDBase + slot, func() { f.Close() }, nil
	}
	return 0, nil, fmt.Errorf("sandbox: all %d run users are in use", runUIDSlots)
}

// runUID is the uid of the run in a working folder (or a file in one):
// its own when NewWorkdir gave it one, else nobody's.
func runUID(path string) (int, bool) {
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		if uid, ok := runUIDs.Load(p); ok {
			return uid.(int), true
		}
		if p == "/" || p == "." {
			return sandboxUID, false
		}
	}
}

// NewWorkdir makes a private working folder outside /tmp (which the
// sandbox replaces with its own), owned by the sandbox user when gavel runs
// as root. As root the folder is under /var/lib/gavel, which the sandbox
// user can reach (a root home folder is closed to it); otherwise under the
// user's cache folder. The returned function removes it.
func NewWorkdir() (string, func(), error) {
	base := workBase()
	if err := os.MkdirAll(base, 0o711); err != nil {
		return "", nil, err
	}
	os.Chmod(base, 0o711)
	removeStale.Do(func() { removeStaleRuns(base) })
	dir, err := os.MkdirTemp(base, fmt.Sprintf("run-%d-", os.Getpid()))
	if err != nil {
		return "", nil, err
	}
	if os.Geteuid() != 0 {
		return dir, func() { os.RemoveAll(dir) }, nil
	}
	uid, release, err := claimUID(base)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	if err := os.Chown(dir, uid, uid); err != nil {
		release()
		os.RemoveAll(dir)
		return "", nil, err
	}
	runUIDs.Store(dir, uid)
	return dir, func() {
		os.RemoveAll(dir)
		runUIDs.Delete(dir)
		release()
	}, nil
}

// workBase is the folder of the working folders.
func workBase() string {
	if os.Geteuid() == 0 {
		return "/var/lib/gavel/sandbox"
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "gavel", "sandbox")
}

var removeStale sync.Once

// alive says whether a process of this PID is running (a PID reused by
// another process counts as alive: nothing of it is removed).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// removeStaleRuns removes the working folders and the pids cgroups that a
// gavel killed before it could clean up left behind: those named for a
// process that is gone.
func removeStaleRuns(base string) {
	stale := func(name, prefix string) bool {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			return false
		}
		parts := strings.SplitN(rest, "-", 2)
		if len(parts) != 2 {
			return false // not named for a process
		}
		pid, err := strconv.Atoi(parts[0])
		return err == nil && pid > 0 && pid != os.Getpid() && !alive(pid)
	}
	if es, err := os.ReadDir(base); err == nil {
		for _, e := range es {
			if e.IsDir() && stale(e.Name(), "run-") {
				os.RemoveAll(filepath.Join(base, e.Name()))
			}
		}
	}
	for _, parent := range []string{"/sys/fs/cgroup/pids", "/sys/fs/cgroup"} {
		es, err := os.ReadDir(parent)
		if err != nil {
			continue
		}
		for _, e := range es {
			if e.IsDir() && stale(e.Name(), "gavel-") {
				(&cgroup{dir: filepath.Join(parent, e.Name()), procs: filepath.Join(parent, e.Name(), "cgroup.procs"), fd: -1}).remove()
			}
		}
	}
}

// Chown gives a file in a working folder to the run's user (when root),
// so that the program may write it.
func Chown(path string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	uid, _ := runUID(path)
	return filepath.Walk(path, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
}

// capture keeps the first max bytes written and counts the rest.
type capture struct {
	mu    sync.Mutex
	buf   []byte
	max   int
	total atomic.Int64
	over  func()
	limit int64
	fired bool
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	if c.total.Add(int64(len(p))) > c.limit && !c.fired {
		c.fired = true
		c.over()
	}
	return len(p), nil
}

// The ways a run can be isolated, best first.
type nsMode int

const (
	// nsRoot: gavel is root; new network, mount, PID and IPC namespaces,
	// the program as nobody.
	nsRoot nsMode = iota
	// nsUser: an ordinary user; the same namespaces under a new user
	// namespace in which gavel's user is root (no privilege on the host).
	nsUser
	// nsNone: the kernel refused new namespaces: no isolation but the
	// limits, and only with AllowUnisolated.
	nsNone
)

var (
	nsMu      sync.Mutex
	nsRefused = map[nsMode]error{} // the modes the kernel refused, and how
	cgCounter atomic.Int64
	// unisolated allows runs without namespaces (AllowUnisolated).
	unisolated atomic.Bool
)

// AllowUnisolated lets runs go on where the kernel refuses the namespaces
// that isolate them (their Isolation then says what does not hold).
// Without it such a run is an error (ErrUnisolated).
func AllowUnisolated(v bool) { unisolated.Store(v) }

// ErrUnisolated is wrapped by the error of a run that could not be
// isolated.
var ErrUnisolated = errors.New("the sandbox cannot isolate programs here")

func (m nsMode) cloneFlags() uintptr {
	const base = syscall.CLONE_NEWNET | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC
	switch m {
	case nsRoot:
		return base
	case nsUser:
		return base | syscall.CLONE_NEWUSER
	}
	return 0
}

// mode is the best isolation not yet refused.
func mode() (nsMode, error) {
	nsMu.Lock()
	defer nsMu.Unlock()
	m := nsUser
	if os.Geteuid() == 0 {
		m = nsRoot
	}
	if err := nsRefused[m]; err != nil {
		return nsNone, err
	}
	return m, nil
}

// Exec runs a program in the sandbox and waits for it (and every process it
// started) to end. The error is for failures of the sandbox itself; a
// program's failure is in the Run.
func Exec(ctx context.Context, c Cmd) (*Run, error) {
	lim := c.Limits.norm()
	self, err := launcher()
	if err != nil {
		return nil, err
	}
	env := append([]string(nil), c.Env...)
	if envValue(env, "PATH") == "" {
		env = append(env, "PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin")
	}
	if envValue(env, "HOME") == "" {
		env = append(env, "HOME="+c.Dir)
	}
	useNS, refused := mode()
	if useNS == nsNone && !unisolated.Load() {
		return nil, fmt.Errorf("%w: the kernel refused new namespaces (%v), so a program could reach the network, other processes and gavel's own; give --allow-unisolated to run anyway with its isolation reported as it is", ErrUnisolated, refused)
	}
	uid, ownUID := runUID(c.Dir)
	// A pids cgroup, unless joining one would cost more than it adds: with
	// a uid of its own and a PID namespace (whose end kills every process
	// of the run) RLIMIT_NPROC bounds the run alone, and a cgroup v1 join
	// costs a kernel grace period. A cgroup v2 is entered at creation
	// (CLONE_INTO_CGROUP), for nothing.
	cg := newCgroup(lim.Processes, !(ownUID && useNS == nsRoot))
	if cg != nil {
		defer cg.remove()
	}
	config := func(m nsMode) string {
		cfg := launch.Config{Path: lookPath(c.Argv[0], env), Argv: c.Argv, Env: env, Dir: c.Dir, Limits: lim.rlimits(), UID: -1, GID: -1,
			Mounts: m != nsNone, Init: m != nsNone, Self: self, Nest: m == nsUser, Direct: m == nsRoot && staticBinary(self)}
		if cfg.Init && filepath.Dir(c.Dir) == workBase() {
			cfg.Hide, cfg.Disk = workBase(), lim.Disk
		}
		if m == nsRoot {
			cfg.UID, cfg.GID = uid, uid
		}
		switch {
		case cg != nil && cg.cloneInto:
			cfg.InCgroup = true // entered at creation
		case cg != nil:
			cfg.CgroupP = cg.procs
		}
		return cfg.Encode()
	}
	var death *os.File            // the write end of the run's death pipe
	var statusR, statusW *os.File // the first stage's status pipe
	defer func() {
		if death != nil {
			death.Close()
		}
	}()
	var start func(m nsMode) (*osexec.Cmd, *os.File, *capture, *capture, error)
	start = func(m nsMode) (*osexec.Cmd, *os.File, *capture, *capture, error) {
		cmd := osexec.Command(self)
		// The launcher needs one thread and no collector: fewer threads
		// to start, and fewer to signal when it changes its user.
		cmd.Env = []string{launch.Env + "=" + config(m), "GOMAXPROCS=1", "GOGC=off"}
		cmd.Dir = c.Dir
		attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Cloneflags: m.cloneFlags()}
		if cg != nil && cg.cloneInto {
			attr.UseCgroupFD, attr.CgroupFD = true, cg.fd
		}
		if m == nsUser {
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
			attr.GidMappingsEnableSetgroups = false
		}
		cmd.SysProcAttr = attr
		// When the program exits but a descendant still holds its output
		// open, stop waiting for the output soon; the descendant is killed
		// right after.
		cmd.WaitDelay = 300 * time.Millisecond
		stdout := &capture{max: lim.Output, limit: int64(16 * lim.Output)}
		stderr := &capture{max: lim.Output, limit: int64(16 * lim.Output)}
		cmd.Stdout, cmd.Stderr = stdout, stderr
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, nil, nil, nil, err
		}
		cmd.ExtraFiles = []*os.File{pw}
		var deathR *os.File
		if m != nsNone {
			// The first stage's death pipe (it reads end of file when this
			// process is gone) and its status pipe.
			var deathW *os.File
			if deathR, deathW, err = os.Pipe(); err != nil {
				pr.Close()
				pw.Close()
				return nil, nil, nil, nil, err
			}
			if death != nil {
				death.Close()
			}
			if statusR != nil {
				statusR.Close()
			}
			death = deathW
			if statusR, statusW, err = os.Pipe(); err != nil {
				pr.Close()
				pw.Close()
				deathR.Close()
				return nil, nil, nil, nil, err
			}
			cmd.ExtraFiles = append(cmd.ExtraFiles, deathR, statusW)
		}
		err = cmd.Start()
		if err != nil && attr.UseCgroupFD {
			// A kernel without CLONE_INTO_CGROUP: join by writing instead.
			cg.cloneInto = false
			attr.UseCgroupFD = false
			cmd = nil
			pr.Close()
			pw.Close()
			if deathR != nil {
				deathR.Close()
				statusW.Close()
			}
			return start(m)
		}
		pw.Close()
		if deathR != nil {
			deathR.Close()
			statusW.Close()
		}
		if err != nil {
			pr.Close()
			return nil, nil, nil, nil, err
		}
		return cmd, pr, stdout, stderr, nil
	}
	t0 := time.Now()
	var cmd *osexec.Cmd
	var report *os.File
	var stdout, stderr *capture
	var rep launch.Report
	for attempt := 0; ; attempt++ {
		cmd, report, stdout, stderr, err = start(useNS)
		if err != nil && useNS != nsNone && (errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EACCES)) {
			nsMu.Lock()
			nsRefused[useNS] = err
			nsMu.Unlock()
			if !unisolated.Load() {
				return nil, fmt.Errorf("%w: the kernel refused new namespaces (%v); give --allow-unisolated to run anyway with its isolation reported as it is", ErrUnisolated, err)
			}
			useNS = nsNone
			if cg == nil {
				// Without a PID namespace only a cgroup reaches every
				// descendant.
				if cg = newCgroup(lim.Processes, true); cg != nil {
					defer cg.remove()
				}
			}
			cmd, report, stdout, stderr, err = start(nsNone)
		}
		if err != nil {
			return nil, fmt.Errorf("sandbox: start: %w", err)
		}
		b, _ := io.ReadAll(report)
		report.Close()
		var ok bool
		rep, ok = launch.DecodeReport(b)
		if ok || attempt == 2 {
			break
		}
		// The launcher died before it reported, so before the program
		// could run (the kernel refused it memory right after a fork bomb,
		// say): nothing untrusted ran, so start again, a little later.
		cmd.Wait()
		if cg != nil {
			cg.killAll()
		}
		time.Sleep(time.Duration(100<<attempt) * time.Millisecond)
	}
	pgid := cmd.Process.Pid
	var outputLimit atomic.Bool
	killAll := func() {
		syscall.Kill(-pgid, syscall.SIGKILL)
		if cg != nil {
			cg.killAll()
		}
	}
	over := func() { outputLimit.Store(true); killAll() }
	stdout.over, stderr.over = over, over

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(lim.Wall)
	defer timer.Stop()
	timedOut := false
	var waitErr error
	select {
	case waitErr = <-done:
	case <-timer.C:
		timedOut = true
		killAll()
		waitErr = <-done
	case <-ctx.Done():
		killAll()
		<-done
		return nil, ctx.Err()
	}
	// Whatever the program left behind dies with it: its process group,
	// and with a cgroup every descendant, even one that left the group.
	killAll()
	if cg != nil {
		cg.waitEmpty()
	}
	r := &Run{Wall: time.Since(t0), TimedOut: timedOut, OutputLimit: outputLimit.Load(),
		Stdout: string(stdout.buf), Stderr: string(stderr.buf),
		Truncated: stdout.total.Load() > int64(lim.Output) || stderr.total.Load() > int64(lim.Output)}
	if cg != nil {
		r.ForksRefused = cg.forksRefused()
	}
	if rep.Error != "" {
		return nil, fmt.Errorf("sandbox: launcher: %s", rep.Error)
	}
	if ps := cmd.ProcessState; ps != nil {
		r.CPU = ps.UserTime() + ps.SystemTime()
		ws, ok := ps.Sys().(syscall.WaitStatus)
		if statusR != nil {
			// The first stage's own exit says nothing of the program's:
			// it wrote the program's wait status, unless it was killed.
			b, _ := io.ReadAll(statusR)
			statusR.Close()
			if st, got := launch.DecodeStatus(b); got {
				ws, ok = st, true
			}
		}
		if ok {
			if ws.Signaled() {
				r.Signal = ws.Signal().String()
				r.ExitCode = -1
			} else {
				r.ExitCode = ws.ExitStatus()
			}
		}
	} else if waitErr != nil {
		return nil, fmt.Errorf("sandbox: wait: %w", waitErr)
	}
	r.Isolation = isolation(useNS, rep, lim, ownUID && useNS == nsRoot)
	return r, nil
}

// isolation says what held in a run, in every mode: each part names what
// was in force, and "not isolated" where nothing was.
// ownUID: the run had a uid of its own.
func isolation(m nsMode, rep launch.Report, lim Limits, ownUID bool) Isolation {
	iso := Isolation{Network: "host (not isolated)", Filesystem: "host, as gavel's user (not isolated)",
		User: "same as gavel (not isolated)", Processes: "host PID namespace (not isolated)"}
	if m != nsNone {
		iso.Network = "new network namespace (no interfaces)"
	}
	switch {
	case rep.Mounts && m == nsUser:
		iso.Filesystem = "private /tmp, /var/tmp, /dev/shm, /run/lock; the rest as gavel's user can reach it (not isolated)"
	case rep.Mounts:
		iso.Filesystem = "private /tmp, /var/tmp, /dev/shm, /run/lock; the rest writable only by its owners"
	}
	if rep.DiskCap {
		iso.Filesystem = fmt.Sprintf("its own folder only, on a tmpfs of %d MiB (other runs' folders hidden); ", lim.Disk>>20) + iso.Filesystem
	}
	switch {
	case m == nsUser:
		iso.User = "gavel's user, as root of a user namespace of its own (no privilege on the host)"
	case rep.User != "" && rep.User != "same as gavel":
		iso.User = rep.User
		if ownUID {
			iso.User += ", a user of its own (no other run or account has it)"
		}
	}
	if rep.PIDNS {
		iso.Processes = "PID namespace of its own"
		if rep.OwnProc {
			iso.Processes += " with its own /proc"
		} else {
			iso.Processes += ", but the host's /proc (other processes readable: not isolated)"
		}
	}
	if rep.Cgroup {
		iso.Processes += fmt.Sprintf("; pids cgroup (pids.max %d)", lim.Processes)
	} else if ownUID {
		iso.Processes += fmt.Sprintf("; RLIMIT_NPROC %d on its own user (its processes only)", lim.Processes)
	} else {
		iso.Processes += fmt.Sprintf("; RLIMIT_NPROC %d", lim.Processes)
	}
	return iso
}

// cgroup is a pids cgroup for one run.
type cgroup struct {
	dir, procs string
	// cloneInto: a cgroup v2, entered as the launcher is created
	// (CLONE_INTO_CGROUP through fd) rather than joined by a write.
	cloneInto bool
	fd        int
}

// newCgroup makes a pids cgroup with pids.max, or returns nil when the
// machine does not allow it. A cgroup v1 (joined by a write, which waits
// for a kernel grace period) only when v1 is true.
func newCgroup(max int, v1 bool) *cgroup {
	name := fmt.Sprintf("gavel-%d-%d", os.Getpid(), cgCounter.Add(1))
	for _, parent := range []string{"/sys/fs/cgroup/pids", "/sys/fs/cgroup"} {
		if _, err := os.Stat(filepath.Join(parent, "cgroup.procs")); err != nil {
			continue
		}
		isV2 := parent == "/sys/fs/cgroup"
		if isV2 {
			b, err := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
			if err != nil || !strings.Contains(string(b), "pids") {
				continue
			}
		} else if !v1 {
			continue
		}
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(max)), 0); err != nil {
			os.Remove(dir)
			continue
		}
		cg := &cgroup{dir: dir, procs: filepath.Join(dir, "cgroup.procs"), fd: -1}
		if isV2 {
			if fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0); err == nil {
				cg.fd, cg.cloneInto = fd, true
			}
		}
		return cg
	}
	return nil
}

func (c *cgroup) pids() []int {
	b, err := os.ReadFile(c.procs)
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// forksRefused reads how often pids.max refused a fork ("max N" in
// pids.events).
func (c *cgroup) forksRefused() int {
	b, err := os.ReadFile(filepath.Join(c.dir, "pids.events"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "max "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

func (c *cgroup) killAll() {
	for _, p := range c.pids() {
		syscall.Kill(p, syscall.SIGKILL)
	}
}

// waitEmpty kills until the cgroup is empty, for about two seconds at
// most, looking again soon at first (a killed process is gone within
// microseconds to milliseconds).
func (c *cgroup) waitEmpty() {
	wait := 100 * time.Microsecond
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		ps := c.pids()
		if len(ps) == 0 {
			return
		}
		for _, p := range ps {
			syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(wait)
		wait = min(2*wait, 10*time.Millisecond)
	}
}

// remove empties and removes the cgroup; the kernel may refuse the removal
// for a moment after its last process has gone.
func (c *cgroup) remove() {
	if c.fd >= 0 {
		syscall.Close(c.fd)
		c.fd = -1
	}
	c.waitEmpty()
	wait := 100 * time.Microsecond
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		if err := os.Remove(c.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(wait)
		wait = min(2*wait, 10*time.Millisecond)
	}
}

var _ io.Writer = (*capture)(nil)
