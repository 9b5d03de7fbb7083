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
	"github.com/gavelhq/gavel/internal/sandboxtest"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/sim"
)

func TestMain(m *testing.M) { sandboxtest.Main(m) }

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
	ins, _ := acr.FromProblems(ps[:n])
	return ins
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
		// The folders are named for the process that made them now.
		`  File "/var/lib/gavel/sandbox/run-6243-330012936/prog.py", line 2`: `  File "prog.py", line 2`,
		"/tmp/gomod-123/p000012/prog.go:12:3: undefined: x":                  "prog.go:12:3: undefined: x",
		"./p000012/prog.go:3:2: imported and not used":                       "prog.go:3:2: imported and not used",
		// A Go panic's trace, as 'go test' prints it (Go 1.26).
		"panic: not implemented [recovered, repanicked]\n\ngoroutine 19 [running]:\ntesting.tRunner.func1.2({0x5a1b20, 0xc000012345})\n\t/usr/local/go/src/testing/testing.go:1734 +0x21c": "panic: not implemented [recovered, repanicked]\n\ngoroutine N [running]:\ntesting.tRunner.func1.2({0x?, 0x?})\n\t/usr/local/go/src/testing/testing.go:1734",
		"--- FAIL: TestHasCloseElements (0.03s)\nFAIL\tgavelprobs/p000003\t0.012s":                                                                                                         "--- FAIL: TestHasCloseElements (?s)\nFAIL\tgavelprobs/prog",
		"gavelprobs/p000032.HasCloseElements(...)\n\t/tmp/gomod-1/p000032/prog.go:12":                                                                                                      "gavelprobs/prog.HasCloseElements(...)\n\tprog.go:12",
	} {
		if got := acr.StablePaths(in); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

// simClient is the simulated model as an llm.Client, without a cache.
type simClient struct{ m sim.Model }

func (c simClient) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	return c.m.Complete(ctx, "", req)
}

// A round on the hand-written example: Python and Go with tests, Python
// without tests (a load check), and an instruction with no language
// (nothing runs; the composite is the judged part alone).
func TestRoundOnTheExample(t *testing.T) {
	f, err := os.Open("../examples/acr/instructions.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	ins, err := acr.ReadInstructions(f, "instructions.jsonl")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := judge.Load("pointwise5")
	pp, _ := judge.Load("pairwise")
	box := &acr.Sandbox{Limits: bexec.Limits{Wall: 20 * time.Second}}
	defer box.Close()
	r, err := acr.NewRound(acr.Config{Generator: "sim", JudgeModel: "sim", CriticModel: "sim", N: 2, Temperature: 0.8,
		Pointwise: pw, Pairwise: pp, ExecWeight: 0.5, Ties: acr.Sample}, simClient{sim.Model{}}, box, ins)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		ran, tested bool
	}{"py-leap": {true, true}, "go-reverse": {true, true}, "py-slugify": {true, false}, "text-cache-key": {false, false}}
	for _, it := range r.Items {
		w := want[it.Instruction.ID]
		if ran := it.RefExec != nil; ran != w.ran {
			t.Fatalf("%s: reference run %v, want %v", it.Instruction.ID, ran, w.ran)
		}
		if !w.ran {
			for _, s := range it.Samples {
				if s.Exec != nil || s.Composite != s.Judged {
					t.Fatalf("%s: nothing should run and the composite be the judged part: %+v", it.Instruction.ID, s)
				}
			}
			continue
		}
		if it.RefExec.Status != "passed" || it.RefExec.Tested != w.tested {
			t.Fatalf("%s: the reference's run %+v, want passed (tested %v)", it.Instruction.ID, it.RefExec, w.tested)
		}
		if it.Branch() == "skipped" || it.Decision.DecidedBy == "" {
			t.Fatalf("%s: %s, %+v", it.Instruction.ID, it.Branch(), it.Decision)
		}
	}
}
