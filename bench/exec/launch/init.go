package launch

import "syscall"

// The descriptors the first stage holds besides ReportFD: DeathFD is the
// read end of a pipe whose write end only gavel holds (it reads end of
// file when gavel is gone, however it died); StatusFD is where the first
// stage writes the program's wait status.
const (
	DeathFD  = 4
	StatusFD = 5
	selfFD   = 6 // the launcher's file, to start the second stage from
)

// runInit is the first stage of a run in its own PID namespace: this
// process is the namespace's init (PID 1). It mounts a /proc of the
// namespace, gives the run its private folders, closes every descriptor
// the run must not inherit, and starts the second stage (this launcher
// again, which sets the limits and the user and execs the program). Then
// it reaps: when the program ends, everything left in the namespace is
// killed (the kernel kills the rest when init dies), and the program's
// wait status goes to gavel on StatusFD. When gavel dies the death pipe
// reads end of file and the whole run is killed at once.
func runInit(c *Config, cgroup bool) {
	if syscall.Getpid() != 1 {
		fail("init: not the first process of a PID namespace", "")
	}
	second := *c
	second.Init, second.CgroupP, second.Mounts, second.Nest, second.Direct, second.Hide = false, "", false, false, false, ""
	second.InCgroup, second.PIDNS = cgroup, true
	// The launcher's own file, held open: the mounts may hide its path
	// (a launcher under /tmp), and the second stage is started from it.
	self, err := syscall.Open(c.Self, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		fail("open the launcher: ", err.Error())
	}
	if self != selfFD {
		if err := syscall.Dup3(self, selfFD, syscall.O_CLOEXEC); err != nil {
			fail("keep the launcher open: ", err.Error())
		}
		syscall.Close(self)
	}
	if c.Mounts {
		// The working folder, held before the mounts: under a folder they
		// replace (a cache folder under /tmp), its path is made again.
		dirFD := -1
		if c.Hide != "" {
			if dirFD, err = syscall.Open(c.Dir, oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0); err != nil {
				fail("the working folder: ", err.Error())
			}
		}
		if err := privateMounts(); err != nil {
			fail("mounts: ", err.Error())
		}
		if c.Hide != "" {
			if err := hideOthers(c.Hide, c.Dir, dirFD, c.Disk, c.UID, c.GID); err != nil {
				fail("the working folder: ", err.Error())
			}
			syscall.Close(dirFD)
			second.DiskCap = true
		}
		// A /proc of this namespace: the run sees its own processes only,
		// and nothing of gavel's or another run's.
		// Where the kernel refuses it (a container that masks parts of the
		// host's /proc), the run goes on and its report says so.
		second.OwnProc = syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "") == nil
		second.DidMounts = true
	}
	// Nothing inherited: every descriptor but the standard ones and the
	// report goes before the second stage starts (the death pipe and the
	// status pipe stay here, closed on exec).
	closeFrom(selfFD + 1)
	closeOnExec(DeathFD)
	closeOnExec(StatusFD)
	var pid int
	if !c.Direct || c.Nest {
		env := []string{Env + "=" + second.Encode(), "GOMAXPROCS=1", "GOGC=off"}
		attr := &syscall.ProcAttr{Env: env, Files: []uintptr{0, 1, 2, ReportFD}}
		if c.Nest {
			one := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}}
			attr.Sys = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
				UidMappings: one, GidMappings: one, GidMappingsEnableSetgroups: false}
		}
		if pid, err = syscall.ForkExec("/proc/self/fd/"+itoa(selfFD), []string{c.Self}, attr); err != nil {
			fail("start the second stage: ", err.Error())
		}
		// The second stage reports (or fails) on ReportFD itself.
		reported = true
		syscall.Close(ReportFD)
	} else {
		pid = startProgram(&second)
	}
	go func() {
		var b [1]byte
		for {
			if _, err := syscall.Read(DeathFD, b[:]); err != syscall.EINTR {
				break
			}
		}
		// gavel is gone: so is the run.
		syscall.Kill(-1, syscall.SIGKILL)
		syscall.Exit(137)
	}()
	var status syscall.WaitStatus
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			break // no child left
		}
		if wpid == pid {
			status = ws
			// The program is done: what it left behind goes with it.
			syscall.Kill(-1, syscall.SIGKILL)
		}
	}
	b := putInt(nil, int64(status))
	syscall.Write(StatusFD, b)
	syscall.Exit(0)
}

// hideOthers covers base, the folder of every run's working folder, with
// an empty tmpfs of disk bytes, and puts dir, one of them, back in its
// place as an overlay: the files gavel put there are read from the real
// folder, and whatever the run writes goes to the tmpfs, so a run can fill
// neither the host's disk nor another run's folder.
func hideOthers(base, dir string, fd int, disk int64, uid, gid int) error {
	name := dir[len(base):]
	if len(dir) <= len(base)+1 || dir[:len(base)] != base || name[0] != '/' {
		return syscall.EINVAL
	}
	for i := 1; i < len(name); i++ {
		if name[i] == '/' {
			return syscall.EINVAL // one level below base
		}
	}
	if err := mkdirAll(base); err != nil {
		return err
	}
	if err := syscall.Mount("tmpfs", base, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+itoa(disk)+",mode=0711"); err != nil {
		return err
	}
	upper, work := base+"/.upper", base+"/.work"
	for _, d := range []string{upper, work, dir} {
		if err := syscall.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	if uid >= 0 {
		// The folder's root is the upper folder's: the run's user owns it.
		if err := syscall.Chown(upper, uid, gid); err != nil {
			return err
		}
	}
	return syscall.Mount("overlay", dir, "overlay", syscall.MS_NOSUID|syscall.MS_NODEV,
		"lowerdir=/proc/self/fd/"+itoa(int64(fd))+",upperdir="+upper+",workdir="+work)
}

// mkdirAll makes a folder and its parents, as root of the mount namespace
// (inside a tmpfs the mounts just made).
func mkdirAll(path string) error {
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		if err := syscall.Mkdir(path[:i], 0o755); err != nil && err != syscall.EEXIST {
			return err
		}
	}
	return nil
}

// DecodeStatus reads the wait status the first stage wrote; false when it
// wrote none (it was killed first).
func DecodeStatus(b []byte) (syscall.WaitStatus, bool) {
	d := decoder{s: string(b)}
	v := d.int()
	return syscall.WaitStatus(v), !d.bad && d.s == ""
}

// closeFrom closes every descriptor from fd up: with close_range where
// the kernel has it, else one by one up to the descriptor limit.
func closeFrom(fd int) {
	if _, _, errno := syscall.RawSyscall(sysCloseRange, uintptr(fd), ^uintptr(0), 0); errno == 0 {
		return
	}
	var lim syscall.Rlimit
	max := 1024
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil && lim.Cur < 1<<20 {
		max = int(lim.Cur)
	}
	for i := fd; i < max; i++ {
		syscall.Close(i)
	}
}

func closeOnExec(fd int) {
	syscall.RawSyscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_SETFD, syscall.FD_CLOEXEC)
}

// sysCloseRange is close_range(2)'s number, the same on amd64 and arm64
// (the system calls added since 5.1 share one table).
const sysCloseRange = 436

// oPath is O_PATH, which package syscall does not name.
const oPath = 0x200000

// startProgram starts the program as this first stage's child, with the
// run's limits, folder and user: what a second stage would do, without
// starting the launcher again. The limits are set on this process, whose
// children inherit them, just before the fork and put back after it
// (root may raise a hard limit); the address-space limit too, which the
// fork's own allocations come well within. It reports on ReportFD first.
func startProgram(c *Config) int {
	rep := Report{Cgroup: c.InCgroup, PIDNS: c.PIDNS, OwnProc: c.OwnProc, Mounts: c.DidMounts, DiskCap: c.DiskCap, User: "same as gavel"}
	var saved []func()
	restore := func() {
		for i := len(saved) - 1; i >= 0; i-- {
			saved[i]()
		}
	}
	first, addressSpace := c.limits(rep.Cgroup)
	for _, l := range first {
		if err := setLimit(l, &saved); err != nil {
			restore()
			fail("setrlimit "+l.Name+": ", err.Error())
		}
	}
	if err := syscall.Chdir(c.Dir); err != nil {
		restore()
		fail("chdir: ", err.Error())
	}
	attr := &syscall.ProcAttr{Env: c.Env, Files: []uintptr{0, 1, 2}}
	if c.UID >= 0 {
		attr.Sys = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(c.UID), Gid: uint32(c.GID), Groups: []uint32{}}}
		rep.User = "uid " + itoa(int64(c.UID))
	}
	report(&rep)
	if addressSpace != nil {
		if err := setLimit(addressSpace, &saved); err != nil {
			restore()
			fail("setrlimit as: ", err.Error())
		}
	}
	pid, err := syscall.ForkExec(c.Path, c.Argv, attr)
	restore()
	if err != nil {
		// As a second stage whose exec failed: said on stderr, exit 125.
		fail("exec "+c.Argv[0]+": ", err.Error())
	}
	return pid
}

// setLimit sets a limit on this process and adds how to put it back.
func setLimit(l *Rlimit, saved *[]func()) error {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(l.Resource, &old); err != nil {
		return err
	}
	if err := syscall.Setrlimit(l.Resource, &syscall.Rlimit{Cur: l.Value, Max: l.Value}); err != nil {
		return err
	}
	res := l.Resource
	*saved = append(*saved, func() { syscall.Setrlimit(res, &old) })
	return nil
}
