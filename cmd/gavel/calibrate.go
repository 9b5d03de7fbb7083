package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
	"github.com/gavelhq/gavel/report"
	"github.com/gavelhq/gavel/run"
	"github.com/gavelhq/gavel/store"
	"github.com/gavelhq/gavel/teacher"
)

// loadParts reads a split's three parts, the first limit of each when
// limit > 0.
func loadParts(ctx context.Context, db store.Store, name string, exclude []string, limit int) (refine.Data, error) {
	ex, err := record.ParseStatuses(exclude)
	if err != nil {
		return refine.Data{}, usagef("--exclude-status: %v", err)
	}
	return run.Parts(ctx, db, "split", name, ex, limit)
}

func (a *app) teachCmd() *cobra.Command {
	var f judgeFlags
	var teacherModel string
	cmd := &cobra.Command{
		Use:   "teach --judge J --split NAME:train --teacher-model M",
		Short: "Run the informed teacher: keep, abstain on or correct each recorded label",
		Long: `Ask the informed teacher about each record: it sees exactly what the judge sees plus
the recorded outcome, and keeps the label with a justification, abstains when
the outcome cannot be explained from those inputs, or (rarely) corrects it.
Prints the counts and the abstention rates by status and label, and warns of an
information gap when it abstains on most failures.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			js, err := a.setupJudge(ctx, &f)
			if err != nil {
				return err
			}
			defer js.db.Close()
			s, db, rs, svc := js.spec, js.db, js.rs, js.svc
			if teacherModel == "" {
				teacherModel = f.model
			}
			if err := f.checkRecords(rs, teacherModel); err != nil {
				return err
			}
			cfg := run.TeachConfig{Judge: s, TeacherModel: teacherModel, Records: rs, Concurrency: f.concurrency,
				Simulated: isSim(teacherModel), Stage: "teacher on " + f.split}
			if f.dryRun {
				return a.dryRun(ctx, &f.modelFlags, db, func(p *llm.Plan, c llm.Cache) error { return run.PlanTeach(ctx, p, c, cfg) })
			}
			res, err := run.Teach(ctx, a.env(db, svc), db, cfg)
			if err != nil {
				return stopped(err, svc.Stats().Pending)
			}
			if a.json {
				return a.writeJSON(res)
			}
			st := res.Teacher
			a.printTeacher(teacherModel, st)
			a.printCalls(svc.Stats())
			return nil
		},
	}
	f.register(a, cmd)
	cmd.Flags().StringVar(&teacherModel, "teacher-model", "", "teacher model (default --model)")
	return cmd
}

func (a *app) printTeacher(model string, st teacher.Stats) {
	fmt.Fprintf(a.stdout, "%steacher (%s): %d records: %d kept, %d abstained, %d corrected, %d unreadable\n",
		simTag(model), model, st.Records, st.Kept, st.Abstained, st.Corrected, st.Invalid)
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	for _, l := range record.SortedKeys(st.AbstainByLabel) {
		fmt.Fprintf(tw, "  abstains on label %s\t%.1f%%\n", l, 100*st.AbstainByLabel[l])
	}
	for _, s := range record.SortedKeys(st.AbstainByStatus) {
		fmt.Fprintf(tw, "  abstains on status %s\t%.1f%%\n", s, 100*st.AbstainByStatus[s])
	}
	tw.Flush()
	if st.InformationGap {
		fmt.Fprintf(a.stderr, "warning: %s\n", teacher.InformationGapWarning)
	}
}

// printPanel shows each teacher of a panel and how they agree.
func (a *app) printPanel(model string, p *teacher.PanelStats) {
	fmt.Fprintf(a.stdout, "%steacher panel of %d (quorum %s):\n", simTag(model), len(p.Teachers), p.Quorum)
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  teacher\tfamily\tkept\tabstained\tcorrected\tunreadable")
	for _, t := range p.Teachers {
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%d\t%d\n", t.Model, t.Family, t.Kept, t.Abstained, t.Corrected, t.Invalid)
	}
	tw.Flush()
	for _, pa := range p.Pairwise {
		fmt.Fprintf(a.stdout, "  %s vs %s: Scott's pi %s %s over %d records\n", pa.A, pa.B, pa.ScottPi.Value, ciText(pa.ScottPi.CI), pa.Records)
	}
	fmt.Fprintf(a.stdout, "  Fleiss' kappa %s %s\n", p.FleissKappa.Value, ciText(p.FleissKappa.CI))
	if p.Warning != "" {
		fmt.Fprintf(a.stderr, "warning: %s\n", p.Warning)
	}
}

func ciText(iv *metrics.Interval) string {
	if iv == nil {
		return ""
	}
	return iv.String()
}

type calibrateFlags struct {
	judgeFlags
	teacherModel, editorModel string
	quorum                    string
	labelBlind                bool
	repeats                   int
	resampleTrain             bool
	maxIter, maxChars         int
	ablate                    string
	reportFile                string
	resamples                 int
	seed                      uint64
}

func (a *app) calibrateCmd() *cobra.Command {
	var f calibrateFlags
	cmd := &cobra.Command{
		Use:   "calibrate --judge J --split NAME --model M",
		Short: "Recalibrate a judge's prompt from recorded outcomes (AutoRefine)",
		Long: `Calibrate a judge's prompt on a split: the teacher filters train; each iteration
runs the current prompt on the kept training records, asks for edits on every
disagreement, balances reasons to fail with reasons to pass, and has them
applied under a length cap; the version with the best validation pi (the
original included) is selected and reported on test beside the original and,
for rubric judges, the original with its threshold tuned on train, with the
paired interval of the gain. Every version is stored ('gavel prompts').
A killed run resumes from the cache; --offline stops at each stage boundary.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return a.calibrate(cmd, &f) },
	}
	f.register(a, cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.teacherModel, "teacher-model", "", "teacher model (default --model); several, comma-separated (openai:A,anthropic:B), make a panel")
	fl.StringVar(&f.quorum, "teacher-quorum", "all", "with several teacher models: how many must agree to keep or correct a label: all, majority or a number")
	fl.BoolVar(&f.labelBlind, "label-blind", false, "first ask each teacher to predict each training outcome without seeing it, and report how often it keeps a label it would not have predicted (its rationalisation rate)")
	fl.StringVar(&f.editorModel, "editor-model", "", "model that proposes and applies edits (default --model)")
	fl.IntVar(&f.repeats, "repeats", 0, "run the calibration this many times (at least 2) with seeds 1..K, the editor sampling at temperature 0.7, and report the gain's spread, the edits' acceptance and the selection's stability")
	fl.BoolVar(&f.resampleTrain, "resample-train", false, "with --repeats, each run calibrates on its own bootstrap resample of train's groups (the distinct records drawn)")
	fl.IntVar(&f.maxIter, "max-iter", 5, "iterations at most")
	fl.IntVar(&f.maxChars, "max-prompt-chars", 0, "length cap of the revised prompt (default twice the original, at least 4000)")
	fl.StringVar(&f.ablate, "ablate-input", "", "also calibrate without this input (e.g. reference) and report both side by side")
	fl.StringVar(&f.reportFile, "report", "", "write an HTML report to this file (and Markdown beside it)")
	fl.IntVar(&f.resamples, "resamples", 10_000, "bootstrap resamples")
	fl.Uint64Var(&f.seed, "seed", 1, "bootstrap seed")
	return cmd
}

// teachers are the teacher models --teacher-model names (empty: --model).
func (f *calibrateFlags) teachers() []string {
	if strings.TrimSpace(f.teacherModel) == "" {
		return nil
	}
	return teacher.ParseModels(f.teacherModel)
}

// config is the calibration's configuration from the flags.
func (f *calibrateFlags) config(s *judge.Spec, boot metrics.BootstrapOptions) refine.Config {
	q, _ := teacher.ParseQuorum(f.quorum) // checked in calibrate
	return refine.Config{Judge: s, Model: f.model, TeacherModels: f.teachers(), Quorum: q, LabelBlind: f.labelBlind, EditorModel: f.editorModel,
		MaxIter: f.maxIter, MaxPromptChars: f.maxChars, Concurrency: f.concurrency, Boot: boot}
}

// stageProgress shows a calibration's stages on stderr, one bar each; the
// returned function ends the last.
func (a *app) stageProgress(title string) (func(stage string, done, total int), func()) {
	prog := map[string]*progress{}
	return func(stage string, done, total int) {
			p := prog[stage]
			if p == nil {
				for _, old := range prog {
					old.done()
				}
				clear(prog)
				p = a.newProgress(title+": "+stage, total)
				prog[stage] = p
			}
			p.update(done)
		}, func() {
			for _, p := range prog {
				p.done()
			}
		}
}

// printRepeats shows repeated runs and their summary.
func (a *app) printRepeats(runs []refine.Run, s *refine.RepeatSummary) {
	fmt.Fprintf(a.stdout, "\n%d runs:\n", s.Runs)
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  seed\tselected\ttest gain\tinterval\tversions")
	for _, r := range runs {
		gain := "undefined"
		if r.Gain.ScottPi != nil {
			gain = fmt.Sprintf("%+.4f", *r.Gain.ScottPi)
		}
		ci := "none"
		if len(r.Gain.CI) == 2 {
			ci = fmt.Sprintf("[%.4f, %.4f]", r.Gain.CI[0], r.Gain.CI[1])
		}
		fmt.Fprintf(tw, "  %d\t%.12s\t%s\t%s\t%d\n", r.Seed, r.SelectedVersion, gain, ci, len(r.Trajectory))
	}
	tw.Flush()
	ci := "none"
	if s.GainCI != nil {
		ci = fmt.Sprintf("[%.4f, %.4f]", s.GainCI[0], s.GainCI[1])
	}
	fmt.Fprintf(a.stdout, "gain over runs: mean %+.4f, sd %.4f, range [%+.4f, %+.4f], 95%% t interval of the mean %s; %d of %d runs with an interval above 0\n",
		s.MeanGain, s.SDGain, s.MinGain, s.MaxGain, ci, s.Positive, s.Runs)
	fmt.Fprintf(a.stdout, "selection stability: %.0f%% of runs chose the most chosen version (%d distinct)\n", 100*s.Stability, len(s.Selected))
	for i, e := range s.Edits {
		if i == 5 {
			fmt.Fprintf(a.stdout, "  ... %d more edits\n", len(s.Edits)-5)
			break
		}
		fmt.Fprintf(a.stdout, "  accepted in %d of %d runs: [%s] %s\n", e.Runs, s.Runs, e.Kind, e.Text)
	}
}

func (a *app) calibrate(cmd *cobra.Command, f *calibrateFlags) error {
	ctx := cmd.Context()
	s, err := f.loadJudge(f.judge)
	if err != nil {
		return err
	}
	if _, err := teacher.ParseQuorum(f.quorum); err != nil {
		return usagef("--teacher-quorum: %v", err)
	}
	cfg := run.CalibrateConfig{Refine: f.config(s, metrics.BootstrapOptions{Resamples: f.resamples, Seed: f.seed}), Split: f.split,
		Repeats: f.repeats, ResampleTrain: f.resampleTrain, Ablate: f.ablate, Simulated: isSim(f.model), GavelVersion: buildVersion().Version}
	if err := run.CheckCalibrate(cfg); err != nil {
		return err
	}
	db, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	cfg.Data, err = loadParts(ctx, db, f.split, f.excludeStatus, f.limit)
	if err == nil {
		d := cfg.Data
		err = f.checkRecords(append(append(append([]*record.Record(nil), d.Train...), d.Val...), d.Test...), append(f.teachers(), f.editorModel)...)
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
		return stopped(err, svc.Stats().Pending)
	}
	if f.reportFile != "" {
		if err := writeReports(f.reportFile, a.stdout, out.Report); err != nil {
			return err
		}
	}
	if a.json {
		return a.writeJSON(out)
	}
	a.printCalibration(out.Result)
	if out.RepeatsSummary != nil {
		a.printRepeats(out.Repeats, out.RepeatsSummary)
	}
	if out.Without != nil {
		fmt.Fprintf(a.stdout, "\nwithout %s:\n", f.ablate)
		a.printCalibration(out.Without)
	}
	if f.reportFile != "" {
		fmt.Fprintf(a.stderr, "report written to %s\n", f.reportFile)
	}
	a.printCalls(out.Calls)
	return nil
}

func writeReports(htmlFile string, stdout io.Writer, rep *report.CalibrationReport) error {
	if err := writeAtomic(htmlFile, stdout, func(w io.Writer) error { return report.WriteCalibration(w, rep) }); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	md := strings.TrimSuffix(htmlFile, ".html") + ".md"
	if md == htmlFile {
		md += ".md"
	}
	return writeAtomic(md, stdout, func(w io.Writer) error { return report.WriteCalibrationMarkdown(w, rep) })
}

func (a *app) printCalibration(r *refine.Result) {
	model := r.Original.Model
	if r.Panel != nil {
		a.printPanel(model, r.Panel)
		a.printTeacher("the panel's decisions", r.Teacher)
	} else {
		a.printTeacher(model, r.Teacher)
	}
	for _, b := range r.Blind {
		fmt.Fprintf(a.stdout, "label-blind check of %s: predicted %d, %d contrary to the recorded label; kept %d of those: rationalisation rate %s %s\n",
			b.Model, b.Predicted, b.Contrary, b.Rationalised, b.RationalisationRate.Value, ciText(b.RationalisationRate.CI))
	}
	fmt.Fprintf(a.stdout, "%s%s: %d iteration(s); stopped: %s\n", simTag(model), r.Judge, r.Iterations, r.StopReason)
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tversion\thash\ttrain pi\tval pi\tdisagreements\taccepted\tdropped\t")
	for i, v := range r.Versions {
		mark := ""
		if i == r.Selected {
			mark = "*"
		}
		fmt.Fprintf(tw, "\t%d%s\t%.12s\t%s\t%s\t%d\t%d\t%d\t\n", v.Iteration, mark, v.Hash, v.TrainPi, v.ValPi, v.Disagreements, len(v.Accepted), v.Dropped)
	}
	tw.Flush()
	line := func(name string, e *judge.Evaluation) {
		f := e.Figures["scott_pi"]
		ci := ""
		if f.CI != nil {
			ci = f.CI.String()
		}
		fmt.Fprintf(a.stdout, "  test %-28s scott_pi %s %s\n", name, f.Value, ci)
	}
	line("original", r.Original)
	if r.Tuned != nil {
		line(fmt.Sprintf("threshold tuned (%d)", r.TunedThreshold), r.Tuned)
	}
	line("calibrated", r.Calibrated)
	g := r.Gain["scott_pi"]
	fmt.Fprintf(a.stdout, "  gain (paired)                     %s %s\n", g.Value, g.CI)
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
			js, err := a.setupJudge(ctx, &f)
			if err != nil {
				return err
			}
			defer js.db.Close()
			s, rs, svc := js.spec, js.rs, js.svc
			if teacherModel == "" {
				teacherModel = f.model
			}
			if err := f.checkRecords(rs, teacherModel); err != nil {
				return err
			}
			nr, err := refine.NoiseStudy(ctx, svc, s, teacherModel, rs, flip, seed, f.concurrency)
			if err != nil {
				return stopped(err, svc.Stats().Pending)
			}
			if a.json {
				return a.writeJSON(&run.NoiseResult{ResultVersion: run.ResultVersion, Noise: nr, Simulated: isSim(teacherModel), Calls: svc.Stats()})
			}
			fmt.Fprintf(a.stdout, "%s%d of %d labels flipped: noise %.1f%% before the teacher, %.1f%% after (over %d kept)\n",
				simTag(teacherModel), nr.Flipped, nr.Records, 100*nr.Before, 100*nr.After, nr.Kept)
			for _, l := range record.SortedKeys(nr.Removed) {
				c := nr.Removed[l]
				fmt.Fprintf(a.stdout, "  true %s: removed %d of %d flipped, %d of %d not flipped\n", l, c.FlippedRemoved, c.Flipped, c.CleanRemoved, c.Clean)
			}
			a.printCalls(svc.Stats())
			return nil
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
		Long: `Agreement of prompt versions per time window of a split's records, to see where
a recalibrated judge loses to the old one.

With --live, the drift monitor of 'gavel serve': the active version's agreement
with the outcomes that arrived for the changes it judged, by week or month, and
an alert when the latest window with enough outcomes falls below the interval
the promotion gate measured (--fail-on-alert exits 1 then).`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return a.drift(cmd, &o) },
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
		Resamples: o.resamples, Concurrency: o.f.concurrency, Simulated: isSim(o.f.model)})
	if err != nil {
		return stopped(err, svc.Stats().Pending)
	}
	if a.json {
		return a.writeJSON(res)
	}
	specs, ws := res.Specs, res.Windows
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s%s\trecords", simTag(o.f.model), o.by)
	for _, s := range specs {
		fmt.Fprintf(tw, "\t%s %.8s", s.Name, s.Version())
	}
	fmt.Fprintln(tw)
	for _, w := range ws {
		start := w.Start.Format("2006-01")
		if o.by == refine.ByWeek {
			start = w.Start.Format("2006-01-02")
		}
		fmt.Fprintf(tw, "%s\t%d", start, w.N)
		for _, s := range specs {
			fg := w.Pi[s.Version()]
			fmt.Fprintf(tw, "\t%s %s", fg.Value, fg.CI)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func (a *app) promptsListCmd() *cobra.Command {
	var judgeName string
	list := &cobra.Command{
		Use:   "list",
		Short: "List prompt versions with their parent, iteration and metrics",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := a.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			ps, err := db.Prompts(cmd.Context(), judgeName)
			if err != nil {
				return err
			}
			if a.json {
				if ps == nil {
					ps = []*judge.PromptVersion{}
				}
				return a.writeJSON(ps)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "HASH\tJUDGE\tITER\tPARENT\tTRAIN PI\tVAL PI\tEDITS\tCREATED")
			for _, p := range ps {
				metric := func(k string) string {
					if v, ok := p.Metrics[k]; ok {
						return fmt.Sprintf("%.3f", v)
					}
					return "-"
				}
				fmt.Fprintf(tw, "%.12s\t%s\t%d\t%.12s\t%s\t%s\t%d\t%s\n", p.Hash, p.Judge, p.Iteration, p.Parent, metric("train_scott_pi"), metric("val_scott_pi"), len(p.Edits), p.CreatedAt)
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&judgeName, "judge", "", "only this judge's versions")
	return list
}

func (a *app) promptsShowCmd() *cobra.Command {
	show := &cobra.Command{
		Use:   "show HASH",
		Short: "Print a prompt version: its prompt, checks, lineage and the edits that made it",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			db, err := a.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			p, err := db.Prompt(cmd.Context(), argv[0])
			if err != nil {
				return err
			}
			if a.json {
				return a.writeJSON(p)
			}
			fmt.Fprintf(a.stdout, "version %s of %s (iteration %d, parent %.12s)\n", p.Hash, p.Judge, p.Iteration, p.Parent)
			for _, e := range p.Edits {
				fmt.Fprintf(a.stdout, "edit: %s\n", e)
			}
			if p.Note != "" {
				fmt.Fprintf(a.stdout, "note: %s\n", p.Note)
			}
			fmt.Fprintf(a.stdout, "\n%s", refine.PromptText(p.Spec))
			return nil
		},
	}
	return show
}

func (a *app) promptsDiffCmd() *cobra.Command {
	diff := &cobra.Command{
		Use:   "diff A B",
		Short: "Unified diff between two prompt versions",
		Args:  args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			db, err := a.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer db.Close()
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
		},
	}
	return diff
}
