// Package exec runs untrusted programs (the benchmark's perturbed programs
// and their tests) in a sandbox: a private working folder that is removed
// afterwards, a wall-clock timeout, CPU, address-space, file-size and
// open-file limits, a process limit, no network, stdin closed, output
// capped, and the whole process tree killed at the end.
//
// Isolation is built from what the machine allows, and every Result says
// what was in force:
//   - network: a new, empty network namespace (CLONE_NEWNET);
//   - filesystem: a new mount namespace in which /tmp, /var/tmp, /dev/shm
//     and /run/lock are fresh tmpfs mounts, so the program can write only to
//     its working folder (as root, with CLONE_NEWNS);
//   - user: the program runs as nobody (65534) when gavel runs as root, so
//     RLIMIT_NPROC binds and the host's files are not writable;
//   - processes: a pids cgroup (v1 or v2) with pids.max when one can be
//     made, which also lets every descendant be killed, even one that left
//     the process group; else RLIMIT_NPROC.
//
// Limits are set by a launcher: gavel re-executes itself with an
// environment variable that makes it apply the limits and then exec the
// program. Programs call Launch at the start of main (and TestMain) for
// this to work.
package exec

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// launchEnv carries the launcher's configuration to the re-executed gavel.
const launchEnv = "GAVEL_SANDBOX_LAUNCH"

// launchConfig is what the launcher applies before it execs the program.
type launchConfig struct {
	Argv    []string `json:"argv"`
	Env     []string `json:"env"`
	Dir     string   `json:"dir"`
	Limits  Limits   `json:"limits"`
	UID     int      `json:"uid"` // -1: keep
	GID     int      `json:"gid"`
	Mounts  bool     `json:"mounts"`
	CgroupP string   `json:"cgroup_procs"` // a cgroup.procs file to join, or ""
}

// launchReport is what the launcher tells the parent (on fd 3) before it
// execs the program.
type launchReport struct {
	Mounts bool   `json:"mounts"`
	User   string `json:"user"`
	Cgroup bool   `json:"cgroup"`
	Error  string `json:"error,omitempty"`
}

// init becomes the launcher as early as it can: every sandboxed run starts
// this binary again, and the packages initialised after this one (Go
// initialises the packages whose imports are ready in the order of their
// import paths: the SDKs, the JSON Schema compiler, the templates) would
// otherwise cost every run their start-up, about 10 ms for gavel.
func init() { Launch() }

// Launch turns this process into the sandbox launcher when it was started
// as one, and never returns in that case. init calls it; call it first in
// main and in TestMain as well, for a binary whose packages run before it.
func Launch() {
	raw := os.Getenv(launchEnv)
	if raw == "" {
		return
	}
	var c launchConfig
	report := os.NewFile(3, "report")
	fail := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if report != nil {
			json.NewEncoder(report).Encode(launchReport{Error: msg})
		}
		fmt.Fprintln(os.Stderr, "gavel sandbox: "+msg)
		os.Exit(125)
	}
	if err := json.Unmarshal([]byte(raw), &c); err != nil || len(c.Argv) == 0 {
		fail("bad launch configuration: %v", err)
	}
	var rep launchReport
	if c.CgroupP != "" {
		if err := os.WriteFile(c.CgroupP, []byte(strconv.Itoa(os.Getpid())), 0); err == nil {
			rep.Cgroup = true
		}
	}
	if c.Mounts {
		rep.Mounts = privateMounts() == nil
	}
	var addressSpace *rlimit
	for _, l := range c.Limits.rlimits() {
		if l.resource == syscall.RLIMIT_AS {
			// Set last, just before exec: once it is below what this Go
			// process has mapped, any allocation of the runtime fails.
			addressSpace = &l
			continue
		}
		if l.resource == rlimitNPROC && rep.Cgroup {
			// The cgroup bounds this run's processes. RLIMIT_NPROC counts
			// every process of the user, other runs' (and dying ones')
			// included, so it is only the fallback.
			continue
		}
		if err := syscall.Setrlimit(l.resource, &syscall.Rlimit{Cur: l.value, Max: l.value}); err != nil {
			fail("setrlimit %s: %v", l.name, err)
		}
	}
	if err := os.Chdir(c.Dir); err != nil {
		fail("chdir: %v", err)
	}
	rep.User = "same as gavel"
	if c.UID >= 0 {
		if err := syscall.Setgroups(nil); err != nil {
			fail("setgroups: %v", err)
		}
		if err := syscall.Setgid(c.GID); err != nil {
			fail("setgid: %v", err)
		}
		if err := syscall.Setuid(c.UID); err != nil {
			fail("setuid: %v", err)
		}
		rep.User = fmt.Sprintf("uid %d", c.UID)
	}
	if report != nil {
		json.NewEncoder(report).Encode(rep)
		report.Close()
	}
	path := c.Argv[0]
	if !strings.Contains(path, "/") {
		for _, dir := range strings.Split(envValue(c.Env, "PATH"), ":") {
			if st, err := os.Stat(dir + "/" + path); err == nil && !st.IsDir() {
				path = dir + "/" + path
				break
			}
		}
	}
	// Everything exec needs is built before the address-space limit, and
	// the limit and the exec are raw system calls that allocate nothing.
	pathp, err := syscall.BytePtrFromString(path)
	if err != nil {
		fail("exec %s: %v", c.Argv[0], err)
	}
	argvp, err := syscall.SlicePtrFromStrings(c.Argv)
	if err != nil {
		fail("exec %s: %v", c.Argv[0], err)
	}
	envp, err := syscall.SlicePtrFromStrings(c.Env)
	if err != nil {
		fail("exec %s: %v", c.Argv[0], err)
	}
	if addressSpace != nil {
		lim := syscall.Rlimit{Cur: addressSpace.value, Max: addressSpace.value}
		if _, _, errno := syscall.RawSyscall(syscall.SYS_SETRLIMIT, uintptr(syscall.RLIMIT_AS), uintptr(unsafe.Pointer(&lim)), 0); errno != 0 {
			fail("setrlimit as: %v", errno)
		}
	}
	_, _, errno := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(pathp)),
		uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])))
	fail("exec %s: %v", c.Argv[0], errno)
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// privateMounts makes the mount tree private to this namespace and puts
// fresh tmpfs mounts on the world-writable folders.
func privateMounts() error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return err
	}
	for _, dir := range []string{"/tmp", "/var/tmp", "/dev/shm", "/run/lock"} {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=16m,mode=1777"); err != nil {
			return err
		}
	}
	return nil
}
