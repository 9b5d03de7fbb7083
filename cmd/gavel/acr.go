package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gavelhq/gavel/acr"
	bexec "github.com/gavelhq/gavel/bench/exec"
	"github.com/gavelhq/gavel/bench/problems"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/queue"
	"github.com/gavelhq/gavel/report"
	"github.com/gavelhq/gavel/run"
	"github.com/gavelhq/gavel/store"
)

// acrFlags are the flags of a round and of the judge check.
type acrFlags struct {
	mf                                 modelFlags
	instructions, format               string
	limit                              int
	generator, judgeModel, criticModel string
	n                                  int
	temperature                        float64
	maxTokens                          int
	pointwise, pairwise                string
	weights                            string
	execWeight                         float64
	ties                               string
	systemFile                         string
	noSystem                           bool
	jobs                               int
	programTimeout                     time.Duration
	round                              int
	noExecCache                        bool
	generatorURL, judgeURL, criticURL  string
}

func (f *acrFlags) register(a *app, cmd *cobra.Command, use modelUse) {
	use.modelUsage = "the model of every role not given its own (--generator, --judge-model, --critic-model)"
	a.withModel(cmd, &f.mf, use)
	fl := cmd.Flags()
	fl.StringVar(&f.instructions, "instructions", "", "instructions file (JSONL: id, instruction, reference, optional language and tests)")
	fl.StringVar(&f.format, "format", "native", "format of --instructions: native, humaneval (HumanEval Python) or humaneval-x-go")
	fl.IntVar(&f.limit, "limit", 0, "only the first N instructions")
	fl.StringVar(&f.generator, "generator", "", "the model that samples answers (default --model)")
	fl.StringVar(&f.judgeModel, "judge-model", "", "the model of the pointwise and pairwise judges (default --model)")
	fl.StringVar(&f.criticModel, "critic-model", "", "the model that writes critiques (default --model)")
	fl.StringVar(&f.generatorURL, "generator-base-url", "", "base URL of the generator's server, e.g. a local vLLM serving the model in training (default --base-url)")
	fl.StringVar(&f.judgeURL, "judge-base-url", "", "base URL of the judge model's server (default --base-url)")
	fl.StringVar(&f.criticURL, "critic-base-url", "", "base URL of the critic model's server (default --base-url)")
	fl.IntVar(&f.n, "n", 7, "answers sampled per instruction")
	fl.Float64Var(&f.temperature, "temperature", 0.8, "the generator's sampling temperature")
	fl.IntVar(&f.maxTokens, "max-tokens", 2048, "the generator's answer length limit in tokens")
	fl.StringVar(&f.pointwise, "pointwise", "pointwise5", "the pointwise judge (built-in or YAML) whose criteria make the composite score")
	fl.StringVar(&f.pairwise, "pairwise", "pairwise", "the pairwise judge (built-in or YAML) that compares the best sample with the reference")
	fl.StringVar(&f.weights, "weights", "", "criteria weights in the composite, e.g. correctness=2,readability=0.5 (default: equal)")
	fl.Float64Var(&f.execWeight, "exec-weight", 0.5, "weight of the executor's result in the composite (0..1; 0.5 ranks every working answer above every broken one)")
	fl.StringVar(&f.ties, "ties", "sample", "who wins when neither executor nor judge separates the two: sample (it is as good as anyone can tell) or reference")
	fl.StringVar(&f.systemFile, "system-file", "", "the generator's system prompt, from a file (default: gavel's)")
	fl.BoolVar(&f.noSystem, "no-system", false, "send the generator no system prompt")
	fl.IntVar(&f.jobs, "jobs", 2, "programs run at once in the sandbox")
	fl.DurationVar(&f.programTimeout, "program-timeout", 10*time.Second, "wall-clock limit of one program's run")
	fl.BoolVar(&f.noExecCache, "no-exec-cache", false, "run every program again instead of reusing stored results")
	fl.IntVar(&f.round, "round", 1, "the round's number, recorded in the lineage (round 2 uses the model trained on round 1's data)")
}

func (f *acrFlags) models() {
	for _, p := range []*string{&f.generator, &f.judgeModel, &f.criticModel} {
		if *p == "" {
			*p = f.mf.model
		}
	}
}

func (f *acrFlags) simulated() bool {
	return isSim(f.generator) || isSim(f.judgeModel) || isSim(f.criticModel)
}

// loadInstructions reads instructions in one of the formats; problems set
// aside as errata are named on stderr.
func (a *app) loadInstructions(file, format string, limit int) ([]*acr.Instruction, error) {
	if file == "" {
		return nil, usagef("--instructions FILE is needed")
	}
	ins, aside, err := acr.LoadInstructions(file, format, limit)
	var le *problems.LanguageError
	switch {
	case errors.Is(err, acr.ErrFormat):
		return nil, usagef("--format: %v", err)
	case errors.As(err, &le):
		return nil, usagef("--format: %v", err)
	case err != nil:
		return nil, err
	}
	for _, p := range aside {
		fmt.Fprintf(a.stderr, "%s set aside: %s\n", p.ID, p.Erratum)
	}
	return ins, nil
}

// acrSetup is what a round or a check needs.
type acrSetup struct {
	// urls are the models' servers, where given.
	urls   map[string]string
	db     store.Store
	client *llm.Router
	box    *acr.Sandbox
	round  *acr.Round
	sys    string
}

func (s *acrSetup) close() {
	if s.box != nil {
		s.box.Close()
	}
	if s.db != nil {
		s.db.Close()
	}
}

func (a *app) acrSetup(ctx context.Context, f *acrFlags, prog *stageProgress) (*acrSetup, error) {
	f.models()
	if f.n < 1 || f.jobs < 1 || f.round < 1 {
		return nil, usagef("--n, --jobs and --round must be at least 1")
	}
	ins, err := a.loadInstructions(f.instructions, f.format, f.limit)
	if err != nil {
		return nil, err
	}
	pw, err := judge.Load(f.pointwise)
	if err != nil {
		return nil, usageError{err}
	}
	pp, err := judge.Load(f.pairwise)
	if err != nil {
		return nil, usageError{err}
	}
	weights, err := acr.ParseWeights(f.weights, pw)
	if err != nil {
		return nil, usagef("--weights: %v", err)
	}
	ties, err := acr.ParseTies(f.ties)
	if err != nil {
		return nil, usagef("--ties: %v", err)
	}
	system, err := f.system()
	if err != nil {
		return nil, err
	}
	for _, m := range []struct{ model, flag string }{{f.generator, "--generator"}, {f.judgeModel, "--judge-model"}, {f.criticModel, "--critic-model"}} {
		if strings.TrimSpace(m.model) == "" {
			return nil, usagef("%s (or --model, or GAVEL_MODEL) is required: PROVIDER:NAME such as openai:gpt-4o, or sim for the simulated world", m.flag)
		}
		if _, _, err := llm.ParseModel(m.model); err != nil {
			return nil, usageError{err}
		}
	}
	reg := registry()
	db, err := a.openStore(ctx)
	if err != nil {
		return nil, err
	}
	lim := bexec.Limits{Wall: f.programTimeout}
	s := &acrSetup{db: db, box: &acr.Sandbox{Limits: lim}}
	// Each role's model at its server's base URL: the generator is often
	// a local server (the model in training), the judge and the critic
	// hosted models of the same provider kind.
	s.client = modelRouter(db, reg, f.mf)
	for _, r := range []struct{ model, url string }{{f.generator, f.generatorURL}, {f.judgeModel, f.judgeURL}, {f.criticModel, f.criticURL}} {
		if r.url == "" {
			r.url = f.mf.baseURL
		}
		if err := s.client.Route(r.model, r.url); err != nil {
			s.close()
			return nil, usageError{err}
		}
		if f.mf.dryRun {
			continue // nothing is sent
		}
		if _, err := s.client.Client(r.model, r.url); err != nil {
			s.close()
			return nil, err
		}
	}
	s.urls = s.client.URLs()
	cfg := acr.Config{Round: f.round, Generator: f.generator, JudgeModel: f.judgeModel, CriticModel: f.criticModel, System: system,
		N: f.n, Temperature: f.temperature, MaxTokens: f.maxTokens, Pointwise: pw, Pairwise: pp, Weights: weights,
		ExecWeight: f.execWeight, Ties: ties, Concurrency: f.mf.concurrency, Executions: f.jobs, Progress: prog.update}
	var ex acr.Executor = s.box
	if !f.noExecCache {
		ex = &acr.Cached{Exec: s.box, Cache: db.Executions(), Limits: lim}
	}
	if s.round, err = acr.NewRound(cfg, s.client, ex, ins); err != nil {
		s.close()
		return nil, usageError{err}
	}
	return s, nil
}

// stageProgress shows each stage's progress on stderr.
type stageProgress struct {
	a     *app
	stage string
	p     *progress
}

func (sp *stageProgress) update(stage string, done, total int) {
	if sp.stage != stage {
		if sp.p != nil {
			sp.p.done()
		}
		sp.stage, sp.p = stage, sp.a.newProgress("acr "+stage, total)
	}
	sp.p.update(done)
}

func (sp *stageProgress) done() {
	if sp.p != nil {
		sp.p.done()
	}
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
		Long: `One round of Adaptive Critique Refinement. For each instruction the generator
samples --n answers (sample indexes 1..n, so the cache keeps them apart). The code
in each answer runs in the sandbox (with the instruction's tests, else a build or
load check), and the pointwise judge grades each answer on its criteria.

The composite score of an answer is
    composite = e * x + (1 - e) * judged
where x is 1 when the code passes its tests (without tests: builds and loads)
and 0 otherwise, judged is the weighted mean of the criteria scores, each
normalised from the judge's scale to 0..1 (--weights; an invalid judge answer
counts 0), and e is --exec-weight (0.5: every working answer ranks at or above
every broken one). The best answer is the highest composite; ties go to the
earlier sample. Without a language nothing runs and the composite is judged.

The best answer meets the reference: the executor decides when exactly one of
the two works. Otherwise the pairwise judge, run with the sample as answer A and
again as answer B, decides: both orders agreeing, or one order and a tie, pick
that side; opposite picks (position bias) are a tie; an invalid answer leaves
the other order to decide. A tie goes to --ties (default sample: an answer as
good as the reference, as far as the executor and the judge can tell, needs no
critique).

The sample winning makes a single-turn record (instruction -> sample); the
reference winning makes the critic explain why the sample falls short, and a
two-turn record (instruction -> sample -> critique -> reference), the sample's
turn with weight 0 so trainers that read OpenAI's fine-tuning format leave it out
of the loss. Records go to -o as chat JSONL ("messages" with roles); one lineage
line per instruction goes to --lineage (round, id, branch, scores, executor
results, judge answers, models and versions, prompt versions).

Every model call goes through the cache, and every program's result through the
execution cache: a rerun makes no call and runs nothing, a killed run resumes,
and --offline stops at a stage boundary for 'gavel batch'. Each role's model has
its own service (--generator-base-url etc.); --max-cost applies to each.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return a.acrRound(cmd, &o) },
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
	prog := &stageProgress{a: a}
	s, err := a.acrSetup(cmd.Context(), &o.f, prog)
	if err != nil {
		return err
	}
	defer s.close()
	start := time.Now()
	if o.f.mf.dryRun {
		if o.f.mf.queue || o.f.mf.batch {
			return usagef("--dry-run sends nothing: leave out --queue and --batch")
		}
		return a.dryRun(cmd.Context(), &o.f.mf, s.db, func(p *llm.Plan, c llm.Cache) error {
			return s.round.Plan(cmd.Context(), p, c)
		})
	}
	if o.f.mf.queue {
		if err := a.acrThroughQueue(cmd.Context(), s, &o.f); err != nil {
			return err
		}
	}
	err = s.round.Run(cmd.Context())
	prog.done()
	if err != nil {
		return stopped(err, s.client.Stats().Pending)
	}
	simulated := o.f.simulated()
	if err := writeAtomic(o.out, a.stdout, func(w io.Writer) error {
		return s.round.Write(w, io.Discard, simulated)
	}); err != nil {
		return err
	}
	var lines []acr.Lineage
	for _, it := range s.round.Items {
		lines = append(lines, s.round.Lineage(it, simulated))
	}
	if err := writeAtomic(o.lineage, a.stdout, func(w io.Writer) error {
		return s.round.Write(io.Discard, w, simulated)
	}); err != nil {
		return err
	}
	if o.next != "" {
		if err := writeAtomic(o.next, a.stdout, func(w io.Writer) error {
			return acr.WriteInstructions(w, s.round.NextInstructions())
		}); err != nil {
			return err
		}
	}
	stats := acr.Stats(lines)[0]
	if err := a.writeACRReport(o.reportFile, &report.ACRReport{Title: "ACR round " + fmt.Sprint(o.f.round), Simulated: simulated,
		Sources: []string{o.f.instructions}, Rounds: []*acr.RoundStats{stats}}); err != nil {
		return err
	}
	calls := s.client.Stats()
	a.printCalls(calls)
	return a.output(&run.ACRRoundResult{ResultVersion: run.ResultVersion, Round: o.f.round, Output: o.out, Lineage: o.lineage,
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
	pw, err := queue.LoadJudgeSource(f.pointwise)
	if err != nil {
		return usageError{err}
	}
	pp, err := queue.LoadJudgeSource(f.pairwise)
	if err != nil {
		return usageError{err}
	}
	r, stop, err := startQueue(ctx, s.db, max(1, f.jobs), f.mf, f.mf.q)
	if err != nil {
		return err
	}
	defer stop()
	var ins []*acr.Instruction
	for _, it := range s.round.Items {
		ins = append(ins, it.Instruction)
	}
	ids, err := queue.EnqueueACR(ctx, r.Client, queue.ACRUnits(s.round.Config(), ins, pw, pp, s.urls, f.programTimeout))
	if err != nil {
		return err
	}
	prog := a.newProgress("acr: instructions done (queue)", len(ids))
	err = r.Wait(ctx, ids, func(done, _ int) { prog.update(done) })
	prog.done()
	return err
}

func (a *app) acrInstructionsCmd() *cobra.Command {
	var file, format, out string
	var limit int
	cmd := &cobra.Command{
		Use:   "instructions --from FILE --format humaneval|humaneval-x-go -o INSTRUCTIONS.jsonl",
		Short: "Write an instructions file from HumanEval Python or HumanEval-X Go problems",
		Long: `Turn problems with canonical solutions and tests into ACR instructions: the
instruction asks for the function the problem declares, the reference answer is
the canonical solution (complete, in a fenced block), and the tests are the
problem's (Python: the check script; Go: the testify test file).`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" || format == "native" {
				return usagef("acr instructions needs --from FILE, --format humaneval|humaneval-x-go and -o FILE")
			}
			ins, err := a.loadInstructions(file, format, limit)
			if err != nil {
				return err
			}
			if err := writeAtomic(out, a.stdout, func(w io.Writer) error { return acr.WriteInstructions(w, ins) }); err != nil {
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
		Long: `Where tests exist and separate an answer from the reference (one passes, the
other does not), compare the pairwise judge's winner (both orders combined, as
in a round) with the test winner. Reports the agreement rate with a bootstrap
interval over instructions, and the share of disagreements in which the judge
preferred the generated answer (self-preference). Flags agreement under
--min-agreement (85%) and self-preference over --max-self-preference (55%).

Samples and executions are those of the round with the same settings (from the
cache). By default every sample the tests separate is compared; --best compares
only each instruction's best sample, as the round does.

Exit code 0 whether or not the judge is flagged (read "flags" in --json), unless
--fail-on-flags makes a flag fail the command (exit 1), as a CI gate.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return a.acrCheck(cmd, &o) },
	}
	o.f.register(a, cmd, modelUse{})
	fl := cmd.Flags()
	fl.BoolVar(&o.best, "best", false, "compare only each instruction's best sample (needs the pointwise scores)")
	fl.BoolVar(&o.failOnFlags, "fail-on-flags", false, "a CI gate: exit 1 when the check raises any flag")
	fl.Float64Var(&o.opt.MinAgreement, "min-agreement", 0.85, "flag agreement with the tests under this")
	fl.Float64Var(&o.opt.MaxSelfPreference, "max-self-preference", 0.55, "flag self-preference over this")
	fl.IntVar(&o.opt.Bootstrap.Resamples, "resamples", 2000, "bootstrap resamples")
	fl.Uint64Var(&o.opt.Bootstrap.Seed, "seed", 1, "bootstrap seed")
	fl.StringVar(&o.reportFile, "report", "", "write an HTML report")
	return cmd
}

func (a *app) acrCheck(cmd *cobra.Command, o *acrCheckFlags) error {
	prog := &stageProgress{a: a}
	s, err := a.acrSetup(cmd.Context(), &o.f, prog)
	if err != nil {
		return err
	}
	defer s.close()
	o.opt.AllSamples = !o.best
	res, err := s.round.Check(cmd.Context(), o.opt)
	prog.done()
	if err != nil {
		return stopped(err, s.client.Stats().Pending)
	}
	simulated := o.f.simulated()
	if err := a.writeACRReport(o.reportFile, &report.ACRReport{Title: "ACR judge check: " + o.f.judgeModel, Simulated: simulated,
		Sources: []string{o.f.instructions}, Check: res}); err != nil {
		return err
	}
	calls := s.client.Stats()
	a.printCalls(calls)
	if err := a.output(&run.ACRCheckResult{ResultVersion: run.ResultVersion, JudgeModel: o.f.judgeModel, Pairwise: o.f.pairwise,
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
	if err := writeAtomic(file, a.stdout, func(w io.Writer) error { return report.WriteACR(w, rep) }); err != nil {
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

// system is the generator's system message: the built-in one, none, or a
// file's.
func (f *acrFlags) system() (string, error) {
	system := acr.GeneratorSystem()
	switch {
	case f.noSystem && f.systemFile != "":
		return "", usagef("--system-file and --no-system exclude each other")
	case f.noSystem:
		system = ""
	case f.systemFile != "":
		b, err := os.ReadFile(f.systemFile)
		if err != nil {
			return "", err
		}
		system = string(b)
	}
	return system, nil
}
