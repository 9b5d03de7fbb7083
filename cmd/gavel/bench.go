package main

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/gavelhq/gavel/bench"
	bexec "github.com/gavelhq/gavel/bench/exec"
	"github.com/gavelhq/gavel/bench/perturb"
	"github.com/gavelhq/gavel/bench/problems"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/queue"
	"github.com/gavelhq/gavel/report"
	"github.com/gavelhq/gavel/run"
	"github.com/gavelhq/gavel/store"
)

func (a *app) benchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Judge benchmarks by rule-guided perturbation (AXIOM): build one, run judges on it",
		Args:  args(cobra.NoArgs),
	}
	cmd.AddCommand(a.benchBuildCmd(), a.benchRunCmd())
	return cmd
}

// loadProblems reads a problems file; a wrong --lang is a usage error
// that names the right one.
func loadProblems(file, lang string) ([]*problems.Problem, error) {
	ps, err := problems.LoadFile(file, lang)
	var le *problems.LanguageError
	if errors.As(err, &le) {
		if le.Holds == "" {
			return nil, usagef("--lang: want go or python")
		}
		return nil, usagef("%v: give --lang %s", err, le.Holds)
	}
	return ps, err
}

type benchBuildFlags struct {
	file    string
	lang    string
	out     string
	opt     bench.BuildOptions
	mf      modelFlags
	limit   int
	timeout time.Duration
	noCache bool
}

func (a *app) benchBuildCmd() *cobra.Command {
	var f benchBuildFlags
	cmd := &cobra.Command{
		Use:   "build --problems FILE --lang go|python --per-score K --seed S -o BENCH.jsonl",
		Short: "Build a balanced benchmark of programs of known score (0..5), each checked by running it",
		Args:  args(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return a.benchBuild(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.file, "problems", "", "problems file (HumanEval-X Go or HumanEval JSONL, gzipped or not)")
	fl.StringVar(&f.lang, "lang", "go", "go or python")
	fl.IntVar(&f.opt.PerScore, "per-score", 1, "programs per problem and score")
	fl.IntVar(&f.opt.Candidates, "candidates", 0, "candidates tried per problem and score (default 3 x --per-score)")
	fl.Uint64Var(&f.opt.Seed, "seed", 1, "seed of the rule choices")
	fl.IntVar(&f.limit, "limit", 0, "only the first N problems")
	fl.IntVar(&f.opt.Concurrency, "jobs", 2, "programs checked at once")
	fl.DurationVar(&f.timeout, "program-timeout", 10*time.Second, "wall-clock limit of one program's tests")
	fl.StringVarP(&f.out, "output", "o", "", "benchmark file to write (JSONL)")
	fl.BoolVar(&f.noCache, "no-exec-cache", false, "run every candidate again instead of reusing the results kept in the store")
	a.withModel(cmd, &f.mf, modelUse{queue: queueOwn, optional: true,
		queueUsage: "spread the problems over 'gavel worker' processes through the store's work queue (PostgreSQL); this command works units too",
		modelUsage: "also compose model-applied rules, applied by this model (default: syntax rules only)"})
	return cmd
}

func (a *app) benchBuild(cmd *cobra.Command, f *benchBuildFlags) error {
	if f.file == "" || f.out == "" {
		return usagef("bench build needs --problems FILE and -o BENCH.jsonl")
	}
	ps, err := loadProblems(f.file, f.lang)
	if err != nil {
		return err
	}
	if f.limit > 0 && f.limit < len(ps) {
		ps = ps[:f.limit]
	}
	f.opt.Lang, f.opt.Source, f.opt.Tool = f.lang, f.file, "gavel "+buildVersion().Version
	if f.mf.dryRun {
		// Nothing is run and nothing is sent: only the model's
		// calls are planned (none without --model).
		db, err := a.openStore(cmd.Context())
		if err != nil {
			return err
		}
		defer db.Close()
		return a.dryRun(cmd.Context(), &f.mf, db, func(p *llm.Plan, _ llm.Cache) error {
			if f.mf.model == "" {
				return nil
			}
			return bench.PlanModelRules(ps, f.opt, f.mf.model, p)
		})
	}
	var mod *bexec.GoModule
	if f.lang == "go" {
		if mod, err = problems.NewGoModule(); err != nil {
			return err
		}
		defer mod.Close()
	}
	var db store.Store
	if !f.noCache || cmd.Flags().Changed("model") {
		if db, err = a.openStore(cmd.Context()); err != nil {
			return err
		}
		defer db.Close()
	}
	if !f.noCache {
		// Every candidate's result is kept: a build run again, or
		// resumed after a crash, runs nothing twice.
		f.opt.Cache = db.BenchResults()
	}
	if cmd.Flags().Changed("model") {
		// Model-applied rules join the catalogue, through the cache.
		svc, err := f.mf.service(db, registry())
		if err != nil {
			return err
		}
		f.opt.Extra = perturb.LLMRules(cmd.Context(), svc, f.mf.model, f.lang)
	}
	f.opt.Limits = bexec.Limits{Wall: f.timeout}
	if f.mf.queue {
		if f.noCache || len(f.opt.Extra) > 0 {
			return usagef("--queue works through the result cache with the syntax rules: leave out --no-exec-cache and --model")
		}
		if err := a.benchThroughQueue(cmd.Context(), db, f.file, ps, f.opt, f.mf); err != nil {
			return err
		}
	}
	prog := a.newProgress("bench build: candidates checked", 0)
	f.opt.Progress = func(done, _ int) { prog.Update(done) }
	res, err := run.BenchBuild(cmd.Context(), ps, mod, f.opt, f.out, func(fn func(io.Writer) error) error { return a.writeFile(f.out, fn) })
	prog.Done()
	if err != nil {
		return err
	}
	return a.output(res)
}

type benchRunFlags struct {
	mf         modelFlags
	cfg        run.BenchRunConfig
	judgeName  string
	reportFile string
}

func (a *app) benchRunCmd() *cobra.Command {
	var f benchRunFlags
	cmd := &cobra.Command{
		Use:   "run --bench BENCH.jsonl [--judge J --model M] [--metrics ...]",
		Short: "Score judges and metrics against a benchmark's known scores",
		Args:  args(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return a.benchRun(cmd, &f) },
	}
	a.withModel(cmd, &f.mf, modelUse{})
	fl := cmd.Flags()
	fl.StringVar(&f.cfg.File, "bench", "", "benchmark file from 'gavel bench build'")
	fl.StringVar(&f.judgeName, "judge", "", "a judge to meta-evaluate (built-in or YAML)")
	fl.StringSliceVar(&f.cfg.Metrics, "metrics", []string{"token_similarity", "ast_similarity", "compile_only"}, "built-in metrics to meta-evaluate")
	fl.StringVar(&f.reportFile, "report", "", "write an HTML report")
	bootVar(fl, &f.cfg.Resamples, &f.cfg.Seed, 2000)
	return cmd
}

func (a *app) benchRun(cmd *cobra.Command, f *benchRunFlags) error {
	if f.cfg.File == "" {
		return usagef("bench run needs --bench BENCH.jsonl")
	}
	cfg := f.cfg
	cfg.Model, cfg.Concurrency, cfg.Simulated = f.mf.model, f.mf.opts.Concurrency, isSim(f.mf.model)
	env := &run.Env{}
	if f.judgeName != "" {
		s, err := judge.Load(f.judgeName)
		if err != nil {
			return usageError{err}
		}
		cfg.Judge = s
		db, err := a.openStore(cmd.Context())
		if err != nil {
			return err
		}
		defer db.Close()
		svc, err := f.mf.service(db, registry())
		if err != nil {
			return err
		}
		env = a.env(db, svc)
	}
	res, err := run.BenchRun(cmd.Context(), env, cfg)
	if err != nil {
		return run.Stopped(err, 0)
	}
	if res.Calls != nil {
		run.WriteCalls(a.stderr, *res.Calls)
	}
	if f.reportFile != "" {
		if err := a.writeFile(f.reportFile, func(w io.Writer) error { return report.WriteBench(w, res.Report) }); err != nil {
			return err
		}
		a.reportWritten(f.reportFile)
	}
	return a.output(res)
}

// benchThroughQueue enqueues one unit per problem, works units itself
// beside any workers, and waits until all have ended: every candidate's
// result is then in the store's cache.
func (a *app) benchThroughQueue(ctx context.Context, db store.Store, file string, ps []*problems.Problem, opt bench.BuildOptions, mf modelFlags) error {
	return a.runUnits(ctx, db, max(1, opt.Concurrency), mf, "bench build: problems validated (queue)", func(c *queue.Client) ([]int64, error) {
		return queue.EnqueueBench(ctx, c, file, ps, opt)
	})
}
