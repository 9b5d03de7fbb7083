package exec_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	bexec "github.com/gavelhq/gavel/bench/exec"
)

// ours says whether a process descends from this test process (other
// packages' tests run sandboxes beside it).
func ours(pid int) bool {
	for range 6 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return false
		}
		_, rest, _ := strings.Cut(string(b), "\nPPid:\t")
		ppid, _ := strconv.Atoi(strings.Fields(rest + " 0")[0])
		if ppid == os.Getpid() {
			return true
		}
		if ppid <= 1 {
			return false
		}
		pid = ppid
	}
	return false
}

// sandboxedPIDs are the host PIDs of this test's sandboxed processes
// whose working folder is a sandbox run's, with that folder.
func sandboxedPIDs() map[int]string {
	out := map[int]string{}
	es, _ := os.ReadDir("/proc")
	for _, e := range es {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !ours(pid) {
			continue
		}
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if err == nil && strings.Contains(cwd, "/gavel/sandbox/run-") {
			out[pid] = cwd
		}
	}
	return out
}

// Two runs side by side: the attacker is given the victim's host PID, its
// folder and gavel's PID, and tries to list, read, write, ptrace and kill
// them. Everything is refused and the victim's result is unchanged.
func TestRunsCannotReachEachOther(t *testing.T) {
	needPython(t)
	if os.Geteuid() != 0 {
		t.Skip("the two runs' uids differ from the host's only as root")
	}
	victim := make(chan *bexec.Result, 1)
	go func() {
		res, err := bexec.Python(context.Background(), "import time\ntime.sleep(3)\nprint('victim ok')\n", bexec.Limits{Wall: 20 * time.Second})
		if err != nil {
			t.Error(err)
		}
		victim <- res
	}()
	var pid int
	var dir string
	for i := 0; i < 200 && pid == 0; i++ {
		for p, d := range sandboxedPIDs() {
			pid, dir = p, d
		}
		time.Sleep(10 * time.Millisecond)
	}
	if pid == 0 {
		t.Fatal("the victim never started")
	}
	src := fmt.Sprintf(`import ctypes, os, signal
pid, folder, gavel = %d, %q, %d
out = []
out.append("listed" if str(pid) in os.listdir("/proc") else "not listed")
for name, f in [("kill", lambda: os.kill(pid, signal.SIGKILL)), ("kill gavel", lambda: os.kill(gavel, signal.SIGKILL)),
                ("read", lambda: open(folder + "/prog.py").read()), ("write", lambda: open(folder + "/x", "w").write("x")),
                ("cwd", lambda: os.readlink("/proc/%%d/cwd" %% pid))]:
    try:
        f()
        out.append(name + ": done")
    except OSError as e:
        out.append(name + ": " + type(e).__name__)
libc = ctypes.CDLL(None, use_errno=True)
out.append("ptrace: %%d" %% libc.ptrace(16, pid, None, None))
print("; ".join(out))
`, pid, dir, os.Getpid())
	res := run(t, src, bexec.Limits{Wall: 10 * time.Second})
	got := res.Run.Stdout
	t.Logf("attacker: %s (%s)", got, res.Run.Stderr)
	for _, want := range []string{"not listed", "kill: ProcessLookupError", "kill gavel: ProcessLookupError", "read: FileNotFoundError",
		"write: FileNotFoundError", "cwd: FileNotFoundError", "ptrace: -1"} {
		if !strings.Contains(got, want) {
			t.Errorf("attacker: want %q in %q", want, got)
		}
	}
	v := <-victim
	if v == nil || v.Status != bexec.Passed || v.Run.Stdout != "victim ok\n" {
		t.Fatalf("the victim's result changed: %+v", v)
	}
}

// Inside, PID 1 is the launcher, /proc shows the run's processes only,
// and a descriptor this process holds open without close-on-exec is not
// there.
func TestRunSeesOnlyItself(t *testing.T) {
	needPython(t)
	fd, err := syscall.Open("/etc/hostname", syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	src := `import os
print(open("/proc/1/cmdline").read().split("\0")[0])
print(sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
print(sorted(int(f) for f in os.listdir("/proc/self/fd")))
`
	res := run(t, src, bexec.Limits{Wall: 10 * time.Second})
	if res.Status != bexec.Passed {
		t.Fatalf("%s: %s", res.Status, res.Run.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(res.Run.Stdout), "\n")
	if len(lines) != 3 {
		t.Fatalf("stdout %q", res.Run.Stdout)
	}
	if launcher := os.Getenv(bexec.LauncherEnv); lines[0] != launcher {
		t.Errorf("/proc/1/cmdline is %q, want the launcher %q", lines[0], launcher)
	}
	if pids := strings.Split(strings.Trim(lines[1], "[]"), ", "); len(pids) != 2 || pids[0] != "1" {
		t.Errorf("/proc lists %s: want the launcher (1) and the program only", lines[1])
	}
	// 0, 1, 2 and the folder listdir itself opened.
	if lines[2] != "[0, 1, 2, 3]" || fd <= 3 {
		t.Errorf("descriptors inside %s (this process's open descriptor is %d)", lines[2], fd)
	}
	if !strings.HasPrefix(res.Run.Isolation.Processes, "PID namespace of its own with its own /proc") {
		t.Errorf("isolation %+v", res.Run.Isolation)
	}
}

// survivorEnv makes this test binary run one sandboxed program that
// leaves a double-forked, setsid survivor, and wait: a stand-in for a
// gavel that is then killed.
const survivorEnv = "GAVEL_TEST_SURVIVOR"

func init() {
	marker := os.Getenv(survivorEnv)
	if marker == "" {
		return
	}
	src := fmt.Sprintf("import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        os.execvp('python3', ['python3', '-c', 'import time; time.sleep(1000)', %q])\n    os._exit(0)\ntime.sleep(1000)\n", marker)
	bexec.Python(context.Background(), src, bexec.Limits{Wall: time.Minute})
	os.Exit(0)
}

func processesWith(marker string) []int {
	var out []int
	es, _ := os.ReadDir("/proc")
	for _, e := range es {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && strings.Contains(string(b), marker) {
			out = append(out, pid)
		}
	}
	return out
}

// kill -9 of the process that started a run ends the run, its survivors
// included; the folder and cgroup it could not remove are removed by the
// next process that makes a run.
func TestRunDiesWithItsParent(t *testing.T) {
	needPython(t)
	marker := fmt.Sprintf("gavel-survivor-%d", os.Getpid())
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), survivorEnv+"="+marker)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	parent := cmd.Process.Pid
	for i := 0; i < 500 && len(processesWith(marker)) == 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if len(processesWith(marker)) == 0 {
		cmd.Process.Kill()
		t.Fatal("the survivor never started")
	}
	cmd.Process.Kill()
	cmd.Wait()
	// A bounded look, not a timing assertion: the kernel needs a moment.
	for i := 0; i < 500 && len(processesWith(marker)) > 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if left := processesWith(marker); len(left) > 0 {
		for _, p := range left {
			syscall.Kill(p, syscall.SIGKILL)
		}
		t.Fatalf("the survivor outlived the killed parent: %v", left)
	}
	left := func() []string {
		var out []string
		for _, pattern := range []string{"/var/lib/gavel/sandbox/run-%d-*", "/sys/fs/cgroup/gavel-%d-*", "/sys/fs/cgroup/pids/gavel-%d-*"} {
			m, _ := filepath.Glob(fmt.Sprintf(pattern, parent))
			out = append(out, m...)
		}
		if os.Geteuid() != 0 {
			base, _ := os.UserCacheDir()
			m, _ := filepath.Glob(filepath.Join(base, "gavel", "sandbox", fmt.Sprintf("run-%d-*", parent)))
			out = append(out, m...)
		}
		return out
	}
	if len(left()) == 0 {
		t.Log("the killed parent left nothing behind")
	}
	// A new process's first run removes what the dead one left.
	next := exec.Command(os.Args[0], "-test.run=^TestPythonStatuses$")
	next.Env = os.Environ()
	if out, err := next.CombinedOutput(); err != nil {
		t.Fatalf("the next run: %v\n%s", err, out)
	}
	if l := left(); len(l) > 0 {
		t.Fatalf("left behind after the next run: %v", l)
	}
}

// A program that writes past the disk cap gets "no space left" inside,
// and what it wrote never reaches its folder on the host's disk.
func TestDiskCap(t *testing.T) {
	needPython(t)
	src := `import os, time
n = 0
try:
    for i in range(10):
        with open("f%d" % i, "wb") as f:
            f.write(b"x" * (10 << 20))
        n += 1
except OSError as e:
    print(n, e.errno, flush=True)
time.sleep(2)
`
	done := make(chan *bexec.Result, 1)
	go func() {
		res, err := bexec.Python(context.Background(), src, bexec.Limits{Wall: 20 * time.Second, Disk: 32 << 20})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	// Everything the host sees in the run's folder while it runs (it
	// sleeps after writing, so the last looks come after the writes).
	seen := map[string]bool{}
	var res *bexec.Result
	for looks := 0; res == nil; looks++ {
		select {
		case res = <-done:
			continue
		case <-time.After(20 * time.Millisecond):
		}
		for _, dir := range sandboxedPIDs() {
			if es, err := os.ReadDir(dir); err == nil {
				for _, e := range es {
					seen[e.Name()] = true
				}
			}
		}
	}
	if res == nil || res.Run.Stdout != "3 28\n" {
		t.Fatalf("want 3 files written, then ENOSPC (28): %+v", res)
	}
	if len(seen) != 1 || !seen["prog.py"] {
		t.Fatalf("the folder on the host's disk held %v, want prog.py only", seen)
	}
	if !strings.Contains(res.Run.Isolation.Filesystem, "tmpfs of 32 MiB") {
		t.Errorf("isolation %+v", res.Run.Isolation)
	}
}
