package acr_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gavelhq/gavel/acr"
	bexec "github.com/gavelhq/gavel/bench/exec"
	"github.com/gavelhq/gavel/bench/problems"
)

func TestMain(m *testing.M) {
	bexec.Launch() // the sandbox re-executes the test binary as its launcher
	os.Exit(m.Run())
}

func load(t *testing.T, file, lang string, n int) []*acr.Instruction {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ps []*problems.Problem
	if lang == "go" {
		ps, err = problems.LoadHumanEvalXGo(f, file)
	} else {
		ps, err = problems.LoadHumanEval(f, file)
	}
	if err != nil {
		t.Fatal(err)
	}
	return acr.FromProblems(ps[:n])
}

type memCache map[string]*acr.Execution

func (m memCache) GetExecution(_ context.Context, key string) (*acr.Execution, error) {
	if e, ok := m[key]; ok {
		c := *e
		return &c, nil
	}
	return nil, nil
}

func (m memCache) PutExecution(_ context.Context, key string, e *acr.Execution) error {
	m[key] = e
	return nil
}

// The sandbox runs an answer's code with the instruction's tests: the
// reference passes, a broken answer fails, code that does not build is a
// build error, an answer without code is no_code, and without tests only
// building counts. The cache runs each program once.
func TestSandboxRunsAnswers(t *testing.T) {
	box := &acr.Sandbox{Limits: bexec.Limits{Wall: 20 * time.Second}}
	defer box.Close()
	ctx := context.Background()
	type run struct {
		name  string
		in    *acr.Instruction
		edit  func(string) string
		want  string
		tests bool
	}
	var cases []run
	py := load(t, "../examples/humaneval/HumanEval.jsonl.gz", "python", 1)[0] // has_close_elements
	goIn := load(t, "../examples/humaneval-x-go/humaneval_go.jsonl.gz", "go", 1)[0]
	noTests := *goIn
	noTests.Tests = ""
	cases = append(cases,
		run{"python reference", py, func(s string) string { return s }, "passed", true},
		run{"python wrong", py, func(s string) string { return strings.Replace(s, "distance < threshold", "distance > threshold", 1) }, "failed", true},
		run{"python syntax error", py, func(s string) string { return s + "\ndef (" }, "build_error", true},
		run{"no code", py, func(string) string { return "" }, acr.NoCode, true},
		run{"go reference, no package clause", goIn, func(s string) string { return s }, "passed", true},
		run{"go wrong", goIn, func(s string) string { return strings.Replace(s, "distance < threshold", "distance > threshold", 1) }, "failed", true},
		run{"go with package clause, build check only", &noTests, func(s string) string { return "package main\n\n" + s }, "passed", false},
		run{"go does not build, build check only", &noTests, func(s string) string { return s + "\nfunc broken() int { return \"x\" }\n" }, "build_error", false},
	)
	cache := memCache{}
	cached := &acr.Cached{Exec: box, Cache: cache, Limits: box.Limits}
	for _, c := range cases {
		code := c.edit(acr.ExtractCode(c.in.Reference, c.in.Language))
		if c.name != "no code" && code == acr.ExtractCode(c.in.Reference, c.in.Language) && strings.Contains(c.name, "wrong") {
			t.Fatalf("%s: the edit changed nothing", c.name)
		}
		e, err := cached.Run(ctx, c.in, code)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if e.Status != c.want || e.Tested != c.tests || e.Cached {
			t.Errorf("%s: %+v, want %s (tested %v)", c.name, e, c.want, c.tests)
		}
		if c.want == "build_error" && c.in.Language == "go" && !strings.Contains(e.Summary(), "build: build_error") {
			t.Errorf("%s: summary %q", c.name, e.Summary())
		}
		again, err := cached.Run(ctx, c.in, code)
		if err != nil || again.Status != e.Status || !again.Cached {
			t.Errorf("%s: second run %+v %v: want the cached result", c.name, again, err)
		}
	}
	if len(cache) != len(cases) {
		t.Fatalf("%d cached results for %d distinct runs", len(cache), len(cases))
	}
}

func TestOutputPathsAreStable(t *testing.T) {
	for in, want := range map[string]string{
		`  File "/var/lib/gavel/sandbox/run-3060132714/prog.py", line 35`: `  File "prog.py", line 35`,
		"/tmp/gomod-123/p000012/prog.go:12:3: undefined: x":               "prog.go:12:3: undefined: x",
		"./p000012/prog.go:3:2: imported and not used":                    "prog.go:3:2: imported and not used",
	} {
		if got := acr.StablePaths(in); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}
