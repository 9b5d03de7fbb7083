package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/gavelhq/gavel/bench"
	bexec "github.com/gavelhq/gavel/bench/exec"
	"github.com/gavelhq/gavel/bench/problems"
)

// BenchProblemArgs is one unit of a benchmark build: validating one
// problem's candidates. The problems file must be readable at the same
// path by every worker (a shared checkout or volume).
type BenchProblemArgs struct {
	Problems   string        `json:"problems"`
	Lang       string        `json:"lang"`
	Index      int           `json:"index"`
	ProblemID  string        `json:"problem_id"`
	Seed       uint64        `json:"seed"`
	PerScore   int           `json:"per_score"`
	Candidates int           `json:"candidates"`
	Wall       time.Duration `json:"wall"`
}

// Kind implements river.JobArgs.
func (BenchProblemArgs) Kind() string { return "gavel_bench_problem" }

// benchWorker works BenchProblemArgs.
type benchWorker struct {
	river.WorkerDefaults[BenchProblemArgs]
	env *Env
}

func (w *benchWorker) Work(ctx context.Context, job *river.Job[BenchProblemArgs]) error {
	a := job.Args
	ps, err := w.env.problemsOf(a.Problems, a.Lang)
	if err != nil {
		return river.JobCancel(fmt.Errorf("problems %s: %w", a.Problems, err))
	}
	if a.Index < 0 || a.Index >= len(ps) || ps[a.Index].ID != a.ProblemID {
		return river.JobCancel(fmt.Errorf("problems %s: no problem %s at index %d here", a.Problems, a.ProblemID, a.Index))
	}
	var mod *bexec.GoModule
	if a.Lang == "go" {
		if mod, err = w.env.goModule(); err != nil {
			return err
		}
	}
	_, err = bench.WarmProblem(ctx, ps[a.Index], a.Index, mod, bench.BuildOptions{Lang: a.Lang, Seed: a.Seed, PerScore: a.PerScore,
		Candidates: a.Candidates, Limits: bexec.Limits{Wall: a.Wall}, Cache: w.env.Results})
	return err
}

// EnqueueBench inserts one unit per problem and returns their ids.
func EnqueueBench(ctx context.Context, c *Client, file string, ps []*problems.Problem, opt bench.BuildOptions) ([]int64, error) {
	var args []river.JobArgs
	for i, p := range ps {
		args = append(args, BenchProblemArgs{Problems: file, Lang: opt.Lang, Index: i, ProblemID: p.ID, Seed: opt.Seed,
			PerScore: opt.PerScore, Candidates: opt.Candidates, Wall: opt.Limits.Wall})
	}
	return enqueue(ctx, c, args)
}
