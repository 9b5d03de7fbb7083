package main_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gavel run as an ordinary user: either the program has no network and
// cannot read gavel's environment, or gavel refuses to run it and says
// why; never a report that claims isolation that was not there.
func TestSandboxAsAnOrdinaryUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("becoming a fresh user needs root (CI runs as root)")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatal("setpriv (util-linux) is needed to drop to an ordinary user")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	uid := 40000 + os.Getpid()%20000
	home := fmt.Sprintf("/var/lib/gavel-e2e-user-%d", os.Getpid())
	if err := os.MkdirAll(filepath.Join(home, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(home)
	for _, name := range []string{"gavel", "gavel-sandbox"} {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(gavelBin), name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, "bin", name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	secret := fmt.Sprintf("s3cret-%d", os.Getpid())
	probe := fmt.Sprintf(`import os, socket
out = []
try:
    socket.create_connection(("127.0.0.1", %d), timeout=2)
    out.append("net:connected")
except OSError as e:
    out.append("net:" + type(e).__name__)
found = False
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            found = found or %q in open("/proc/%%s/environ" %% p).read()
        except OSError:
            pass
out.append("secret:found" if found else "secret:hidden")
print(" ".join(out))
`, lis.Addr().(*net.TCPAddr).Port, secret)
	if err := os.WriteFile(filepath.Join(home, "probe.py"), []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("chown", "-R", fmt.Sprintf("%d:%d", uid, uid), home).Run(); err != nil {
		t.Fatal(err)
	}
	gavelAs := func(extra ...string) result {
		args := append([]string{"--reuid", fmt.Sprint(uid), "--regid", fmt.Sprint(uid), "--clear-groups",
			filepath.Join(home, "bin", "gavel"), "exec", "--lang", "python", filepath.Join(home, "probe.py")}, extra...)
		cmd := exec.Command(setpriv, args...)
		cmd.Dir = home
		cmd.Env = []string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin", "GAVEL_DB=" + filepath.Join(home, "gavel.db"),
			"OPENAI_API_KEY=" + secret}
		return runCmd(t, cmd)
	}
	type isolation struct{ Network, Filesystem, User, Processes string }
	var res struct {
		Status string
		Run    struct {
			Stdout    string
			Isolation isolation
		}
	}
	r := gavelAs()
	t.Logf("as uid %d: exit %d\n%s%s", uid, r.code, r.stdout, r.stderr)
	switch r.code {
	case 0:
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, r.stdout)
		}
		if got := strings.Fields(res.Run.Stdout); len(got) != 2 || !strings.HasPrefix(got[0], "net:") || !strings.HasPrefix(got[1], "secret:") {
			t.Fatalf("the probe did not run to its end: %q", res.Run.Stdout)
		}
		if strings.Contains(res.Run.Stdout, "net:connected") || strings.Contains(res.Run.Stdout, "secret:found") {
			t.Fatalf("isolated by its report (%+v) but the program reached the network or gavel's environment: %s", res.Run.Isolation, res.Run.Stdout)
		}
		iso := res.Run.Isolation
		if !strings.HasPrefix(iso.Network, "new network namespace") || !strings.HasPrefix(iso.Processes, "PID namespace of its own") ||
			!strings.Contains(iso.User, "user namespace") {
			t.Fatalf("isolation %+v", iso)
		}
	case 1:
		// The kernel refused: gavel says so and runs nothing, unless told
		// to; then its report names what did not hold.
		if !strings.Contains(r.stderr, "--allow-unisolated") {
			t.Fatalf("a refusal that does not say how to go on: %s", r.stderr)
		}
		r = gavelAs("--allow-unisolated")
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, r.stdout)
		}
		if strings.Contains(res.Run.Stdout, "net:connected") && !strings.Contains(res.Run.Isolation.Network, "not isolated") {
			t.Fatalf("the network was reached, the report says %q", res.Run.Isolation.Network)
		}
		if strings.Contains(res.Run.Stdout, "secret:found") && !strings.Contains(res.Run.Isolation.Processes, "not isolated") {
			t.Fatalf("gavel's environment was read, the report says %q", res.Run.Isolation.Processes)
		}
	default:
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
}
