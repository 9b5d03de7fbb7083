package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/report"
	"github.com/gavelhq/gavel/run"
	"github.com/gavelhq/gavel/store"
)

// judgeFlags are shared by judge and eval.
type judgeFlags struct {
	modelFlags
	judge         string
	split         string
	inputs        []string
	excludeStatus []record.Status
	limit         int
	maxInput      int
}

// records reads a split part's records with the statuses --exclude-status
// names left out, the first limit of them when limit > 0.
func (f *judgeFlags) records(ctx context.Context, db store.Store, ref string, limit int) ([]*record.Record, error) {
	rs, err := run.Records(ctx, db, "split", ref, f.excludeStatus, limit)
	return run.CutRecords(rs, f.maxInput), err
}

func (f *judgeFlags) register(a *app, cmd *cobra.Command) {
	a.withModel(cmd, &f.modelFlags, modelUse{})
	fl := cmd.Flags()
	fl.StringVar(&f.judge, "judge", "passfail", "judge: a built-in ("+strings.Join(judge.Builtins(), ", ")+") or a YAML spec file")
	fl.StringVar(&f.split, "split", "", "records to judge: NAME:PART of a split made with 'gavel split'")
	fl.StringSliceVar(&f.inputs, "inputs", nil, "what the judge sees, e.g. task,candidate (default: the judge's own; add context.KEY for context entries)")
	statusesVar(fl, &f.excludeStatus, "exclude-status", "leave out records with these statuses (e.g. draft)")
	fl.IntVar(&f.limit, "limit", 0, "a seeded sample of about N records (of each part, for calibrate), labels in their shares and groups whole: a quick first try")
	fl.IntVar(&f.maxInput, "max-input-chars", 0, "cut each input (task, candidate, reference, context) over this many characters at a line end, with a marker; judge and teacher see the same cut (0: none)")
}

// loadJudge loads a spec and applies --inputs.
func (f *judgeFlags) loadJudge(name string) (*judge.Spec, error) {
	s, err := judge.Load(name)
	if err != nil {
		return nil, usageError{err}
	}
	if len(f.inputs) > 0 {
		if s, err = s.WithInputs(f.inputs); err != nil {
			return nil, usagef("--inputs: %v", err)
		}
	}
	return s, nil
}

// judgeSetup is what the commands that judge a split part share: the
// judge, the open store, the records and the model service. The caller
// closes db.
type judgeSetup struct {
	spec *judge.Spec
	db   store.Store
	rs   []*record.Record
	svc  *llm.Service
}

func (a *app) setupJudge(ctx context.Context, f *judgeFlags) (*judgeSetup, error) {
	s, err := f.loadJudge(f.judge)
	if err != nil {
		return nil, err
	}
	db, err := a.openStore(ctx)
	if err != nil {
		return nil, err
	}
	rs, err := f.records(ctx, db, f.split, f.limit)
	if err == nil {
		err = f.checkRecords(rs)
	}
	if err == nil {
		err = run.CheckContextInputs(s, rs)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	if f.dryRun {
		if strings.TrimSpace(f.model) == "" {
			db.Close()
			return nil, errNoModel
		}
		return &judgeSetup{spec: s, db: db, rs: rs}, nil
	}
	svc, err := f.service(db, registry())
	if err != nil {
		db.Close()
		return nil, err
	}
	return &judgeSetup{spec: s, db: db, rs: rs, svc: svc}, nil
}

func (a *app) judgeCmd() *cobra.Command {
	var f judgeFlags
	cmd := &cobra.Command{
		Use:   "judge --judge J --split NAME:PART --model M",
		Short: "Judge records with a judge and model, and store each verdict",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			js, err := a.setupJudge(ctx, &f)
			if err != nil {
				return err
			}
			defer js.db.Close()
			s, rs, svc := js.spec, js.rs, js.svc
			if f.dryRun {
				return a.dryRun(ctx, &f.modelFlags, js.db, func(p *llm.Plan, c llm.Cache) error {
					return judge.PlanRun(ctx, p, c, s, f.model, rs, "judge "+s.Name+" on "+f.split)
				})
			}
			sum, err := run.Judge(ctx, a.env(js.db, svc), run.JudgeConfig{Judge: s, Model: f.model, Records: rs, Concurrency: f.opts.Concurrency, Simulated: isSim(f.model)})
			if err != nil {
				return run.Stopped(err, svc.Stats().Pending)
			}
			run.WriteCalls(a.stderr, sum.Calls)
			return a.output(sum)
		},
	}
	f.register(a, cmd)
	return cmd
}

func isSim(model string) bool {
	p, _, _ := llm.ParseModel(model)
	return p == "sim"
}

func simTag(model string) string { return run.SimTag(isSim(model)) }

// evalFlags add eval's own flags.
type evalFlags struct {
	judgeFlags
	cfg        run.EvalConfig
	compare    string
	reportFile string
	failUnder  float64
}

func (a *app) evalCmd() *cobra.Command {
	var f evalFlags
	cmd := &cobra.Command{
		Use:   "eval --judge J --split NAME:test --model M",
		Short: "Measure a judge against recorded outcomes: pi, kappa, precision and recall with intervals",
		Args:  args(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return a.eval(cmd, &f) },
	}
	f.register(a, cmd)
	fl := cmd.Flags()
	fl.IntVar(&f.cfg.Threshold, "threshold", 0, "rubric pass threshold (default: the judge's)")
	fl.StringVar(&f.cfg.TuneOn, "tune-threshold-on", "", "pick the rubric threshold on this split part (NAME:PART)")
	fl.StringVar(&f.cfg.TuneMetric, "tune-metric", "scott_pi", "metric the threshold is tuned for")
	fl.StringVar(&f.compare, "compare", "", "a second judge: report the paired difference")
	fl.IntVar(&f.cfg.Retest, "retest", 0, "ask the judge again about this many records (or all, when more), as requests of their own: its own flip rate and pi between the asks")
	fl.StringVar(&f.cfg.Version, "version", "", "evaluate this stored prompt version of the judge (a hash or a unique prefix, e.g. the one a calibration selected) beside the original it descends from, with the paired gain: with another --model, whether the calibration transfers")
	fl.StringVar(&f.reportFile, "report", "", "write an HTML report to this file")
	bootVar(fl, &f.cfg.Resamples, &f.cfg.Seed, 10_000)
	fl.Float64Var(&f.failUnder, "fail-under-pi", math.NaN(), "a CI gate: exit 1 when Scott's pi is under this (undefined pi fails too)")
	return cmd
}

func (a *app) eval(cmd *cobra.Command, f *evalFlags) error {
	ctx := cmd.Context()
	s, err := f.loadJudge(f.judge)
	if err != nil {
		return err
	}
	var other *judge.Spec
	if f.compare != "" {
		if other, err = f.loadJudge(f.compare); err != nil {
			return err
		}
	}
	db, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	cfg := f.cfg
	cfg.Judge, cfg.Model, cfg.Split, cfg.ExcludeStatus, cfg.Limit, cfg.Compare = s, f.model, f.split, f.excludeStatus, f.limit, other
	cfg.Concurrency, cfg.Simulated, cfg.GavelVersion, cfg.MaxInputChars = f.opts.Concurrency, isSim(f.model), buildVersion().Version, f.maxInput
	cfg.CheckRecords = func(rs []*record.Record) error { return f.checkRecords(rs) }
	e, err := run.PrepareEval(ctx, db, cfg)
	if err != nil {
		return err
	}
	if f.dryRun {
		if strings.TrimSpace(f.model) == "" {
			return errNoModel
		}
		return a.dryRun(ctx, &f.modelFlags, db, func(p *llm.Plan, c llm.Cache) error { return e.Plan(ctx, p, c) })
	}
	svc, err := f.service(db, registry())
	if err != nil {
		return err
	}
	out, err := e.Run(ctx, a.env(db, svc))
	if err != nil {
		return run.Stopped(err, svc.Stats().Pending)
	}
	if f.reportFile != "" {
		if err := a.writeFile(f.reportFile, func(w io.Writer) error { return report.WriteEval(w, out.Report) }); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	a.reportWritten(f.reportFile)
	run.WriteCalls(a.stderr, out.Calls)
	if err := a.output(out); err != nil {
		return err
	}
	if !math.IsNaN(f.failUnder) {
		if pi := out.Figures["scott_pi"].Value; !pi.Defined() || pi.V < f.failUnder {
			return gateError{fmt.Errorf("gate failed: Scott's pi %s is under --fail-under-pi %g", pi, f.failUnder)}
		}
	}
	return nil
}
