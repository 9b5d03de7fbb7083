package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gavelhq/gavel/bench"
	bexec "github.com/gavelhq/gavel/bench/exec"
	"github.com/gavelhq/gavel/bench/problems"
	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/report"
)

// BenchBuildResult is a benchmark build's result; marshalled, it is bench
// build's --json output.
type BenchBuildResult struct {
	ResultVersion int `json:"result_version"`
	// File is where the programs were written.
	File     string  `json:"file"`
	Programs int     `json:"programs"`
	Seconds  float64 `json:"seconds"`
	*bench.BuildResult
}

// BenchBuild builds a benchmark from problems (a Go module to run Go
// problems in, when they are Go) and writes its programs to w as JSONL.
func BenchBuild(ctx context.Context, ps []*problems.Problem, mod *bexec.GoModule, opt bench.BuildOptions, file string, w func(func(io.Writer) error) error) (*BenchBuildResult, error) {
	start := time.Now()
	res, err := bench.Build(ctx, ps, mod, opt)
	if err != nil {
		return nil, err
	}
	err = w(func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for _, p := range res.Programs {
			if err := enc.Encode(p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &BenchBuildResult{ResultVersion: ResultVersion, File: file, Programs: len(res.Programs), Seconds: time.Since(start).Seconds(), BuildResult: res}, nil
}

// BenchRunConfig configures the meta-evaluation of metrics and a judge on
// a benchmark file.
type BenchRunConfig struct {
	File    string
	Metrics []string
	// Judge, when set, is meta-evaluated with Model.
	Judge       *judge.Spec
	Model       string
	Concurrency int
	Resamples   int
	Seed        uint64
	Simulated   bool
}

// BenchRunResult is a benchmark run's result; marshalled, it is bench
// run's --json output.
type BenchRunResult struct {
	ResultVersion int               `json:"result_version"`
	Bench         string            `json:"bench"`
	Programs      int               `json:"programs"`
	Simulated     bool              `json:"simulated"`
	Evaluations   []*bench.MetaEval `json:"evaluations"`
	// Resamples are the bootstrap's, of whole problems.
	Resamples int `json:"resamples"`
	// Calls are the judge's model calls (none without a judge).
	Calls *llm.RunStats `json:"-"`
	// Report is the HTML report's content.
	Report *report.BenchReport `json:"-"`
	// The programs and, for each evaluation, its predicted scores (and
	// the judge's verdicts), for the run's log.
	progs    []*bench.Program
	preds    [][]float64
	verdicts map[string]judge.Verdict
}

// BenchRun meta-evaluates the metrics and the judge against the
// benchmark's known scores. Every program is judged in one stage: offline,
// all of their requests are left pending before it stops.
func BenchRun(ctx context.Context, env *Env, cfg BenchRunConfig) (*BenchRunResult, error) {
	progs, err := bench.ReadPrograms(cfg.File)
	if err != nil {
		return nil, err
	}
	boot := metrics.BootstrapOptions{Resamples: cfg.Resamples, Seed: cfg.Seed}
	out := &BenchRunResult{ResultVersion: ResultVersion, Bench: cfg.File, Programs: len(progs), Resamples: cfg.Resamples}
	for _, name := range cfg.Metrics {
		m, err := bench.MetricByName(name)
		if err != nil {
			return nil, deploy.FieldErrorf("metrics", "%v", err)
		}
		pred := make([]float64, len(progs))
		for i, p := range progs {
			if pred[i], err = m.Score(p); err != nil {
				return nil, fmt.Errorf("metric %s on %s: %w", name, p.ID, err)
			}
		}
		out.Evaluations = append(out.Evaluations, bench.MetaEvaluate(name, progs, pred, boot))
		out.preds = append(out.preds, pred)
	}
	if cfg.Judge != nil {
		s := cfg.Judge
		if s.Kind == judge.Pairwise {
			return nil, deploy.FieldErrorf("judge", "%s: a pairwise judge compares two programs; a benchmark run scores one at a time", s.Name)
		}
		prog := env.progress("bench run: programs judged", len(progs))
		res, err := bench.JudgePrograms(ctx, env.Client, s, cfg.Model, progs, bench.JudgeOptions{Concurrency: cfg.Concurrency, Progress: func(d, _ int) { prog.Update(d) }})
		prog.Done()
		if err != nil {
			return nil, err
		}
		if res.Pending > 0 {
			return nil, &llm.PendingError{N: res.Pending}
		}
		if len(res.Failed) > 0 {
			return nil, fmt.Errorf("%d of %d programs could not be judged: %w", len(res.Failed), len(progs), errors.Join(res.Failed...))
		}
		out.Evaluations = append(out.Evaluations, bench.MetaEvaluate(s.Name+" with "+cfg.Model, progs, res.Pred, boot))
		out.preds, out.verdicts = append(out.preds, res.Pred), res.Verdicts
		out.Simulated = cfg.Simulated
		calls := env.stats()
		out.Calls = &calls
	}
	out.progs = progs
	out.Report = &report.BenchReport{Title: "Benchmark: " + cfg.File, Simulated: out.Simulated, Source: cfg.File, Programs: len(progs),
		Resamples: cfg.Resamples, Evals: out.Evaluations}
	if out.Simulated {
		out.Report.Title = "[simulated] " + out.Report.Title
	}
	return out, nil
}
