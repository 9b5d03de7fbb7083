package bench_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/gavelhq/gavel/bench"
	bexec "github.com/gavelhq/gavel/bench/exec"
	"github.com/gavelhq/gavel/bench/problems"
)

func TestMain(m *testing.M) {
	bexec.Launch()
	os.Exit(m.Run())
}

func loadFirst(t *testing.T, lang string, n int) []*problems.Problem {
	t.Helper()
	name, load := "../examples/humaneval-x-go/humaneval_go.jsonl.gz", problems.LoadHumanEvalXGo
	if lang == "python" {
		name, load = "../examples/humaneval/HumanEval.jsonl.gz", problems.LoadHumanEval
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
	return ps[:n]
}

// testBuild builds on the first 20 problems and re-checks every program by
// running it again: 3..5 pass their tests, 0..2 fail them, and the score
// levels are balanced.
func testBuild(t *testing.T, lang string) {
	ps := loadFirst(t, lang, 20)
	var mod *bexec.GoModule
	if lang == "go" {
		var err error
		if mod, err = problems.NewGoModule(); err != nil {
			t.Fatal(err)
		}
		defer mod.Close()
	}
	start := time.Now()
	lim := bexec.Limits{Wall: 5 * time.Second}
	res, err := bench.Build(context.Background(), ps, mod, bench.BuildOptions{Lang: lang, PerScore: 1, Candidates: 2, Seed: 1, Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s in %v", lang, res.Describe(), time.Since(start).Round(time.Second))
	n := res.PerScore[0]
	for s := 0; s <= 5; s++ {
		if res.PerScore[s] != n {
			t.Fatalf("unbalanced: %v", res.PerScore)
		}
	}
	if n < 10 {
		t.Fatalf("only %d programs per score from 20 problems", n)
	}
	byID := bench.ProblemsByID(ps)
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for _, prog := range res.Programs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			st, why, err := bench.Check(context.Background(), prog, byID[prog.Problem], mod, lim)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Error(err)
				return
			}
			if why != "" {
				t.Errorf("%s (rules %v): re-run %s: %s", prog.ID, prog.Rules, st, why)
			}
		})
	}
	wg.Wait()
}

func TestBuildPython(t *testing.T) { testBuild(t, "python") }

func TestBuildGo(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a few hundred Go programs")
	}
	testBuild(t, "go")
}

func TestDiverseAndDistance(t *testing.T) {
	a, b := bench.Tokens("x := a + b"), bench.Tokens("x := a - b")
	if d := bench.EditDistance(a, b); d != 1.0/5 {
		t.Fatalf("distance %v, want 1/5", d)
	}
	if bench.EditDistance(a, a) != 0 || bench.EditDistance(nil, nil) != 0 {
		t.Fatal("distance to itself")
	}
}
