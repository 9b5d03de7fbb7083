package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gavelhq/gavel/bench/exec/early"
)

// runVaries are the parts of exec's output that differ from one run to
// the next: times, the run's folder and its user.
var runVaries = regexp.MustCompile(`"(wall_ns|cpu_ns)": \d+|run-\d+-\d+|uid \d+`)

// earlyGavel runs gavel in dir with args, the early exec allowed or not;
// trace adds GODEBUG=inittrace=1 (each package's initialisation on stderr).
func earlyGavel(t *testing.T, dir string, allowed, trace bool, args ...string) result {
	t.Helper()
	cmd := exec.Command(gavelBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GAVEL_DB=", "GAVEL_CONFIG=")
	if !allowed {
		cmd.Env = append(cmd.Env, early.OffEnv+"=1")
	}
	if trace {
		cmd.Env = append(cmd.Env, "GODEBUG=inittrace=1")
	}
	return runCmd(t, cmd)
}

// The early `gavel exec` (package early, run as gavel initialises) says
// what the full command says, byte for byte but for times and names that
// differ between runs: its JSON, its stderr and its exit code, on passing,
// failing, timed-out and disk-capped programs and with gavel's own flags;
// and the command lines it leaves to the full command (Go, an unknown
// flag, a bad value, a missing file, a project file) come out as before.
// Which of the two ran shows in the packages initialised: the full
// command initialises the JSON Schema validator, the early one exits first.
func TestEarlyExecIsTheFullCommand(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	dir := t.TempDir()
	write := func(name, text string) string {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return name
	}
	pass := write("pass.py", "print('ok <&>')\n")
	fail := write("fail.py", "import sys\nprint('to stderr', file=sys.stderr)\nassert sum([1, 2]) == 4\n")
	loop := write("loop.py", "while True:\n    pass\n")
	disk := write("disk.py", "n = 0\ntry:\n    for i in range(4):\n        open('f%d' % i, 'wb').write(b'x' * (5 << 20))\n        n += 1\nexcept OSError as e:\n    print(n, e.errno)\n")
	os.Mkdir(filepath.Join(dir, "gopkg"), 0o755)
	const full = "init github.com/santhosh-tekuri/jsonschema"
	for _, c := range []struct {
		args  []string
		early bool // the early exec runs it (else the full command)
	}{
		{[]string{"exec", "--lang", "python", pass}, true},
		{[]string{"exec", fail, "--lang=python"}, true},
		{[]string{"--json", "exec", "--lang", "python", "--timeout", "300ms", loop}, true},
		{[]string{"--db", "x.db", "exec", "--max-disk", "8", "--lang", "python", "--memory", "0x400", disk, "--allow-unisolated"}, true},
		{[]string{"exec", "--lang", "python", "--cpu=200ms", "--timeout", "5s", loop}, true},
		{[]string{"exec", "--lang", "go", "gopkg"}, false},
		{[]string{"exec", "--lang", "ruby", pass}, false},
		{[]string{"exec", "--lang", "python", "--timeout", "soon", pass}, false},
		{[]string{"exec", "--lang", "python", "--nonsense", pass}, false},
		{[]string{"exec", "--lang", "python", "missing.py"}, false},
		{[]string{"exec", "--lang", "python", pass, fail}, false},
		{[]string{"exec", "-h"}, false},
		{[]string{"--lang", "python", "exec", pass}, false},
	} {
		name := strings.Join(c.args, " ")
		want := earlyGavel(t, dir, false, false, c.args...)
		got := earlyGavel(t, dir, true, false, c.args...)
		if w, g := runVaries.ReplaceAllString(want.stdout, "_"), runVaries.ReplaceAllString(got.stdout, "_"); w != g || want.code != got.code ||
			runVaries.ReplaceAllString(want.stderr, "_") != runVaries.ReplaceAllString(got.stderr, "_") {
			t.Fatalf("gavel %s: the full command said (exit %d)\n%s%s\nthe early one (exit %d)\n%s%s", name, want.code, want.stdout, want.stderr, got.code, got.stdout, got.stderr)
		}
		traced := earlyGavel(t, dir, true, true, c.args...)
		if ranFull := strings.Contains(traced.stderr, full); ranFull == c.early {
			t.Fatalf("gavel %s: the full command ran: %v, want %v", name, ranFull, !c.early)
		}
		if c.early && !strings.Contains(traced.stderr, "init github.com/gavelhq/gavel/bench/exec @") {
			t.Fatalf("gavel %s: no initialisation traced:\n%s", name, traced.stderr)
		}
	}
	// A project file is the full command's to read, even for exec.
	write("gavel.yaml", "nonsense: 1\n")
	want, got := earlyGavel(t, dir, false, false, "exec", "--lang", "python", pass), earlyGavel(t, dir, true, true, "exec", "--lang", "python", pass)
	if want.code != 2 || got.code != 2 || !strings.Contains(got.stderr, full) || !strings.Contains(got.stderr, "gavel.yaml:1") {
		t.Fatalf("with a broken project file: full exit %d %s; early exit %d", want.code, want.stderr, got.code)
	}
	os.Remove(filepath.Join(dir, "gavel.yaml"))

	// Interrupted: the program is stopped, and both say so alike.
	interrupt := func(allowed bool) result {
		cmd := exec.Command(gavelBin, "exec", "--json", "--lang", "python", loop)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GAVEL_CONFIG=")
		if !allowed {
			cmd.Env = append(cmd.Env, early.OffEnv+"=1")
		}
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Interrupted once the program runs (its interpreter is a
		// descendant of gavel's), not before gavel could catch it.
		for deadline := time.Now().Add(20 * time.Second); !runsPython(cmd.Process.Pid); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatal("the program did not start within 20 s")
			}
		}
		time.Sleep(100 * time.Millisecond)
		cmd.Process.Signal(syscall.SIGINT)
		err := cmd.Wait()
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("interrupted exec: %v", err)
		}
		return result{out.String(), errb.String(), ee.ExitCode()}
	}
	want, got = interrupt(false), interrupt(true)
	if want != got || got.code != 1 || !strings.Contains(got.stderr, "interrupted") {
		t.Fatalf("interrupted: full %+v, early %+v", want, got)
	}
}

// runsPython reports whether a python process descends from pid.
func runsPython(pid int) bool {
	parent := map[int]int{}
	var pythons []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		var p, pp int
		var state string
		if _, err := fmt.Sscan(s[:open], &p); err != nil {
			continue
		}
		if _, err := fmt.Sscan(s[end+1:], &state, &pp); err != nil {
			continue
		}
		parent[p] = pp
		if strings.HasPrefix(s[open+1:end], "python") {
			pythons = append(pythons, p)
		}
	}
	for _, p := range pythons {
		for q, n := p, 0; q > 1 && n < 64; q, n = parent[q], n+1 {
			if q == pid {
				return true
			}
		}
	}
	return false
}
