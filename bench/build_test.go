package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gavelhq/gavel/bench"
	bexec "github.com/gavelhq/gavel/bench/exec"
	"github.com/gavelhq/gavel/bench/perturb"
	"github.com/gavelhq/gavel/bench/problems"
	"github.com/gavelhq/gavel/internal/sandboxtest"
)

func TestMain(m *testing.M) { sandboxtest.Main(m) }

func loadFirst(t testing.TB, lang string, n int) []*problems.Problem {
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
	// No candidate is its reference, and every program and reference is
	// already what the one printer makes of it.
	for _, prog := range res.Programs {
		if prog.Code == prog.Reference {
			t.Errorf("%s (score %d, rules %v) equals its reference", prog.ID, prog.Score, prog.Rules)
		}
		for what, code := range map[string]string{"program": prog.Code, "reference": prog.Reference} {
			if again, err := perturb.Normalize(lang, code); err != nil || again != code {
				t.Errorf("%s: the %s is not the printer's output (%v)", prog.ID, what, err)
			}
		}
	}
	// No formatting feature identifies a score: for each of indentation,
	// blank lines and spacing, the values the programs of a score take
	// are also taken by programs of another score.
	features := map[string]func(string) string{
		"indent": func(c string) string {
			tabs, spaces := 0, 0
			for _, l := range strings.Split(c, "\n") {
				switch {
				case strings.HasPrefix(l, "\t"):
					tabs++
				case strings.HasPrefix(l, " "):
					spaces++
				}
			}
			return fmt.Sprintf("tabs:%v spaces:%v", tabs > 0, spaces > 0)
		},
		"blank lines": func(c string) string { return fmt.Sprint(strings.Count(strings.TrimSpace(c), "\n\n")) },
		"trailing space": func(c string) string {
			n := 0
			for _, l := range strings.Split(c, "\n") {
				if strings.TrimRight(l, " \t") != l {
					n++
				}
			}
			return fmt.Sprint(n)
		},
		"double spaces": func(c string) string { return fmt.Sprint(strings.Count(strings.TrimLeft(c, " \t"), "  ") > 0) },
	}
	for name, f := range features {
		byScore := map[int]map[string]bool{}
		for _, prog := range res.Programs {
			if byScore[prog.Score] == nil {
				byScore[prog.Score] = map[string]bool{}
			}
			byScore[prog.Score][f(prog.Code)] = true
		}
		for s, vals := range byScore {
			shared := false
			for o, others := range byScore {
				for v := range vals {
					shared = shared || (o != s && others[v])
				}
			}
			if !shared {
				t.Errorf("%s: %s alone identifies score %d (%v)", lang, name, s, vals)
			}
		}
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

// BenchmarkBuildGo builds a benchmark over the first 20 HumanEval-X Go
// problems (one program per score, two candidates per score, no result
// cache) the old way, every candidate in a test binary of its own, and the
// new way, one test binary per problem:
//
//	go test ./bench -run XXX -bench BuildGo -benchtime 1x
func BenchmarkBuildGo(b *testing.B) {
	ps := loadFirst(b, "go", 20)
	mod, err := problems.NewGoModule()
	if err != nil {
		b.Fatal(err)
	}
	defer mod.Close()
	lim := bexec.Limits{Wall: 10 * time.Second}
	// Warm the shared build cache (the standard library, testify) first.
	if _, err := bench.Build(context.Background(), ps[:1], mod, bench.BuildOptions{Lang: "go", Candidates: 2, Seed: 1, Limits: lim}); err != nil {
		b.Fatal(err)
	}
	var outputs [2][]byte
	for i, separate := range []bool{true, false} {
		name := map[bool]string{true: "binary_per_candidate", false: "binary_per_problem"}[separate]
		b.Run(name, func(b *testing.B) {
			var res *bench.BuildResult
			for b.Loop() {
				if res, err = bench.Build(context.Background(), ps, mod, bench.BuildOptions{Lang: "go", PerScore: 1, Candidates: 2,
					Seed: 1, Limits: lim, Separate: separate}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(res.Candidates)*float64(b.N)/b.Elapsed().Seconds(), "candidates/s")
			outputs[i], _ = json.Marshal(res.Programs)
		})
	}
	if outputs[0] != nil && outputs[1] != nil && string(outputs[0]) != string(outputs[1]) {
		b.Fatal("the two ways built different benchmarks")
	}
}
