// Package sandboxtest runs a package's tests with the sandbox launcher gavel
// ships (gavel-sandbox), built once for the test binary, as an installed
// gavel runs them.
package sandboxtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	bexec "github.com/gavelhq/gavel/bench/exec"
)

// Main builds gavel-sandbox into a temporary folder, points the sandbox at
// it (unless GAVEL_SANDBOX_LAUNCHER already names a launcher), runs the
// tests and exits. Call it as the whole of TestMain.
func Main(m *testing.M) {
	bexec.Launch()
	if os.Getenv(bexec.LauncherEnv) != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "gavel-sandbox-")
	if err != nil {
		panic(err)
	}
	build := exec.Command("go", "build", "-o", dir, "github.com/gavelhq/gavel/cmd/gavel-sandbox")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		panic("build gavel-sandbox: " + err.Error())
	}
	os.Setenv(bexec.LauncherEnv, filepath.Join(dir, bexec.LauncherName))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
