// Package launch is the sandbox's launcher: gavel starts its own binary
// again with a configuration in the environment, and this package, as
// the process initialises, joins the run's cgroup, makes the mounts
// private, sets the limits, changes to the working folder and user, and
// execs the program. It never returns in that case.
//
// It imports only syscall and unsafe on purpose. Go initialises a package
// as soon as its imports are (choosing by import path among those ready),
// so a package with next to no imports runs its init before the hundred
// or more packages of gavel's dependencies: a launcher in a package that
// needs fmt or encoding/json would first pay for all of those, about 20
// ms of every sandboxed run for gavel's binary.
//
// The configuration and the report are netstrings ("5:hello,"), built and
// read by this package on both sides.
package launch

import (
	"syscall"
	"unsafe"
)

// Env names the environment variable that carries a Config.
const Env = "GAVEL_SANDBOX_LAUNCH"

// ReportFD is the file descriptor on which the launcher reports, just
// before it execs the program (or when it fails).
const ReportFD = 3

// FailExit is the launcher's exit code when it cannot start the program.
const FailExit = 125

// Rlimit is one resource limit the launcher sets.
type Rlimit struct {
	Name     string
	Resource int
	Value    uint64
	// UnlessCgroup leaves the limit out when the run joined its cgroup
	// (RLIMIT_NPROC, which counts every process of the user, is then only
	// the fallback).
	UnlessCgroup bool
}

// Config is what the launcher applies before it execs Path.
type Config struct {
	Path    string // the program, a path (not looked up)
	Argv    []string
	Env     []string
	Dir     string
	Limits  []Rlimit
	UID     int // -1: keep
	GID     int
	Mounts  bool   // private mounts and fresh tmpfs on the shared folders
	CgroupP string // a cgroup.procs file to join, or ""
	// Init makes this launcher the first stage, the init of the run's PID
	// namespace (runInit), which starts Self again as the second stage.
	Init bool
	Self string
	// Nest starts the second stage in a user and mount namespace of its
	// own, in which the first stage's mounts are locked: a program that is
	// root of its user namespace cannot unmount its /proc to see the
	// host's.
	Nest bool
	// Direct lets the first stage start the program itself, with the
	// limits set on itself around the fork (startProgram), rather than
	// through a second stage: for a launcher without cgo only, whose
	// runtime needs no new mapping for a thread (glibc maps a thread's
	// stack, which the address-space limit would refuse). Not with Nest.
	Direct bool
	// Hide is the folder that holds every run's working folder: the first
	// stage covers it with an empty tmpfs in which only Dir is put back,
	// so a run cannot reach another's folder by its path.
	Hide string
	// Disk caps what the run may write in its folder (with Hide), bytes.
	Disk int64
	// DiskCap: the first stage put the folder on a tmpfs of Disk bytes.
	DiskCap bool
	// What the first stage did, for the second stage's report.
	InCgroup, PIDNS, DidMounts, OwnProc bool
}

// Report is what the launcher tells its parent.
type Report struct {
	Mounts bool
	Cgroup bool
	// PIDNS: the run had a PID namespace of its own, with its own /proc
	// (OwnProc) when the mounts were made.
	PIDNS, OwnProc bool
	// DiskCap: the folder was on a tmpfs of the run's disk cap.
	DiskCap bool
	User    string
	Error   string
}

// Encode is the Config as the value of Env.
func (c *Config) Encode() string {
	var b []byte
	b = putString(b, "3")
	b = putString(b, c.Path)
	b = putString(b, c.Dir)
	b = putInt(b, int64(c.UID))
	b = putInt(b, int64(c.GID))
	b = putBool(b, c.Mounts)
	b = putString(b, c.CgroupP)
	b = putBool(b, c.Init)
	b = putString(b, c.Self)
	b = putBool(b, c.Nest)
	b = putBool(b, c.Direct)
	b = putString(b, c.Hide)
	b = putInt(b, c.Disk)
	b = putBool(b, c.DiskCap)
	for _, v := range []bool{c.InCgroup, c.PIDNS, c.DidMounts, c.OwnProc} {
		b = putBool(b, v)
	}
	b = putInt(b, int64(len(c.Limits)))
	for _, l := range c.Limits {
		b = putString(b, l.Name)
		b = putInt(b, int64(l.Resource))
		b = putUint(b, l.Value)
		b = putBool(b, l.UnlessCgroup)
	}
	b = putStrings(b, c.Argv)
	b = putStrings(b, c.Env)
	return string(b)
}

// DecodeConfig reads a Config written by Encode.
func DecodeConfig(s string) (*Config, bool) {
	d := decoder{s: s}
	if d.str() != "3" {
		return nil, false
	}
	c := &Config{Path: d.str(), Dir: d.str(), UID: int(d.int()), GID: int(d.int()), Mounts: d.bool(), CgroupP: d.str(),
		Init: d.bool(), Self: d.str(), Nest: d.bool(), Direct: d.bool(), Hide: d.str(), Disk: d.int(), DiskCap: d.bool()}
	c.InCgroup, c.PIDNS, c.DidMounts, c.OwnProc = d.bool(), d.bool(), d.bool(), d.bool()
	n := d.int()
	if n < 0 || n > 64 {
		return nil, false
	}
	for range n {
		c.Limits = append(c.Limits, Rlimit{Name: d.str(), Resource: int(d.int()), Value: d.uint(), UnlessCgroup: d.bool()})
	}
	c.Argv = d.strs()
	c.Env = d.strs()
	if d.bad || d.s != "" || c.Path == "" || len(c.Argv) == 0 {
		return nil, false
	}
	return c, true
}

// Encode is the Report as the launcher writes it.
func (r *Report) Encode() []byte {
	var b []byte
	b = putBool(b, r.Mounts)
	b = putBool(b, r.Cgroup)
	b = putBool(b, r.PIDNS)
	b = putBool(b, r.OwnProc)
	b = putBool(b, r.DiskCap)
	b = putString(b, r.User)
	b = putString(b, r.Error)
	return b
}

// DecodeReport reads a Report; false when the launcher wrote none (it died
// first) or wrote something else.
func DecodeReport(b []byte) (Report, bool) {
	d := decoder{s: string(b)}
	r := Report{Mounts: d.bool(), Cgroup: d.bool(), PIDNS: d.bool(), OwnProc: d.bool(), DiskCap: d.bool(), User: d.str(), Error: d.str()}
	return r, !d.bad && d.s == ""
}

func init() { Launch() }

// Launch turns this process into the launcher when it was started as one;
// it never returns then. The package's init calls it.
func Launch() {
	raw, ok := syscall.Getenv(Env)
	if !ok {
		return
	}
	c, ok := DecodeConfig(raw)
	if !ok {
		fail("bad launch configuration", "")
	}
	var rep Report
	if c.CgroupP != "" {
		rep.Cgroup = writeFile(c.CgroupP, itoa(int64(syscall.Getpid())))
	}
	if c.Init {
		runInit(c, rep.Cgroup || c.InCgroup) // never returns
	}
	rep.Cgroup = rep.Cgroup || c.InCgroup
	rep.PIDNS, rep.OwnProc, rep.Mounts, rep.DiskCap = c.PIDNS, c.OwnProc, c.DidMounts, c.DiskCap
	if c.Mounts {
		rep.Mounts = privateMounts() == nil
	}
	// The address-space limit is set last, just before exec: once it is
	// below what this Go process has mapped, any allocation of the runtime
	// fails.
	first, addressSpace := c.limits(rep.Cgroup)
	for _, l := range first {
		if err := syscall.Setrlimit(l.Resource, &syscall.Rlimit{Cur: l.Value, Max: l.Value}); err != nil {
			fail("setrlimit "+l.Name+": ", err.Error())
		}
	}
	if err := syscall.Chdir(c.Dir); err != nil {
		fail("chdir: ", err.Error())
	}
	rep.User = "same as gavel"
	if c.UID >= 0 {
		if err := syscall.Setgroups(nil); err != nil {
			fail("setgroups: ", err.Error())
		}
		if err := syscall.Setgid(c.GID); err != nil {
			fail("setgid: ", err.Error())
		}
		if err := syscall.Setuid(c.UID); err != nil {
			fail("setuid: ", err.Error())
		}
		rep.User = "uid " + itoa(int64(c.UID))
	}
	// Everything exec needs is built before the address-space limit, and
	// the limit and the exec are raw system calls that allocate nothing.
	pathp, err := syscall.BytePtrFromString(c.Path)
	if err != nil {
		fail("exec "+c.Argv[0]+": ", err.Error())
	}
	argvp, err := syscall.SlicePtrFromStrings(c.Argv)
	if err != nil {
		fail("exec "+c.Argv[0]+": ", err.Error())
	}
	envp, err := syscall.SlicePtrFromStrings(c.Env)
	if err != nil {
		fail("exec "+c.Argv[0]+": ", err.Error())
	}
	report(&rep)
	if addressSpace != nil {
		lim := syscall.Rlimit{Cur: addressSpace.Value, Max: addressSpace.Value}
		if _, _, errno := syscall.RawSyscall(syscall.SYS_SETRLIMIT, uintptr(syscall.RLIMIT_AS), uintptr(unsafe.Pointer(&lim)), 0); errno != 0 {
			// The report is sent: say it on stderr, which the run keeps.
			fail("setrlimit as: ", errno.Error())
		}
	}
	// Nothing inherited reaches the program: not the report's descriptor,
	// nor any that gavel's own parent left open without close-on-exec.
	closeFrom(ReportFD)
	_, _, errno := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(pathp)),
		uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])))
	fail("exec "+c.Argv[0]+": ", errno.Error())
}

// limits are the run's limits to set, the address-space limit apart (nil
// when there is none), without those a cgroup makes needless.
func (c *Config) limits(cgroup bool) (first []*Rlimit, addressSpace *Rlimit) {
	for i := range c.Limits {
		switch l := &c.Limits[i]; {
		case l.Resource == syscall.RLIMIT_AS:
			addressSpace = l
		case !(l.UnlessCgroup && cgroup):
			first = append(first, l)
		}
	}
	return first, addressSpace
}

// report writes the report once and closes the descriptor.
func report(r *Report) {
	reported = true
	b := r.Encode()
	for len(b) > 0 {
		n, err := syscall.Write(ReportFD, b)
		if err != nil || n <= 0 {
			break
		}
		b = b[n:]
	}
	syscall.Close(ReportFD)
}

var reported bool

// fail reports the launcher's failure (to the parent, when not yet
// reported, and on stderr) and exits.
func fail(msg, detail string) {
	msg += detail
	if !reported {
		report(&Report{Error: msg})
	}
	line := []byte("gavel sandbox: " + msg + "\n")
	syscall.Write(2, line)
	syscall.Exit(FailExit)
}

func writeFile(path, s string) bool {
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	n, err := syscall.Write(fd, []byte(s))
	syscall.Close(fd)
	return err == nil && n == len(s)
}

// privateMounts makes the mount tree private to this namespace and puts
// fresh tmpfs mounts on the world-writable folders.
func privateMounts() error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return err
	}
	for _, dir := range []string{"/tmp", "/var/tmp", "/dev/shm", "/run/lock"} {
		var st syscall.Stat_t
		if err := syscall.Stat(dir, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			continue
		}
		if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=16m,mode=1777"); err != nil {
			return err
		}
	}
	return nil
}

func itoa(v int64) string { return string(putUintDigits(nil, v)) }

func putUintDigits(b []byte, v int64) []byte {
	if v < 0 {
		return putUintDigitsU(append(b, '-'), uint64(-v))
	}
	return putUintDigitsU(b, uint64(v))
}

func putUintDigitsU(b []byte, v uint64) []byte {
	var d [20]byte
	i := len(d)
	for {
		i--
		d[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return append(b, d[i:]...)
}

func putString(b []byte, s string) []byte {
	b = putUintDigitsU(b, uint64(len(s)))
	b = append(b, ':')
	b = append(b, s...)
	return append(b, ',')
}

func putInt(b []byte, v int64) []byte   { return putString(b, string(putUintDigits(nil, v))) }
func putUint(b []byte, v uint64) []byte { return putString(b, string(putUintDigitsU(nil, v))) }

func putBool(b []byte, v bool) []byte {
	if v {
		return putString(b, "1")
	}
	return putString(b, "0")
}

func putStrings(b []byte, ss []string) []byte {
	b = putInt(b, int64(len(ss)))
	for _, s := range ss {
		b = putString(b, s)
	}
	return b
}

// decoder reads netstrings; bad is set at the first malformed one, after
// which every read gives a zero value.
type decoder struct {
	s   string
	bad bool
}

func (d *decoder) str() string {
	if d.bad {
		return ""
	}
	n, i := 0, 0
	for ; i < len(d.s) && d.s[i] >= '0' && d.s[i] <= '9'; i++ {
		n = n*10 + int(d.s[i]-'0')
		if n > len(d.s) {
			d.bad = true
			return ""
		}
	}
	if i == 0 || i >= len(d.s) || d.s[i] != ':' || len(d.s) < i+1+n+1 || d.s[i+1+n] != ',' {
		d.bad = true
		return ""
	}
	v := d.s[i+1 : i+1+n]
	d.s = d.s[i+1+n+1:]
	return v
}

func (d *decoder) uint() uint64 {
	s := d.str()
	if s == "" {
		d.bad = true
		return 0
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' || v > (1<<64-1)/10 {
			d.bad = true
			return 0
		}
		v = v*10 + uint64(s[i]-'0')
	}
	return v
}

func (d *decoder) int() int64 {
	s := d.str()
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	sub := decoder{s: string(putString(nil, s))}
	v := sub.uint()
	if sub.bad || v > 1<<62 {
		d.bad = true
		return 0
	}
	if neg {
		return -int64(v)
	}
	return int64(v)
}

func (d *decoder) bool() bool {
	switch d.str() {
	case "1":
		return true
	case "0":
		return false
	}
	d.bad = true
	return false
}

func (d *decoder) strs() []string {
	n := d.int()
	if n < 0 || n > int64(len(d.s)) {
		d.bad = true
		return nil
	}
	out := make([]string, 0, n)
	for range n {
		out = append(out, d.str())
	}
	return out
}
