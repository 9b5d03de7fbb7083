package exec

import (
	"context"
	"errors"
	"os"
	osexec "os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gavelhq/gavel/bench/exec/launch"
)

// Without namespaces every part of the report says it is not isolated;
// nothing claims a namespace or a user that was not there.
func TestIsolationReportWithoutNamespaces(t *testing.T) {
	lim := Limits{}.norm()
	iso := isolation(nsNone, launch.Report{User: "same as gavel"}, lim, false)
	for name, v := range map[string]string{"network": iso.Network, "filesystem": iso.Filesystem, "user": iso.User, "processes": iso.Processes} {
		if !strings.Contains(v, "not isolated") {
			t.Errorf("%s: %q does not say it is not isolated", name, v)
		}
	}
	// With a cgroup but no namespace, the processes line says both.
	iso = isolation(nsNone, launch.Report{Cgroup: true}, lim, false)
	if !strings.HasPrefix(iso.Processes, "host PID namespace (not isolated); pids cgroup") {
		t.Errorf("processes %q", iso.Processes)
	}
	// An ordinary user's run names the user namespace and what it leaves
	// open.
	iso = isolation(nsUser, launch.Report{Mounts: true, PIDNS: true, OwnProc: true}, lim, false)
	if !strings.Contains(iso.User, "user namespace") || !strings.Contains(iso.Filesystem, "not isolated") || iso.Network != "new network namespace (no interfaces)" {
		t.Errorf("user mode %+v", iso)
	}
}

// Refused namespaces and no AllowUnisolated: Exec runs nothing and says
// how to go on.
func TestRefusedNamespacesStopTheRun(t *testing.T) {
	m, err := mode()
	if err != nil {
		t.Fatal(err)
	}
	nsMu.Lock()
	nsRefused[m] = errFake
	nsMu.Unlock()
	defer func() {
		nsMu.Lock()
		delete(nsRefused, m)
		nsMu.Unlock()
	}()
	AllowUnisolated(false)
	_, err = Exec(t.Context(), Cmd{Argv: []string{"/bin/true"}, Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "--allow-unisolated") {
		t.Fatalf("err = %v", err)
	}
}

var errFake = &fakeErr{}

type fakeErr struct{}

func (*fakeErr) Error() string { return "operation not permitted (a test's refusal)" }

// BenchmarkNamespaces: the same trivial Python run with the sandbox's
// namespaces (network, mount, PID, IPC; the two-stage launcher; the run's
// own user) and without them (the unisolated mode, as where the kernel
// refuses them: one launcher stage, gavel's user, a pids cgroup where one
// can be made), to measure what the isolation costs (BENCHMARKS.md).
//
//	go test ./bench/exec -run XXX -bench Namespaces -benchtime 100x
func BenchmarkNamespaces(b *testing.B) {
	if _, err := osexec.LookPath("python3"); err != nil {
		b.Skip("python3 is not installed")
	}
	for _, isolated := range []bool{true, false} {
		b.Run(map[bool]string{true: "namespaces", false: "none"}[isolated], func(b *testing.B) {
			m := nsUser
			if os.Geteuid() == 0 {
				m = nsRoot
			}
			if !isolated {
				nsMu.Lock()
				nsRefused[m] = errors.New("refused for the benchmark")
				nsMu.Unlock()
				AllowUnisolated(true)
				defer func() {
					nsMu.Lock()
					delete(nsRefused, m)
					nsMu.Unlock()
					AllowUnisolated(false)
				}()
			}
			for b.Loop() {
				res, err := Python(context.Background(), "pass\n", Limits{Wall: 10 * time.Second})
				if err != nil || res.Status != Passed {
					b.Fatalf("%v %+v", err, res)
				}
			}
		})
	}
}

// Only a launcher without an ELF interpreter (a Go binary without cgo, as
// gavel-sandbox is) starts the program from its first stage; a dynamically
// linked one (glibc maps its threads' stacks, which the run's address-space
// limit would refuse) and anything that is not an executable go through a
// second stage.
func TestDirectOnlyForStaticLaunchers(t *testing.T) {
	interp := func(path string) bool {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(string(b[:min(len(b), 4096)]), "/ld-linux")
	}
	small := os.Getenv(LauncherEnv)
	if small == "" {
		t.Fatal("the test launcher is not built")
	}
	if interp(small) || !staticBinary(small) {
		t.Errorf("gavel-sandbox %s: static %v", small, staticBinary(small))
	}
	for _, p := range []string{"/bin/sh", "/proc/self/exe"} {
		if real, err := os.Readlink(p); err == nil && p == "/proc/self/exe" {
			p = real
		}
		if interp(p) && staticBinary(p) {
			t.Errorf("%s has an interpreter but counts as static", p)
		}
	}
	text := t.TempDir() + "/script"
	os.WriteFile(text, []byte("#!/bin/sh\nexit 0\n"), 0o755)
	if staticBinary(text) || staticBinary(t.TempDir()+"/none") {
		t.Error("a script or a missing file counts as a static binary")
	}
}
