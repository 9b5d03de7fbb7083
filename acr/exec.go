package acr

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"regexp"
	"strings"
	"sync"

	bexec "github.com/gavelhq/gavel/bench/exec"
	"github.com/gavelhq/gavel/bench/problems"
)

// Execution is what running an answer's code found.
type Execution struct {
	// Status is the sandbox's (passed, failed, build_error, timeout,
	// resource_limit, crashed), or no_code when the answer has no code.
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Tested is set when the instruction's tests ran; otherwise passed
	// means the code builds (Go) or loads (Python).
	Tested bool `json:"tested"`
	// Output is the start of what the compiler or the program wrote (for
	// the critic).
	Output string `json:"output,omitempty"`
	// Cached is set when the result came from the execution cache.
	Cached bool `json:"-"`
}

// NoCode is the status of an answer with no code in it.
const NoCode = "no_code"

// Works reports whether the code passed its tests (or built and loaded).
func (e *Execution) Works() bool { return e != nil && e.Status == string(bexec.Passed) }

// Summary is a line for the critic: the status, why, and the output.
func (e *Execution) Summary() string {
	if e == nil {
		return ""
	}
	what := "tests"
	if !e.Tested {
		what = "build"
	}
	s := fmt.Sprintf("%s: %s", what, e.Status)
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	if strings.TrimSpace(e.Output) != "" {
		s += "\n" + e.Output
	}
	return s
}

// Executor runs an answer's code for an instruction.
type Executor interface {
	Run(ctx context.Context, in *Instruction, code string) (*Execution, error)
}

// ExecCache keeps sandbox results by content key; store/sqldb implements
// it. Get returns nil, nil for a miss.
type ExecCache interface {
	GetExecution(ctx context.Context, key string) (*Execution, error)
	PutExecution(ctx context.Context, key string, e *Execution) error
}

// Cached runs code through an executor once: results that do not depend
// on the machine's load (everything but timeouts and resource limits) are
// kept by a key of what decides them (language, code, tests, limits), so
// a rerun or a resumed round does not run the same program again.
type Cached struct {
	Exec   Executor
	Cache  ExecCache
	Limits bexec.Limits
}

// ExecKey is the content key of a run.
func ExecKey(in *Instruction, code string, lim bexec.Limits) string {
	b, _ := json.Marshal(struct {
		Version  string       `json:"v"`
		Language string       `json:"language"`
		Code     string       `json:"code"`
		Tests    string       `json:"tests"`
		Limits   bexec.Limits `json:"limits"`
	}{"gavel-exec/1", in.Language, code, in.Tests, lim})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Run implements Executor.
func (c *Cached) Run(ctx context.Context, in *Instruction, code string) (*Execution, error) {
	key := ExecKey(in, code, c.Limits)
	if e, err := c.Cache.GetExecution(ctx, key); err != nil {
		return nil, err
	} else if e != nil {
		e.Cached = true
		return e, nil
	}
	e, err := c.Exec.Run(ctx, in, code)
	if err != nil {
		return nil, err
	}
	if e.Status != string(bexec.Timeout) && e.Status != string(bexec.ResourceLimit) {
		if err := c.Cache.PutExecution(ctx, key, e); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Sandbox runs code in gavel's sandbox (bench/exec): Python with the
// instruction's test script appended; Go as prog.go beside the
// instruction's test file, in a module with testify vendored, compiled
// offline.
type Sandbox struct {
	Limits bexec.Limits

	once sync.Once
	mod  *bexec.GoModule
	err  error
}

// Close removes the Go module, if one was made.
func (s *Sandbox) Close() error {
	if s.mod != nil {
		return s.mod.Close()
	}
	return nil
}

// Run implements Executor.
func (s *Sandbox) Run(ctx context.Context, in *Instruction, code string) (*Execution, error) {
	tested := in.Tests != ""
	if strings.TrimSpace(code) == "" {
		return &Execution{Status: NoCode, Reason: "the answer has no code", Tested: tested}, nil
	}
	var res *bexec.Result
	var err error
	switch in.Language {
	case "python":
		src := code
		if tested {
			src += "\n\n" + in.Tests
		}
		res, err = bexec.Python(ctx, src, s.Limits)
	case "go":
		s.once.Do(func() { s.mod, s.err = problems.NewGoModule() })
		if s.err != nil {
			return nil, s.err
		}
		res, err = s.mod.Test(ctx, GoFiles(code, in.Tests), s.Limits)
	default:
		return nil, fmt.Errorf("instruction %s: no language to run its code in", in.ID)
	}
	if err != nil {
		return nil, err
	}
	out := res.Build
	if res.Run != nil && out == "" {
		out = res.Run.Stderr
		if strings.TrimSpace(out) == "" {
			out = res.Run.Stdout
		}
	}
	return &Execution{Status: string(res.Status), Reason: res.Reason, Tested: tested, Output: clipLines(StablePaths(out), 20, 2000)}, nil
}

// runPaths are the sandbox's per-run folders and the Go module's package
// folders: random or numbered by run order, so they are cut from output
// that goes into prompts, which must not change from run to run.
var runPaths = regexp.MustCompile(`(?:/[^\s"':]*)?/(?:run-[\d-]+|gomod-\d+)/|(?:\./)?\bp\d{6}/`)

// runNoise is what a Go program's output says differently from run to run
// of the same program: goroutine numbers, addresses and program counter
// offsets in a panic's trace, and test durations.
var runNoise = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\bp\d{6}\b`), "prog"}, // the package in a trace: gavelprobs/p000032.F(...)
	{regexp.MustCompile(`\bgoroutine \d+\b`), "goroutine N"},
	{regexp.MustCompile(` \+0x[0-9a-f]+\b`), ""},
	{regexp.MustCompile(`\b0x[0-9a-f]{6,}\b`), "0x?"},
	{regexp.MustCompile(`\(\d+\.\d+s\)`), "(?s)"},
	{regexp.MustCompile(`(?m)^((?:ok|FAIL)\s+\S+)\s+\d+\.\d+s$`), "$1"},
}

// StablePaths cuts from a program's output what changes from run to run of
// the same program: the run-specific folders, and a Go trace's goroutine
// numbers, addresses and timings. The output goes into prompts (the
// critic's), which must be the same whichever process or machine ran it.
func StablePaths(s string) string {
	s = runPaths.ReplaceAllString(s, "")
	for _, n := range runNoise {
		s = n.re.ReplaceAllString(s, n.with)
	}
	return s
}

// GoFiles lays out a Go answer and its tests as a package: prog.go (the
// answer, given "package main" when it has no package clause, its imports
// completed as goimports does) and prog_test.go (the tests, or without
// tests one empty test, so that the package must build).
func GoFiles(code, tests string) map[string]string {
	pkg := "main"
	if f, err := parser.ParseFile(token.NewFileSet(), "prog.go", code, parser.PackageClauseOnly); err == nil {
		pkg = f.Name.Name
	} else {
		code = "package main\n\n" + code
	}
	files := map[string]string{}
	prog, err := problems.GoTestFile(code)
	if err != nil {
		prog = code // the compiler will say why
	}
	files["prog.go"] = prog
	if tests == "" {
		tests = "package " + pkg + "\n\nimport \"testing\"\n\nfunc TestBuilds(t *testing.T) {}\n"
	}
	if t, err := problems.GoTestFile(tests); err == nil {
		tests = t
	}
	files["prog_test.go"] = tests
	return files
}

func clipLines(s string, lines, chars int) string {
	parts := strings.SplitN(s, "\n", lines+1)
	if len(parts) > lines {
		parts = append(parts[:lines], "[...]")
	}
	s = strings.Join(parts, "\n")
	if len(s) > chars {
		s = s[:chars] + "\n[...]"
	}
	return strings.TrimSpace(s)
}
