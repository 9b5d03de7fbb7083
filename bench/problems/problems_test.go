package problems_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	bexec "github.com/gavelhq/gavel/bench/exec"
	"github.com/gavelhq/gavel/bench/problems"
	"github.com/gavelhq/gavel/internal/sandboxtest"
)

func TestMain(m *testing.M) { sandboxtest.Main(m) }

func load(t testing.TB, lang string) []*problems.Problem {
	t.Helper()
	name := "../../examples/humaneval-x-go/humaneval_go.jsonl.gz"
	load := problems.LoadHumanEvalXGo
	if lang == "python" {
		name, load = "../../examples/humaneval/HumanEval.jsonl.gz", problems.LoadHumanEval
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ps, err := load(f, name)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// runAll runs every problem's canonical solution, two at a time: Go ones
// in two test binaries (problems.RunPrograms, whose results are a solo
// run's; TestRunManyMatchesRunAlone), Python ones one by one.
func runAll(t *testing.T, ps []*problems.Problem, mod *bexec.GoModule) map[string]*bexec.Result {
	out := map[string]*bexec.Result{}
	var mu sync.Mutex
	if mod != nil {
		var wg sync.WaitGroup
		for _, half := range [][]*problems.Problem{ps[:len(ps)/2], ps[len(ps)/2:]} {
			wg.Go(func() {
				var progs []problems.Program
				for _, p := range half {
					progs = append(progs, problems.Program{Problem: p, Code: p.Code()})
				}
				rs, err := problems.RunPrograms(context.Background(), mod, progs, bexec.Limits{Wall: 60 * time.Second}, nil)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for i, p := range half {
					out[p.ID] = rs[i]
				}
			})
		}
		wg.Wait()
		return out
	}
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for _, p := range ps {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			res, err := p.Run(context.Background(), mod, p.Code(), bexec.Limits{Wall: 60 * time.Second})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			out[p.ID] = res
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

func TestCanonicalGoSolutionsPass(t *testing.T) {
	ps := load(t, "go")
	if len(ps) != 164 {
		t.Fatalf("%d problems", len(ps))
	}
	if testing.Short() {
		ps = ps[:20]
	}
	mod, err := problems.NewGoModule()
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close()
	res := runAll(t, ps, mod)
	passed, errata := 0, 0
	for _, p := range ps {
		if p.Erratum != "" {
			// Known to be wrong (flaky): its result says nothing.
			errata++
			t.Logf("%s set aside: %s", p.ID, p.Erratum)
			continue
		}
		r := res[p.ID]
		if r != nil && r.Status == bexec.Passed {
			passed++
			continue
		}
		if r != nil {
			t.Errorf("%s: %s (%s) %s %s", p.ID, r.Status, r.Reason, r.Build, func() string {
				if r.Run != nil {
					return r.Run.Stdout + r.Run.Stderr
				}
				return ""
			}())
		}
	}
	t.Logf("%d of %d canonical Go solutions pass (%d set aside as errata)", passed, len(ps)-errata, errata)
}

func TestCanonicalPythonSolutionsPass(t *testing.T) {
	ps := load(t, "python")
	if len(ps) != 164 {
		t.Fatalf("%d problems", len(ps))
	}
	res := runAll(t, ps, nil)
	passed := 0
	for _, p := range ps {
		if r := res[p.ID]; r != nil && r.Status == bexec.Passed {
			passed++
		} else if r != nil {
			t.Errorf("%s: %s (%s)", p.ID, r.Status, r.Reason)
		}
	}
	t.Logf("%d of %d canonical Python solutions pass", passed, len(ps))
}

func TestLoadErrorsNameTheLine(t *testing.T) {
	in := strings.NewReader(`{"task_id":"Go/0","prompt":"p","canonical_solution":"s","test":"t","test_setup":"x"}` + "\n" + `{"task_id":"Go/1","prompt":"p"}` + "\n")
	_, err := problems.LoadHumanEvalXGo(in, "go.jsonl")
	if err == nil || !strings.Contains(err.Error(), "go.jsonl:2:") {
		t.Fatalf("error %v", err)
	}
}

// Every erratum names a problem of the bundled data, which loads with the
// reason set.
func TestErrataNameLoadedProblems(t *testing.T) {
	found := map[string]bool{}
	for _, lang := range []string{"go", "python"} {
		for _, p := range load(t, lang) {
			if p.Erratum != "" {
				if p.Erratum != problems.Errata[p.ID] {
					t.Fatalf("%s: erratum %q", p.ID, p.Erratum)
				}
				found[p.ID] = true
			}
		}
	}
	for id := range problems.Errata {
		if !found[id] {
			t.Errorf("erratum %s names no loaded problem", id)
		}
	}
}

func TestRunPathRefusesWhatItCannotRun(t *testing.T) {
	dir := t.TempDir()
	if _, err := problems.RunPath(context.Background(), "rust", dir, bexec.Limits{}); !errors.Is(err, problems.ErrLanguage) {
		t.Fatalf("lang rust: err = %v, want ErrLanguage", err)
	}
	if _, err := problems.RunPath(context.Background(), "go", dir, bexec.Limits{}); !errors.Is(err, problems.ErrNoGoFiles) {
		t.Fatalf("an empty folder: err = %v, want ErrNoGoFiles", err)
	}
}
