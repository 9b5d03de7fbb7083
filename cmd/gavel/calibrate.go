package main

import (
	"cmp"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
	"github.com/gavelhq/gavel/run"
	"github.com/gavelhq/gavel/store"
	"github.com/gavelhq/gavel/teacher"
)

func (a *app) teachCmd() *cobra.Command {
	var f judgeFlags
	var teacherModel string
	cmd := &cobra.Command{
		Use:   "teach --judge J --split NAME:train --teacher-model M",
		Short: "Run the informed teacher: keep, abstain on or correct each recorded label",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			// Only the teacher is asked: --teacher-model alone will do.
			f.model, teacherModel = cmp.Or(f.model, teacherModel), cmp.Or(teacherModel, f.model)
			js, err := a.setupJudge(ctx, &f)
			if err != nil {
				return err
			}
			defer js.db.Close()
			s, db, rs, svc := js.spec, js.db, js.rs, js.svc
			if err := f.checkRecords(rs, teacherModel); err != nil {
				return err
			}
			cfg := run.TeachConfig{Judge: s, TeacherModel: teacherModel, Records: rs, Concurrency: f.opts.Concurrency,
				Simulated: isSim(teacherModel), Stage: "teacher on " + f.split}
			if f.dryRun {
				return a.dryRun(ctx, &f.modelFlags, db, func(p *llm.Plan, c llm.Cache) error { return run.PlanTeach(ctx, p, c, cfg) })
			}
			res, err := run.Teach(ctx, a.env(db, svc), db, cfg)
			if err != nil {
				return run.Stopped(err, svc.Stats().Pending)
			}
			run.WriteCalls(a.stderr, svc.Stats())
			return a.output(res)
		},
	}
	f.register(a, cmd)
	cmd.Flags().StringVar(&teacherModel, "teacher-model", "", "teacher model (default --model)")
	return cmd
}

type calibrateFlags struct {
	judgeFlags
	cfg                  run.CalibrateConfig
	teacherModel, quorum string
	reportFile, starts   string
}

func (a *app) calibrateCmd() *cobra.Command {
	var f calibrateFlags
	cmd := &cobra.Command{
		Use:   "calibrate --judge J --split NAME --model M",
		Short: "Recalibrate a judge's prompt from recorded outcomes (AutoRefine)",
		Args:  args(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return a.calibrate(cmd, &f) },
	}
	f.register(a, cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.teacherModel, "teacher-model", "", "teacher model (default --model); several, comma-separated (openai:A,anthropic:B), make a panel")
	fl.StringVar(&f.quorum, "teacher-quorum", "all", "with several teacher models: how many must agree to keep or correct a label: all, majority or a number")
	fl.StringVar(&f.starts, "start", "", "starting prompts to try before the loop, comma-separated (passfail,predict,spec.yaml): each judged on train and val side by side, the loop run from the best (replaces --judge)")
	fl.BoolVar(&f.cfg.StartEach, "start-each", false, "with --start, run the loop from every start and select across all their versions (by the paired val gain over the first start)")
	fl.BoolVar(&f.cfg.Refine.ValidateEdits, "validate-edits", false, "keep an edit (or balanced pair) only if, applied alone, it fixes at least as many verdicts as it breaks on 40 other kept training records (--dry-run counts these calls)")
	fl.IntVar(&f.cfg.Refine.Retest, "retest", 0, "ask the original prompt again about this many validation records (or all): the judge's own flip rate, beside each version's flips")
	fl.BoolVar(&f.cfg.Refine.LabelBlind, "label-blind", false, "first ask each teacher to predict each training outcome without seeing it, and report how often it keeps a label it would not have predicted (its rationalisation rate)")
	fl.StringVar(&f.cfg.Refine.EditorModel, "editor-model", "", "model that proposes and applies edits (default --model)")
	fl.IntVar(&f.cfg.Repeats, "repeats", 0, "run the calibration this many times (at least 2) with seeds 1..K, the editor sampling at temperature 0.7, and report the gain's spread, the edits' acceptance and the selection's stability")
	fl.BoolVar(&f.cfg.ResampleTrain, "resample-train", false, "with --repeats, each run calibrates on its own bootstrap resample of train's groups (the distinct records drawn)")
	fl.IntVar(&f.cfg.Refine.MaxIter, "max-iter", 5, "iterations at most")
	fl.IntVar(&f.cfg.Refine.MaxPromptChars, "max-prompt-chars", 0, "length cap of the revised prompt (default twice the original, at least 4000)")
	sel := &f.cfg.Refine.Selection
	fl.StringVar(&sel.Rule, "select", refine.SelectLowerBound, "how the final version is picked: lower-bound (a version replaces the original only when its paired validation gain is surely above 0, see --select-level) or point (the best validation pi, the paper's rule)")
	fl.Float64Var(&sel.Level, "select-level", refine.DefaultSelectLevel, "interval level of --select lower-bound")
	fl.Float64Var(&sel.MinFailRecall, "min-fail-recall", 0, "no version whose validation fail recall is below this share can be selected (a deployment target)")
	fl.Float64Var(&sel.MinPassRecall, "min-pass-recall", 0, "no version whose validation pass recall is below this share can be selected")
	fl.Float64Var(&f.cfg.Refine.MinKept, "min-kept-text", refine.DefaultMinKept, "share of the prompt's sentences no edit touches that a revision must keep word for word, or it is refused")
	fl.StringVar(&f.cfg.Ablate, "ablate-input", "", "also calibrate without this input (e.g. reference) and report both side by side")
	fl.StringVar(&f.reportFile, "report", "", "write an HTML report to this file (and Markdown beside it)")
	bootVar(fl, &f.cfg.Refine.Boot.Resamples, &f.cfg.Refine.Boot.Seed, 10_000)
	return cmd
}

func (a *app) calibrate(cmd *cobra.Command, f *calibrateFlags) error {
	ctx := cmd.Context()
	s, err := f.loadJudge(f.judge)
	if err != nil {
		return err
	}
	cfg := f.cfg
	for _, name := range strings.FieldsFunc(f.starts, func(r rune) bool { return r == ',' }) {
		sp, err := f.loadJudge(strings.TrimSpace(name))
		if err != nil {
			return err
		}
		cfg.Starts = append(cfg.Starts, sp)
	}
	if len(cfg.Starts) > 0 {
		s = cfg.Starts[0]
	}
	if cfg.Refine.Quorum, err = teacher.ParseQuorum(f.quorum); err != nil {
		return usagef("--teacher-quorum: %v", err)
	}
	cfg.Refine.Judge, cfg.Refine.Model, cfg.Refine.TeacherModels, cfg.Refine.Concurrency = s, f.model, teacher.ParseModels(f.teacherModel), f.opts.Concurrency
	cfg.Split, cfg.Simulated, cfg.GavelVersion, cfg.MaxInputChars = f.split, isSim(f.model), buildVersion().Version, f.maxInput
	if err := run.CheckCalibrate(cfg); err != nil {
		return err
	}
	db, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	cfg.Data, err = run.Parts(ctx, db, "split", f.split, f.excludeStatus, f.limit)
	if err == nil {
		d := cfg.Data
		err = f.checkRecords(append(append(append([]*record.Record(nil), d.Train...), d.Val...), d.Test...), append(teacher.ParseModels(f.teacherModel), f.cfg.Refine.EditorModel)...)
	}
	if err != nil {
		return err
	}
	if f.dryRun {
		if strings.TrimSpace(f.model) == "" {
			return errNoModel
		}
		return a.dryRun(ctx, &f.modelFlags, db, func(p *llm.Plan, c llm.Cache) error { return run.PlanCalibrate(ctx, p, c, cfg) })
	}
	svc, err := f.service(db, registry())
	if err != nil {
		return err
	}
	out, err := run.Calibrate(ctx, a.env(db, svc), db, cfg, a.stageProgress)
	if err != nil {
		return run.Stopped(err, svc.Stats().Pending)
	}
	if f.reportFile != "" {
		if err := run.WriteCalibrationReports(out.Report, f.reportFile, a.writeFile); err != nil {
			return err
		}
		a.reportWritten(f.reportFile)
	}
	run.WriteCalls(a.stderr, out.Calls)
	return a.output(out)
}

func (a *app) promptsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "prompts",
		Short: "List, show and diff stored prompt versions",
		Args:  args(cobra.NoArgs),
	}
	cmd.AddCommand(a.promptsListCmd(), a.promptsShowCmd(), a.promptsDiffCmd())
	return cmd
}

func (a *app) noiseCmd() *cobra.Command {
	var f judgeFlags
	var teacherModel string
	var flip float64
	var seed uint64
	cmd := &cobra.Command{
		Use:   "noise --judge J --split NAME:train --flip 0.25 --seed S",
		Short: "Label-noise study: flip training labels, run the teacher, measure the noise it leaves",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if flip <= 0 || flip >= 1 {
				return usagef("--flip must be between 0 and 1")
			}
			f.model, teacherModel = cmp.Or(f.model, teacherModel), cmp.Or(teacherModel, f.model)
			js, err := a.setupJudge(ctx, &f)
			if err != nil {
				return err
			}
			defer js.db.Close()
			s, rs, svc := js.spec, js.rs, js.svc
			if err := f.checkRecords(rs, teacherModel); err != nil {
				return err
			}
			nr, err := refine.NoiseStudy(ctx, svc, s, teacherModel, rs, flip, seed, f.opts.Concurrency)
			if err != nil {
				return run.Stopped(err, svc.Stats().Pending)
			}
			run.WriteCalls(a.stderr, svc.Stats())
			return a.output(&run.NoiseResult{ResultVersion: run.ResultVersion, Noise: nr, Simulated: isSim(teacherModel), Calls: svc.Stats()})
		},
	}
	f.register(a, cmd)
	cmd.Flags().StringVar(&teacherModel, "teacher-model", "", "teacher model (default --model)")
	cmd.Flags().Float64Var(&flip, "flip", 0.25, "share of labels to flip")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed of the flips")
	return cmd
}

type driftFlags struct {
	f           judgeFlags
	versions    []string
	by          string
	resamples   int
	live        bool
	failOnAlert bool
}

func (a *app) driftCmd() *cobra.Command {
	var o driftFlags
	cmd := &cobra.Command{
		Use:   "drift --judge-versions V1,V2 --by month --split NAME[:PART] --model M | drift --live --judge J --model M",
		Short: "Agreement of prompt versions per time window, to see where a recalibrated judge loses; --live: the service's drift monitor",
		Args:  args(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return a.drift(cmd, &o) },
	}
	o.f.register(a, cmd)
	cmd.Flags().StringSliceVar(&o.versions, "judge-versions", nil, "prompt versions to compare (hash prefixes)")
	cmd.Flags().StringVar(&o.by, "by", "month", "time window: month or week (with --live, week by default)")
	cmd.Flags().IntVar(&o.resamples, "resamples", 2000, "bootstrap resamples per window")
	cmd.Flags().BoolVar(&o.live, "live", false, "the service's drift monitor: the active version of --judge against the outcomes that arrived")
	cmd.Flags().BoolVar(&o.failOnAlert, "fail-on-alert", false, "with --live, exit 1 when the monitor is in alert")
	return cmd
}

func (a *app) drift(cmd *cobra.Command, o *driftFlags) error {
	ctx := cmd.Context()
	if o.live {
		if o.f.model == "" {
			return errNoModel
		}
		if !cmd.Flags().Changed("by") {
			o.by = "week"
		}
		return a.liveDrift(ctx, o.f.judge, o.f.model, o.by, o.resamples, o.failOnAlert)
	}
	if err := refine.CheckWindow(o.by); err != nil {
		return usagef("--by: %v", err)
	}
	if len(o.versions) == 0 {
		return usagef("--judge-versions V1,V2 is needed (hashes from 'gavel prompts list')")
	}
	db, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	ref := o.f.split
	if ref != "" && !strings.Contains(ref, ":") {
		ref += ":test"
	}
	rs, err := o.f.records(ctx, db, ref, 0)
	if err == nil {
		err = o.f.checkRecords(rs)
	}
	if err != nil {
		return err
	}
	svc, err := o.f.service(db, registry())
	if err != nil {
		return err
	}
	res, err := run.Drift(ctx, a.env(db, svc), run.DriftConfig{Versions: o.versions, Model: o.f.model, Records: rs, By: o.by,
		Resamples: o.resamples, Concurrency: o.f.opts.Concurrency, Simulated: isSim(o.f.model)})
	if err != nil {
		return run.Stopped(err, svc.Stats().Pending)
	}
	return a.output(res)
}

func (a *app) promptsListCmd() *cobra.Command {
	var judgeName string
	list := &cobra.Command{
		Use:   "list",
		Short: "List prompt versions with their parent, iteration and metrics",
		Args:  args(cobra.NoArgs),
		RunE: a.withStore(func(cmd *cobra.Command, _ []string, db store.Store) error {
			ps, err := db.Prompts(cmd.Context(), judgeName)
			if err != nil {
				return err
			}
			if ps == nil {
				ps = []*judge.PromptVersion{}
			}
			return a.output(run.PromptList(ps))
		}),
	}
	list.Flags().StringVar(&judgeName, "judge", "", "only this judge's versions")
	return list
}

func (a *app) promptsShowCmd() *cobra.Command {
	show := &cobra.Command{
		Use:   "show HASH",
		Short: "Print a prompt version: its prompt, checks, lineage and the edits that made it",
		Args:  args(cobra.ExactArgs(1)),
		RunE: a.withStore(func(cmd *cobra.Command, argv []string, db store.Store) error {
			p, err := db.Prompt(cmd.Context(), argv[0])
			if err != nil {
				return err
			}
			return a.output(&run.PromptResult{ResultVersion: run.ResultVersion, PromptVersion: p})
		}),
	}
	return show
}

func (a *app) promptsDiffCmd() *cobra.Command {
	diff := &cobra.Command{
		Use:   "diff A B",
		Short: "Unified diff between two prompt versions",
		Args:  args(cobra.ExactArgs(2)),
		RunE: a.withStore(func(cmd *cobra.Command, argv []string, db store.Store) error {
			pa, err := db.Prompt(cmd.Context(), argv[0])
			if err != nil {
				return err
			}
			pb, err := db.Prompt(cmd.Context(), argv[1])
			if err != nil {
				return err
			}
			_, err = io.WriteString(a.stdout, refine.Diff(pa.Spec, pb.Spec))
			return err
		}),
	}
	return diff
}
