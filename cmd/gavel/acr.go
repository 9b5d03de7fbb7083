package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gavelhq/gavel/acr"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/queue"
	"github.com/gavelhq/gavel/report"
	"github.com/gavelhq/gavel/run"
	"github.com/gavelhq/gavel/store"
)

// acrFlags are the flags of a round and of the judge check.
type acrFlags struct {
	mf                   modelFlags
	cfg                  run.ACRConfig
	instructions, format string
	limit                int
	systemFile           string
	noSystem             bool
	noExecCache          bool
}

func (f *acrFlags) register(a *app, cmd *cobra.Command, use modelUse) {
	use.modelUsage = "the model of every role not given its own (--generator, --judge-model, --critic-model)"
	a.withModel(cmd, &f.mf, use)
	fl := cmd.Flags()
	fl.StringVar(&f.instructions, "instructions", "", "instructions file (JSONL: id, instruction, reference, optional language and tests)")
	fl.StringVar(&f.format, "format", "native", "format of --instructions: native, humaneval (HumanEval Python) or humaneval-x-go")
	fl.IntVar(&f.limit, "limit", 0, "only the first N instructions")
	fl.StringVar(&f.cfg.Generator, "generator", "", "the model that samples answers (default --model)")
	fl.StringVar(&f.cfg.JudgeModel, "judge-model", "", "the model of the pointwise and pairwise judges (default --model)")
	fl.StringVar(&f.cfg.CriticModel, "critic-model", "", "the model that writes critiques (default --model)")
	fl.StringVar(&f.cfg.GeneratorURL, "generator-base-url", "", "base URL of the generator's server, e.g. a local vLLM serving the model in training (default --base-url)")
	fl.StringVar(&f.cfg.JudgeURL, "judge-base-url", "", "base URL of the judge model's server (default --base-url)")
	fl.StringVar(&f.cfg.CriticURL, "critic-base-url", "", "base URL of the critic model's server (default --base-url)")
	fl.IntVar(&f.cfg.N, "n", 7, "answers sampled per instruction")
	fl.Float64Var(&f.cfg.Temperature, "temperature", 0.8, "the generator's sampling temperature")
	fl.IntVar(&f.cfg.MaxTokens, "max-tokens", 2048, "the generator's answer length limit in tokens")
	fl.StringVar(&f.cfg.Pointwise, "pointwise", "pointwise5", "the pointwise judge (built-in or YAML) whose criteria make the composite score")
	fl.StringVar(&f.cfg.Pairwise, "pairwise", "pairwise", "the pairwise judge (built-in or YAML) that compares the best sample with the reference")
	fl.StringVar(&f.cfg.Weights, "weights", "", "criteria weights in the composite, e.g. correctness=2,readability=0.5 (default: equal)")
	fl.Float64Var(&f.cfg.ExecWeight, "exec-weight", 0.5, "weight of the executor's result in the composite (0..1; 0.5 ranks every working answer above every broken one)")
	fl.StringVar(&f.cfg.Ties, "ties", "sample", "who wins when neither executor nor judge separates the two: sample (it is as good as anyone can tell) or reference")
	fl.StringVar(&f.systemFile, "system-file", "", "the generator's system prompt, from a file (default: gavel's)")
	fl.BoolVar(&f.noSystem, "no-system", false, "send the generator no system prompt")
	fl.IntVar(&f.cfg.Jobs, "jobs", 2, "programs run at once in the sandbox")
	fl.DurationVar(&f.cfg.ProgramTimeout, "program-timeout", 10*time.Second, "wall-clock limit of one program's run")
	fl.BoolVar(&f.noExecCache, "no-exec-cache", false, "run every program again instead of reusing stored results")
	fl.IntVar(&f.cfg.Round, "round", 1, "the round's number, recorded in the lineage (round 2 uses the model trained on round 1's data)")
}

func (f *acrFlags) models() {
	for _, p := range []*string{&f.cfg.Generator, &f.cfg.JudgeModel, &f.cfg.CriticModel} {
		if *p == "" {
			*p = f.mf.model
		}
	}
}

func (f *acrFlags) simulated() bool {
	return isSim(f.cfg.Generator) || isSim(f.cfg.JudgeModel) || isSim(f.cfg.CriticModel)
}

// loadInstructions reads instructions (run.LoadInstructions), naming
// the problems set aside on stderr.
func (a *app) loadInstructions(file, format string, limit int) ([]*acr.Instruction, error) {
	return run.LoadInstructions(file, format, limit, func(line string) { fmt.Fprintln(a.stderr, line) })
}

// acrSetup is what a round or a check needs: the round's machinery and
// the open store.
type acrSetup struct {
	*run.ACR
	db store.Store
}

func (s *acrSetup) close() {
	s.ACR.Close()
	s.db.Close()
}

func (a *app) acrSetup(ctx context.Context, f *acrFlags, progress func(stage string, done, total int)) (*acrSetup, error) {
	f.models()
	ins, err := a.loadInstructions(f.instructions, f.format, f.limit)
	if err != nil {
		return nil, err
	}
	system, err := acr.System(f.noSystem, f.systemFile)
	if err != nil {
		return nil, err
	}
	db, err := a.openStore(ctx)
	if err != nil {
		return nil, err
	}
	cfg := f.cfg
	cfg.System, cfg.Concurrency, cfg.DryRun, cfg.Progress = system, f.mf.opts.Concurrency, f.mf.dryRun, progress
	for _, u := range []*string{&cfg.GeneratorURL, &cfg.JudgeURL, &cfg.CriticURL} {
		if *u == "" {
			*u = f.mf.baseURL
		}
	}
	if !f.noExecCache {
		cfg.Executions = db.Executions()
	}
	m, err := run.PrepareACR(cfg, modelRouter(db, registry(), f.mf), ins)
	if err != nil {
		db.Close()
		return nil, err
	}
	a.log.store, a.log.calls, a.log.models = db, m.Client.Stats, m.Client.URLs()
	return &acrSetup{ACR: m, db: db}, nil
}

type acrRoundFlags struct {
	f          acrFlags
	out        string
	lineage    string
	reportFile string
	next       string
}

func (a *app) acrCmd() *cobra.Command {
	var o acrRoundFlags
	cmd := &cobra.Command{
		Use:   "acr --instructions FILE --generator M --judge-model M2 --critic-model M3 --n 7 -o ROUND.jsonl",
		Short: "Build SFT data with judges (RefineCoder's Adaptive Critique Refinement): one round",
		Args:  args(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return a.acrRound(cmd, &o) },
	}
	o.f.register(a, cmd, modelUse{queue: queueOwn,
		queueUsage: "spread the instructions over 'gavel worker' processes through the store's work queue (PostgreSQL), one unit per instruction (its samples, runs, scores, comparison and critique); this command works units too"})
	fl := cmd.Flags()
	fl.StringVarP(&o.out, "output", "o", "", "the dataset to write (chat JSONL)")
	fl.StringVar(&o.lineage, "lineage", "", "the lineage file to write (default: the output's name with .lineage.jsonl)")
	fl.StringVar(&o.reportFile, "report", "", "write an HTML report of the round")
	fl.StringVar(&o.next, "next-instructions", "", "also write the next round's instructions: each reference replaced by the sample where the sample won")
	cmd.AddCommand(a.acrInstructionsCmd(), a.acrCheckCmd(), a.acrReportCmd())
	return cmd
}

func (a *app) acrRound(cmd *cobra.Command, o *acrRoundFlags) error {
	if o.out == "" {
		return usagef("acr needs -o ROUND.jsonl")
	}
	if o.lineage == "" {
		o.lineage = strings.TrimSuffix(o.out, ".jsonl") + ".lineage.jsonl"
	}
	update, done := a.stageProgress("acr")
	s, err := a.acrSetup(cmd.Context(), &o.f, update)
	if err != nil {
		return err
	}
	defer s.close()
	start := time.Now()
	if o.f.mf.dryRun {
		return a.dryRun(cmd.Context(), &o.f.mf, s.db, func(p *llm.Plan, c llm.Cache) error {
			return s.Round.Plan(cmd.Context(), p, c)
		})
	}
	if o.f.mf.queue {
		if err := a.acrThroughQueue(cmd.Context(), s, &o.f); err != nil {
			return err
		}
	}
	err = s.Round.Run(cmd.Context())
	done()
	if err != nil {
		return run.Stopped(err, s.Client.Stats().Pending)
	}
	simulated := o.f.simulated()
	stats, err := run.WriteRound(s.Round, run.ACRFiles{Output: o.out, Lineage: o.lineage, Next: o.next}, simulated, a.writeFile)
	if err != nil {
		return err
	}
	if err := a.writeACRReport(o.reportFile, &report.ACRReport{Title: "ACR round " + fmt.Sprint(o.f.cfg.Round), Simulated: simulated,
		Sources: []string{o.f.instructions}, Rounds: []*acr.RoundStats{stats}}); err != nil {
		return err
	}
	calls := s.Client.Stats()
	run.WriteCalls(a.stderr, calls)
	return a.output(&run.ACRRoundResult{ResultVersion: run.ResultVersion, Round: o.f.cfg.Round, Output: o.out, Lineage: o.lineage,
		Simulated: simulated, Stats: stats, Calls: calls, Seconds: time.Since(start).Seconds()})
}

// acrThroughQueue enqueues one unit per instruction, works units itself
// beside any workers, and waits until all have ended: the round's own pass
// then finds every answer and every run in the store's caches.
func (a *app) acrThroughQueue(ctx context.Context, s *acrSetup, f *acrFlags) error {
	if err := f.mf.checkQueue(); err != nil {
		return err
	}
	if f.noExecCache {
		return usagef("--queue works through the execution cache: leave out --no-exec-cache")
	}
	pw, err := queue.LoadJudgeSource(f.cfg.Pointwise)
	if err != nil {
		return usageError{err}
	}
	pp, err := queue.LoadJudgeSource(f.cfg.Pairwise)
	if err != nil {
		return usageError{err}
	}
	var ins []*acr.Instruction
	for _, it := range s.Round.Items {
		ins = append(ins, it.Instruction)
	}
	units := queue.ACRUnits(s.Round.Config(), ins, pw, pp, s.Client.URLs(), f.cfg.ProgramTimeout)
	return a.runUnits(ctx, s.db, max(1, f.cfg.Jobs), f.mf, "acr: instructions done (queue)", func(c *queue.Client) ([]int64, error) {
		return queue.EnqueueACR(ctx, c, units)
	})
}

func (a *app) acrInstructionsCmd() *cobra.Command {
	var file, format, out string
	var limit int
	cmd := &cobra.Command{
		Use:   "instructions --from FILE --format humaneval|humaneval-x-go -o INSTRUCTIONS.jsonl",
		Short: "Write an instructions file from HumanEval Python or HumanEval-X Go problems",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" || format == "native" {
				return usagef("acr instructions needs --from FILE, --format humaneval|humaneval-x-go and -o FILE")
			}
			ins, err := a.loadInstructions(file, format, limit)
			if err != nil {
				return err
			}
			if err := a.writeFile(out, func(w io.Writer) error { return acr.WriteInstructions(w, ins) }); err != nil {
				return err
			}
			return a.output(&run.ACRInstructionsResult{ResultVersion: run.ResultVersion, Instructions: len(ins), Output: out})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&file, "from", "", "problems file (HumanEval or HumanEval-X Go JSONL, gzipped or not)")
	fl.StringVar(&format, "format", "humaneval", "humaneval (Python) or humaneval-x-go")
	fl.IntVar(&limit, "limit", 0, "only the first N problems")
	fl.StringVarP(&out, "output", "o", "", "instructions file to write")
	return cmd
}

type acrCheckFlags struct {
	f           acrFlags
	best        bool
	failOnFlags bool
	opt         acr.CheckOptions
	reportFile  string
}

func (a *app) acrCheckCmd() *cobra.Command {
	var o acrCheckFlags
	cmd := &cobra.Command{
		Use:   "check --instructions FILE --generator M --judge-model M2 --n 7",
		Short: "Check the pairwise judge against the tests: agreement and self-preference",
		Args:  args(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return a.acrCheck(cmd, &o) },
	}
	o.f.register(a, cmd, modelUse{})
	fl := cmd.Flags()
	fl.BoolVar(&o.best, "best", false, "compare only each instruction's best sample (needs the pointwise scores)")
	fl.BoolVar(&o.failOnFlags, "fail-on-flags", false, "a CI gate: exit 1 when the check raises any flag")
	fl.Float64Var(&o.opt.MinAgreement, "min-agreement", 0.85, "flag agreement with the tests under this")
	fl.Float64Var(&o.opt.MaxSelfPreference, "max-self-preference", 0.55, "flag self-preference over this")
	bootVar(fl, &o.opt.Bootstrap.Resamples, &o.opt.Bootstrap.Seed, 2000)
	fl.StringVar(&o.reportFile, "report", "", "write an HTML report")
	return cmd
}

func (a *app) acrCheck(cmd *cobra.Command, o *acrCheckFlags) error {
	update, done := a.stageProgress("acr")
	o.f.cfg.NoCritic = true
	s, err := a.acrSetup(cmd.Context(), &o.f, update)
	if err != nil {
		return err
	}
	defer s.close()
	o.opt.AllSamples = !o.best
	res, err := s.Round.Check(cmd.Context(), o.opt)
	done()
	if err != nil {
		return run.Stopped(err, s.Client.Stats().Pending)
	}
	simulated := o.f.simulated()
	if err := a.writeACRReport(o.reportFile, &report.ACRReport{Title: "ACR judge check: " + o.f.cfg.JudgeModel, Simulated: simulated,
		Sources: []string{o.f.instructions}, Check: res}); err != nil {
		return err
	}
	calls := s.Client.Stats()
	run.WriteCalls(a.stderr, calls)
	if err := a.output(&run.ACRCheckResult{ResultVersion: run.ResultVersion, JudgeModel: o.f.cfg.JudgeModel, Pairwise: o.f.cfg.Pairwise,
		Simulated: simulated, Check: res, Calls: calls}); err != nil {
		return err
	}
	if o.failOnFlags && len(res.Flags) > 0 {
		return gateError{fmt.Errorf("gate failed: the judge check raised %d flag(s): %s", len(res.Flags), strings.Join(res.Flags, "; "))}
	}
	return nil
}

// writeACRReport writes an ACR page to file (nothing when file is ""),
// its title marked when the models were simulated.
func (a *app) writeACRReport(file string, rep *report.ACRReport) error {
	if file == "" {
		return nil
	}
	if rep.Simulated {
		rep.Title = "[simulated] " + rep.Title
	}
	if err := a.writeFile(file, func(w io.Writer) error { return report.WriteACR(w, rep) }); err != nil {
		return err
	}
	a.reportWritten(file)
	return nil
}

func (a *app) acrReportCmd() *cobra.Command {
	var lineages []string
	var out string
	cmd := &cobra.Command{
		Use:   "report --lineage ROUND1.lineage.jsonl [--lineage ROUND2.lineage.jsonl ...] -o REPORT.html",
		Short: "Report the statistics of one or more rounds from their lineage files",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(lineages) == 0 || out == "" {
				return usagef("acr report needs --lineage FILE (one or more) and -o REPORT.html")
			}
			var lines []acr.Lineage
			for _, file := range lineages {
				fh, err := os.Open(file)
				if err != nil {
					return err
				}
				ls, err := acr.ReadLineage(fh, file)
				fh.Close()
				if err != nil {
					return err
				}
				lines = append(lines, ls...)
			}
			stats := acr.Stats(lines)
			simulated := false
			for _, st := range stats {
				simulated = simulated || st.Simulated
			}
			if err := a.writeACRReport(out, &report.ACRReport{Title: "ACR rounds", Simulated: simulated, Sources: lineages, Rounds: stats}); err != nil {
				return err
			}
			return a.output(&run.ACRReportResult{ResultVersion: run.ResultVersion, Rounds: stats, Report: out})
		},
	}
	cmd.Flags().StringArrayVar(&lineages, "lineage", nil, "a round's lineage file (repeat for several rounds)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "the HTML report to write")
	return cmd
}
