package exec

import (
	"strings"
	"testing"

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
