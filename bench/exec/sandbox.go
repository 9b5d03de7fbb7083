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
//   - user: as root each run is a user of its own (a uid from the runs'
//     range, RunUsers), so RLIMIT_NPROC counts its processes alone and the
//     host's and other runs' files are not writable;
//   - processes: a PID namespace whose end kills every process of the run;
//     RLIMIT_NPROC on the run's own user, or a pids cgroup entered at
//     creation on cgroup v2 (CLONE_INTO_CGROUP); a cgroup v1 is joined only
//     where the run has no PID namespace or user of its own.
//
// Limits are set by a launcher (package launch): gavel re-executes itself
// (or gavel-sandbox) with an environment variable that makes it apply the
// limits and then exec the program, before the rest of the binary
// initialises. With namespaces the launcher is the run's first process;
// a launcher without cgo starts the program itself, any other through a
// second stage of the launcher (launch.Config.Direct).
package exec

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/gavelhq/gavel/bench/exec/launch"
)

// Launch turns this process into the sandbox launcher when it was started
// as one, and never returns in that case. Package launch's init does it
// before most of the binary initialises; calling it again at the start of
// main or TestMain changes nothing and documents that the binary is one.
func Launch() { launch.Launch() }

// LauncherEnv names the environment variable that may name the launcher
// to start for each run.
const LauncherEnv = "GAVEL_SANDBOX_LAUNCHER"

// LauncherName is the small launcher's file name, looked for beside the
// running executable.
const LauncherName = "gavel-sandbox"

// launcher is the program started for each run to become the launcher:
// the one GAVEL_SANDBOX_LAUNCHER names, else gavel-sandbox beside this
// executable (where 'go install ./cmd/...' puts it), else this executable
// itself, which any binary that imports this package can be. All run the
// same code (package launch); the small one starts faster, since a Go
// binary's start-up grows with its size (gavel's takes about 15 ms).
func launcher() (string, error) {
	if p := os.Getenv(LauncherEnv); p != "" {
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			return "", fmt.Errorf("sandbox: %s=%s: not a launcher program (%v)", LauncherEnv, p, err)
		}
		return p, nil
	}
	return beside()
}

var beside = sync.OnceValues(func() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	small := filepath.Join(filepath.Dir(self), LauncherName)
	if st, err := os.Stat(small); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
		return small, nil
	}
	return self, nil
})

// lookPath finds argv[0] on the PATH of the program's environment, as the
// program's exec would, in its absolute folders only (a relative one would
// be read from gavel's folder here but the working folder there). A name
// with a slash is left as it is: the launcher execs it from the working
// folder.
func lookPath(name string, env []string) string {
	if strings.Contains(name, "/") {
		return name
	}
	for _, dir := range strings.Split(envValue(env, "PATH"), ":") {
		if !filepath.IsAbs(dir) {
			continue
		}
		if st, err := os.Stat(dir + "/" + name); err == nil && !st.IsDir() {
			return dir + "/" + name
		}
	}
	return name
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// staticBinary reports whether the program at path is an ELF executable
// without an interpreter: a Go binary without cgo, whose threads' stacks
// come from its own heap. Only such a launcher starts the program from its
// first stage (launch.Config.Direct); the answer is kept per path.
func staticBinary(path string) bool {
	if v, ok := static.Load(path); ok {
		return v.(bool)
	}
	v := false
	if f, err := elf.Open(path); err == nil {
		v = f.Type == elf.ET_EXEC
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
				v = false
			}
		}
		f.Close()
	}
	static.Store(path, v)
	return v
}

var static sync.Map
