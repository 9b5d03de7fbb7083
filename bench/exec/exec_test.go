package exec_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	bexec "github.com/gavelhq/gavel/bench/exec"
	"github.com/gavelhq/gavel/internal/sandboxtest"
)

// The tests run with the launcher gavel ships (gavel-sandbox) unless
// GAVEL_SANDBOX_LAUNCHER names another; TestHostile runs again with this
// test binary as its own launcher, the fallback when gavel-sandbox is not
// installed.
func TestMain(m *testing.M) { sandboxtest.Main(m) }

// launchers are the two launchers a run may use: the small one and this
// binary itself.
func launchers(t *testing.T) map[string]string {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{"gavel-sandbox": os.Getenv(bexec.LauncherEnv), "self": self}
}

func needPython(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
}

// nobodyProcesses counts the processes of the sandbox's users: nobody's
// and the runs' own.
func nobodyProcesses() int {
	lo, hi := bexec.RunUsers()
	n := 0
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
				if uid, err := strconv.Atoi(f[1]); err == nil && (uid == 65534 || (uid >= lo && uid < hi)) {
					n++
				}
			}
		}
	}
	return n
}

// As root every run is a user of its own: two runs at once have two uids
// from the runs' range, each owns its folder, and neither can read the
// other's processes; a run's processes are bounded on that user alone.
func TestRunsHaveUsersOfTheirOwn(t *testing.T) {
	needPython(t)
	if os.Geteuid() != 0 {
		t.Skip("runs have users of their own only when gavel is root")
	}
	src := "import os, time\nprint(os.getuid(), os.getgid(), os.stat('.').st_uid)\ntime.sleep(0.5)\n"
	var wg sync.WaitGroup
	res := make([]*bexec.Result, 2)
	for i := range res {
		wg.Go(func() { res[i] = run(t, src, bexec.Limits{Wall: 10 * time.Second}) })
	}
	wg.Wait()
	lo, hi := bexec.RunUsers()
	var uids []int
	for _, r := range res {
		if r.Status != bexec.Passed {
			t.Fatalf("%s (%s): %s", r.Status, r.Reason, r.Run.Stderr)
		}
		f := strings.Fields(r.Run.Stdout)
		if len(f) != 3 || f[0] != f[1] || f[0] != f[2] {
			t.Fatalf("uid, gid and the folder's owner: %q (want one number three times)", r.Run.Stdout)
		}
		uid, _ := strconv.Atoi(f[0])
		if uid < lo || uid >= hi {
			t.Fatalf("uid %d outside the runs' range [%d, %d)", uid, lo, hi)
		}
		if !strings.Contains(r.Run.Isolation.User, "a user of its own") || !strings.Contains(r.Run.Isolation.Processes, "on its own user") {
			t.Fatalf("isolation does not say so: %+v", r.Run.Isolation)
		}
		uids = append(uids, uid)
	}
	if uids[0] == uids[1] {
		t.Fatalf("two runs at once shared uid %d", uids[0])
	}
}

func run(t *testing.T, src string, lim bexec.Limits) *bexec.Result {
	t.Helper()
	res, err := bexec.Python(context.Background(), src, lim)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestHostile runs programs that attack their host; each must be stopped,
// reported with the right status, and leave the host as it was, whichever
// launcher set the sandbox up.
func TestHostile(t *testing.T) {
	needPython(t)
	for name, path := range launchers(t) {
		t.Run(name, func(t *testing.T) {
			t.Setenv(bexec.LauncherEnv, path)
			hostile(t)
		})
	}
}

func hostile(t *testing.T) {
	before := nobodyProcesses()
	marker := fmt.Sprintf("/tmp/gavel-escape-%d", os.Getpid())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := lis.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := lis.Addr().(*net.TCPAddr).Port
	short := bexec.Limits{Wall: 3 * time.Second, CPU: 20 * time.Second, AddressSpace: 512 << 20}
	cases := []struct {
		name   string
		src    string
		want   bexec.Status
		reason string
	}{
		{"fork bomb", "import os\nwhile True:\n    os.fork()\n", bexec.ResourceLimit, "resource temporarily unavailable"},
		{"infinite loop", "while True:\n    pass\n", bexec.Timeout, ""},
		{"memory hog", "x = []\nwhile True:\n    x.append(bytearray(64 << 20))\n", bexec.ResourceLimit, "memoryerror"},
		{"unbounded output", "while True:\n    print('x' * 1000)\n", bexec.ResourceLimit, "output over the cap"},
		{"read from stdin", "import sys\ndata = sys.stdin.read()\nassert data == ''\n", bexec.Passed, ""},
		{"network connect", fmt.Sprintf("import socket\nsocket.create_connection(('127.0.0.1', %d), timeout=2)\n", port), bexec.Crashed, ""},
		{"write outside", fmt.Sprintf("open(%q, 'w').write('x')\nopen('/work/escape', 'w').write('x')\n", marker), bexec.Crashed, "PermissionError"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			res := run(t, c.src, short)
			t.Logf("%s: %s (%s) in %v; isolation %+v", c.name, res.Status, res.Reason, time.Since(start).Round(time.Millisecond), res.Run.Isolation)
			if res.Status != c.want {
				t.Fatalf("status %s (%s), want %s\nstderr: %s", res.Status, res.Reason, c.want, res.Run.Stderr)
			}
			if c.reason != "" && !strings.Contains(strings.ToLower(res.Reason+res.Run.Stderr), strings.ToLower(c.reason)) {
				t.Fatalf("reason %q / stderr %q, want %q", res.Reason, res.Run.Stderr, c.reason)
			}
			if c.name == "fork bomb" && strings.Contains(res.Run.Isolation.Processes, "pids cgroup") && res.Run.ForksRefused == 0 {
				t.Errorf("the pids cgroup refused no fork of the fork bomb")
			}
			if time.Since(start) > 30*time.Second {
				t.Fatalf("not contained in time")
			}
		})
	}
	select {
	case <-accepted:
		t.Error("the sandboxed program reached a host listener")
	default:
	}
	if _, err := os.Stat(marker); err == nil {
		os.Remove(marker)
		t.Error("a write to /tmp escaped the sandbox")
	}
	if _, err := os.Stat("/work/escape"); err == nil {
		os.Remove("/work/escape")
		t.Error("a write to /work escaped the sandbox")
	}
	// Killed processes take a moment to be reaped: look again for a while
	// (a bounded wait, not a timing assertion) before calling any left.
	after := nobodyProcesses()
	for i := 0; i < 100 && after > before; i++ {
		time.Sleep(100 * time.Millisecond)
		after = nobodyProcesses()
	}
	if after > before {
		t.Errorf("%d sandbox processes were left running", after-before)
	}
}

// TestOrphanIsKilled: a child that leaves the process group and sleeps
// after its parent exits is killed too.
func TestOrphanIsKilled(t *testing.T) {
	needPython(t)
	marker := fmt.Sprintf("gavel-orphan-%d", os.Getpid())
	src := fmt.Sprintf("import os\nif os.fork() == 0:\n    os.setsid()\n    os.execvp('python3', ['python3', '-c', 'import time; time.sleep(1000)', %q])\n", marker)
	res := run(t, src, bexec.Limits{Wall: 5 * time.Second})
	if res.Status != bexec.Passed {
		t.Fatalf("status %s: %s", res.Status, res.Run.Stderr)
	}
	if !strings.Contains(res.Run.Isolation.Processes, "PID namespace") && !strings.Contains(res.Run.Isolation.Processes, "cgroup") {
		t.Skipf("neither a PID namespace nor a pids cgroup here (%s): a child that calls setsid can outlive its group", res.Run.Isolation.Processes)
	}
	// Dead, or a zombie waiting to be reaped: a bounded look.
	for i := 0; i < 100 && len(processesWith(marker)) > 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if left := processesWith(marker); len(left) > 0 {
		for _, p := range left {
			syscall.Kill(p, syscall.SIGKILL)
		}
		t.Fatalf("the orphan is still running: %v", left)
	}
}

func TestPythonStatuses(t *testing.T) {
	needPython(t)
	for src, want := range map[string]bexec.Status{
		"assert 1 + 1 == 2\n":     bexec.Passed,
		"assert 1 + 1 == 3\n":     bexec.Failed,
		"def f(:\n    pass\n":     bexec.BuildError,
		"raise ValueError('x')\n": bexec.Crashed,
	} {
		if res := run(t, src, bexec.Limits{Wall: 5 * time.Second}); res.Status != want {
			t.Errorf("%q: %s, want %s", src, res.Status, want)
		}
	}
}

// acrStable finds the folder a program ran in, in what it wrote.
var acrStable = regexp.MustCompile(`/[^\s"']*/(?:run-[\d-]+|TestPythonRunsAsItself\d+/\d+)/`)

// One interpreter checks and runs a program: what the program writes, its
// exit code and an uncaught exception's trace are those of 'python3 -I
// prog.py'; a program that does not parse runs nothing; one that parses
// but does not compile fails as Python fails it at start-up.
func TestPythonRunsAsItself(t *testing.T) {
	needPython(t)
	for _, src := range []string{
		"import sys\nprint(__name__, __file__, sys.argv, sys.path[0] != '')\ndef f():\n    raise KeyError('k')\nf()\n",
		"import sys\nprint('before', flush=True)\nsys.exit(3)\n",
		"if __name__ == '__main__':\n    x = [1]\n    assert x == [2], 'x is not [2]'\n",
		"return 1\n",
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "prog.py"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bexec.PythonInterpreter(), "-I", "prog.py")
		cmd.Dir = dir
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		code := 0
		if err := cmd.Run(); err != nil {
			code = err.(*exec.ExitError).ExitCode()
		}
		res := run(t, src, bexec.Limits{Wall: 5 * time.Second})
		// The two ran in folders of their own.
		sandboxed := func(s string) string { return acrStable.ReplaceAllString(s, "DIR/") }
		if res.Run == nil || sandboxed(res.Run.Stdout) != sandboxed(stdout.String()) || sandboxed(res.Run.Stderr) != sandboxed(stderr.String()) || res.Run.ExitCode != code {
			t.Errorf("%q:\nsandbox %+v\nbare    exit %d, %q, %q", src, res.Run, code, stdout.String(), stderr.String())
		}
	}
	res := run(t, "print('ran')\ndef f(:\n", bexec.Limits{Wall: 5 * time.Second})
	if res.Status != bexec.BuildError || res.Run != nil || !strings.HasPrefix(res.Build, "  File ") || !strings.HasSuffix(res.Build, "SyntaxError: invalid syntax\n") {
		t.Fatalf("a program that does not parse: %+v", res)
	}
}

// A launcher named by GAVEL_SANDBOX_LAUNCHER that is not there is an
// error that names the variable, not a run that silently uses another.
func TestMissingLauncher(t *testing.T) {
	t.Setenv(bexec.LauncherEnv, filepath.Join(t.TempDir(), "nowhere"))
	work, cleanup, err := bexec.NewWorkdir()
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	_, err = bexec.Exec(context.Background(), bexec.Cmd{Argv: []string{"/bin/true"}, Dir: work})
	if err == nil || !strings.Contains(err.Error(), bexec.LauncherEnv) {
		t.Fatalf("err = %v", err)
	}
}

// gavel-sandbox started by hand, or with a damaged configuration, says
// what it is and runs nothing.
func TestLauncherByHand(t *testing.T) {
	small := os.Getenv(bexec.LauncherEnv)
	out, err := exec.Command(small).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "sandbox launcher") {
		t.Fatalf("by hand: %v %s", err, out)
	}
	cmd := exec.Command(small)
	cmd.Env = []string{"GAVEL_SANDBOX_LAUNCH=1:1,9:/bin/true,"}
	out, err = cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 125 || !strings.Contains(string(out), "bad launch configuration") {
		t.Fatalf("damaged configuration: %v %s", err, out)
	}
}
