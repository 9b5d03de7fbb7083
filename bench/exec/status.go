package exec

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Status is the outcome of running a program and its tests.
type Status string

// The statuses.
const (
	Passed        Status = "passed"         // the tests ran and passed
	Failed        Status = "failed"         // the tests ran and failed
	BuildError    Status = "build_error"    // it did not compile (Go) or parse (Python)
	Timeout       Status = "timeout"        // it ran past the wall-clock limit
	ResourceLimit Status = "resource_limit" // it hit a memory, CPU, file, process or output limit
	Crashed       Status = "crashed"        // it died otherwise (a panic, an uncaught exception, a signal)
)

// Result is a program's status with what explains it.
type Result struct {
	Status Status `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Build is the compiler's output for a build error.
	Build     string        `json:"build_output,omitempty"`
	BuildTime time.Duration `json:"build_ns,omitempty"`
	// Together is the number of programs compiled into the test binary
	// this one ran from (0: alone); BuildTime is then its share.
	Together int  `json:"together,omitempty"`
	Run      *Run `json:"run,omitempty"`
}

// resourceReason finds a resource limit in a run's outcome.
func resourceReason(r *Run) string {
	switch {
	case r.OutputLimit:
		return "output over the cap"
	case r.Signal == "CPU time limit exceeded":
		return "CPU time limit"
	case r.Signal == "file size limit exceeded":
		return "file size limit"
	}
	low := strings.ToLower(r.Stderr + r.Stdout)
	for _, pat := range []string{"out of memory", "cannot allocate memory", "memoryerror", "resource temporarily unavailable", "too many open files", "file too large"} {
		if strings.Contains(low, pat) {
			return "resource limit: " + pat
		}
	}
	return ""
}

// GoModule is a module folder in which Go programs are compiled offline:
// go.mod, go.sum and a vendor folder, with a build cache shared by every
// compile, so that dependencies and the standard library compile once.
type GoModule struct {
	Root, Cache string
	n           atomic.Int64
}

// NewGoModule unpacks a module (go.mod, go.sum and vendor.tar.gz) into a
// folder of its own.
func NewGoModule(gomod, gosum, vendorTarGz []byte) (*GoModule, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	base = filepath.Join(base, "gavel")
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp(base, "gomod-")
	if err != nil {
		return nil, err
	}
	m := &GoModule{Root: root, Cache: filepath.Join(base, "gocache")}
	if err := os.MkdirAll(m.Cache, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(root, "go.mod"), gomod, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(root, "go.sum"), gosum, 0o644); err != nil {
		return nil, err
	}
	if err := untar(vendorTarGz, root); err != nil {
		return nil, fmt.Errorf("vendor: %w", err)
	}
	return m, nil
}

// Close removes the module folder (the build cache stays, to be reused).
func (m *GoModule) Close() error { return os.RemoveAll(m.Root) }

func untar(tgz []byte, dst string) error {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if strings.HasPrefix(name, "..") || filepath.IsAbs(name) {
			return fmt.Errorf("unsafe path %q in archive", h.Name)
		}
		p := filepath.Join(dst, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			b, err := io.ReadAll(io.LimitReader(tr, 64<<20))
			if err != nil {
				return err
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				return err
			}
		}
	}
}

// goEnv is the environment of compiles: offline, vendored, no cgo.
func (m *GoModule) goEnv() []string {
	env := []string{"GOFLAGS=-mod=vendor", "GOPROXY=off", "GOTOOLCHAIN=local", "CGO_ENABLED=0",
		"GOCACHE=" + m.Cache, "GOPATH=" + filepath.Join(m.Cache, "gopath"), "HOME=" + m.Cache, "GOWORK=off"}
	if p := os.Getenv("PATH"); p != "" {
		env = append(env, "PATH="+p)
	}
	return env
}

var goBin = sync.OnceValue(func() string {
	if p, err := osexec.LookPath("go"); err == nil {
		return p
	}
	return "/usr/local/go/bin/go"
})

// Test compiles a package of Go files (its tests included) in the module
// and runs its tests in the sandbox. Compiling runs no program code; only
// the test binary runs, sandboxed.
func (m *GoModule) Test(ctx context.Context, files map[string]string, lim Limits) (*Result, error) {
	lim = lim.norm()
	for name := range files {
		if err := checkGoFileName(name); err != nil {
			return nil, err
		}
	}
	work, cleanup, err := NewWorkdir()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	bin := filepath.Join(work, "prog.test")
	t0 := time.Now()
	out, err := m.Compile(ctx, files, bin)
	buildTime := time.Since(t0)
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, errNoTests):
		return &Result{Status: BuildError, Reason: "the package has no tests", BuildTime: buildTime}, nil
	case err != nil:
		return &Result{Status: BuildError, Reason: "the package does not compile", Build: capText(out, lim.Output), BuildTime: buildTime}, nil
	}
	res, err := RunTestBinary(ctx, bin, nil, lim)
	if err != nil {
		return nil, err
	}
	res.BuildTime = buildTime
	return res, nil
}

func classifyGo(r *Run) (Status, string) {
	switch {
	case r.TimedOut:
		return timeoutStatus(r)
	case strings.Contains(r.Stdout+r.Stderr, "panic: test timed out"):
		return Timeout, "the tests timed out"
	}
	if why := resourceReason(r); why != "" {
		return ResourceLimit, why
	}
	switch {
	case r.ExitCode == 0 && r.Signal == "":
		return Passed, ""
	case r.Signal != "":
		return Crashed, "killed by " + r.Signal
	case strings.Contains(r.Stdout+r.Stderr, "panic:"):
		return Crashed, "a panic"
	case strings.Contains(r.Stdout, "--- FAIL") || strings.Contains(r.Stdout, "FAIL"):
		return Failed, "a test failed"
	}
	return Crashed, fmt.Sprintf("exit code %d", r.ExitCode)
}

// timeoutStatus classifies a run killed at the wall-clock limit: one whose
// forks the process limit refused (a fork bomb, whose processes go on
// forking until the end) is stopped by a resource limit, else it timed out.
func timeoutStatus(r *Run) (Status, string) {
	if r.ForksRefused > 0 {
		return ResourceLimit, fmt.Sprintf("process limit: %d forks refused, then killed at the wall-clock limit", r.ForksRefused)
	}
	return Timeout, "killed at the wall-clock limit"
}

func capText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "\n[... cut]"
	}
	return s
}

// pythonRunner starts a program in one interpreter, as 'python3 -I
// prog.py' would, after checking that it parses: a program that does not
// parse ends with parseMarker and exit code parseExit, without running. A
// SyntaxError that only compiling finds ('return' outside a function) is
// reported as Python reports it at start-up, exit code 1, as before. The
// program runs as the __main__ module, with sys.argv ['prog.py'], and an
// uncaught exception's trace leaves out this runner's frame, so the output
// is the program's own.
const pythonRunner = `import os, sys
path = os.path.abspath('prog.py')
try:
    with open(path, 'rb') as f:
        src = f.read()
    compile(src, path, 'exec', 0x400)  # ast.PyCF_ONLY_AST: parse only
except (SyntaxError, ValueError, UnicodeDecodeError) as e:
    import traceback
    sys.stderr.write(''.join(traceback.format_exception_only(type(e), e)))
    sys.stderr.write('\n` + pythonParseMarker + `\n')
    sys.exit(` + pythonParseExit + `)
try:
    code = compile(src, path, 'exec')
except SyntaxError as e:
    import traceback
    sys.stderr.write(''.join(traceback.format_exception_only(type(e), e)))
    sys.exit(1)
del src
main = type(sys)('__main__')
main.__file__ = path
main.__builtins__ = __builtins__
sys.modules['__main__'] = main
sys.argv = ['prog.py']
def hook(t, v, tb):
    import traceback
    traceback.print_exception(t, v, tb.tb_next if tb is not None else tb)
sys.excepthook = hook
del hook, f, path
exec(code, main.__dict__)
`

const (
	pythonParseMarker = "gavel: the program does not parse"
	pythonParseExit   = "86"
)

// Python runs a Python program (a script that runs its own tests and
// exits non-zero when one fails) in the sandbox: one interpreter checks
// that it parses, then runs it.
func Python(ctx context.Context, source string, lim Limits) (*Result, error) {
	lim = lim.norm()
	work, cleanup, err := NewWorkdir()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	file := filepath.Join(work, "prog.py")
	if err := os.WriteFile(file, []byte(source), 0o644); err != nil {
		return nil, err
	}
	if err := Chown(file); err != nil {
		return nil, err
	}
	env := []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONHASHSEED=0"}
	if p := os.Getenv("PATH"); p != "" {
		env = append(env, "PATH="+p)
	}
	run, err := Exec(ctx, Cmd{Argv: []string{python(), "-I", "-c", pythonRunner}, Env: env, Dir: work, Limits: lim})
	if err != nil {
		return nil, err
	}
	res := &Result{}
	if stderr := strings.TrimSpace(run.Stderr); fmt.Sprint(run.ExitCode) == pythonParseExit && run.Signal == "" && !run.TimedOut &&
		strings.HasSuffix(stderr, pythonParseMarker) {
		res.Status, res.Reason = BuildError, "the program does not parse"
		res.Build = strings.TrimRight(strings.TrimSuffix(strings.TrimRight(run.Stderr, "\n"), pythonParseMarker), "\n") + "\n"
		return res, nil
	}
	res.Run = run
	res.Status, res.Reason = classifyPython(run)
	return res, nil
}

// PythonInterpreter is the python3 gavel runs programs with.
func PythonInterpreter() string { return python() }

// python finds an interpreter the sandbox user can run: one installed for
// everyone (/usr/bin) before one in a user's home (pyenv shims are not).
var python = sync.OnceValue(func() string {
	candidates := []string{"/usr/bin/python3", "/usr/local/bin/python3"}
	for _, name := range []string{"python3", "python"} {
		if p, err := osexec.LookPath(name); err == nil {
			candidates = append(candidates, p)
		}
	}
	for _, c := range candidates {
		if os.Geteuid() != 0 || worldExecutable(c) {
			if _, err := os.Stat(c); err == nil {
				return c
			}
		}
	}
	return "python3"
})

// worldExecutable reports whether any user can run path: the file and every
// folder above it are executable by others.
func worldExecutable(path string) bool {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	for p := real; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return false
		}
		if p == "/" {
			return true
		}
	}
}

func classifyPython(r *Run) (Status, string) {
	if r.TimedOut {
		return timeoutStatus(r)
	}
	if why := resourceReason(r); why != "" {
		return ResourceLimit, why
	}
	switch {
	case r.ExitCode == 0 && r.Signal == "":
		return Passed, ""
	case r.Signal != "":
		return Crashed, "killed by " + r.Signal
	case strings.Contains(r.Stderr, "AssertionError"):
		return Failed, "an assertion failed"
	}
	last := strings.TrimSpace(r.Stderr)
	if i := strings.LastIndexByte(last, '\n'); i >= 0 {
		last = last[i+1:]
	}
	return Crashed, "uncaught exception: " + capText(last, 200)
}
