package run

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gavelhq/gavel/acr"
	"github.com/gavelhq/gavel/bench"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
	"github.com/gavelhq/gavel/report"
	"github.com/gavelhq/gavel/teacher"
)

// Each result writes itself as its command prints it without --json
// (WriteText); results with something to warn of say it in Warnings, which
// the command line puts on stderr.

// printer writes formatted text and keeps the first write error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// table is a tab-aligned table on the printer's writer; right aligns its
// cells to the right (cells then end with a tab).
func (p *printer) table(right bool) *tabwriter.Writer {
	var flags uint
	if right {
		flags = tabwriter.AlignRight
	}
	return tabwriter.NewWriter(p.w, 0, 4, 2, ' ', flags)
}

// flush ends a table.
func (p *printer) flush(tw *tabwriter.Writer) {
	if err := tw.Flush(); err != nil && p.err == nil {
		p.err = err
	}
}

// SimTag marks output about a simulated model.
func SimTag(simulated bool) string {
	if simulated {
		return "[simulated] "
	}
	return ""
}

func ciText(iv *metrics.Interval) string {
	if iv == nil {
		return ""
	}
	return iv.String()
}

// figures writes the reported figures, one a line.
func (p *printer) figures(figs map[string]metrics.Figure) {
	tw := p.table(false)
	for _, name := range judge.ReportedMetrics {
		fg := figs[name]
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", name, fg.Value, ciText(fg.CI))
	}
	p.flush(tw)
}

// Counts is "k1 n1, k2 n2" in key order, or none when m is empty.
func Counts[K ~string](m map[K]int, none string) string {
	var parts []string
	for _, k := range record.SortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return none
	}
	return strings.Join(parts, ", ")
}

// WriteText writes the counts of verdicts.
func (r *JudgeResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	p.f("%s%s (prompt %.12s) with %s: %d records: %d pass, %d fail, %d invalid\n",
		SimTag(r.Simulated), r.Judge, r.Prompt, r.Model, r.Records, r.Pass, r.Fail, r.Invalid)
	return p.err
}

// WriteText writes the evaluation's figures, confusion, thresholds,
// tuning and comparison.
func (r *EvalResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	p.f("%s%s (prompt %.12s) with %s on %s: %d records, %d invalid", SimTag(r.Simulated), r.Judge, r.Prompt, r.Model, r.Split, r.N, r.Invalid)
	if r.Threshold != 0 {
		p.f(", threshold %d", r.Threshold)
	}
	p.f("\n")
	p.figures(r.Figures)
	c := r.Confusion
	p.f("  confusion (outcome by verdict): fail->fail %d, fail->pass %d, pass->fail %d, pass->pass %d\n", c[0][0], c[0][1], c[1][0], c[1][1])
	if len(r.Thresholds) > 0 {
		p.f("  by threshold:\n")
		tw := p.table(true)
		fmt.Fprintln(tw, "\tthreshold\tscott_pi\t95% interval\taccuracy\tfail_recall\tpass_recall\t")
		for _, t := range r.Thresholds {
			fmt.Fprintf(tw, "\t%g\t%s\t%s\t%s\t%s\t%s\t\n", t.Threshold, t.ScottPi, ciText(t.ScottPiCI), t.Accuracy, t.FailRecall, t.PassRecall)
		}
		p.flush(tw)
	}
	if t := r.Tuned; t != nil {
		p.f("threshold tuned on %s: %d (%s %s there); on %s:\n", t.On, t.Threshold, t.Metric, t.OnValue, r.Split)
		p.figures(t.Test)
	}
	if c := r.Compare; c != nil {
		p.f("%s (prompt %.12s):\n", c.Judge, c.Prompt)
		p.figures(c.Figures)
		p.f("%s minus %s (paired intervals):\n", r.Judge, c.Judge)
		p.figures(c.Difference)
		p.f("  the two judges decide %d of %d records differently (%.1f%%)", c.Flips, c.Paired, pct(c.Flips, c.Paired))
		if rt := r.Retest; rt != nil {
			p.f("; %s asked twice flips %.1f%% by itself", r.Judge, pct(rt.Flips, rt.Samples))
		}
		p.f("\n")
	}
	if t := r.Transfer; t != nil {
		p.f("version %.12s against its original %.12s: paired pi gain %s %s; they decide %d of %d records differently (%.1f%%)\n",
			t.Version, t.Original, t.Gain.Value, ciText(t.Gain.CI), t.Flips, t.Paired, pct(t.Flips, t.Paired))
	}
	if rt := r.Retest; rt != nil {
		p.retest(r.Judge, rt)
	}
	return p.err
}

// retest writes a judge's own noise.
func (p *printer) retest(name string, rt *judge.Retest) {
	p.f("%s asked twice (retest): %d of %d records flip (%.1f%%, 95%% interval %s); pi between the asks %s %s",
		name, rt.Flips, rt.Samples, pct(rt.Flips, rt.Samples), ciPct(rt.FlipRate.CI), rt.ScottPi.Value, ciText(rt.ScottPi.CI))
	if rt.Unreadable > 0 {
		p.f("; %d unreadable left out", rt.Unreadable)
	}
	p.f("\n  a change between two prompts that flips no more than this cannot be told from the judge's own noise\n")
}

func pct(k, n int) float64 {
	if n == 0 {
		return 0
	}
	return 100 * float64(k) / float64(n)
}

// ciPct writes an interval of a share in per cent.
func ciPct(iv *metrics.Interval) string {
	if iv == nil || !iv.Defined() {
		return "none"
	}
	return fmt.Sprintf("[%.1f%%, %.1f%%]", 100*iv.Lo, 100*iv.Hi)
}

// teacher writes a teacher's counts and abstention rates.
func (p *printer) teacher(tag, model string, st teacher.Stats) {
	p.f("%steacher (%s): %d records: %d kept, %d abstained, %d corrected, %d unreadable\n",
		tag, model, st.Records, st.Kept, st.Abstained, st.Corrected, st.Invalid)
	tw := p.table(false)
	for _, l := range record.SortedKeys(st.AbstainByLabel) {
		fmt.Fprintf(tw, "  abstains on label %s\t%.1f%%\n", l, 100*st.AbstainByLabel[l])
	}
	for _, s := range record.SortedKeys(st.AbstainByStatus) {
		fmt.Fprintf(tw, "  abstains on status %s\t%.1f%%\n", s, 100*st.AbstainByStatus[s])
	}
	p.flush(tw)
}

// teacherWarnings are what a teacher's decisions warn of.
func teacherWarnings(st teacher.Stats) []string {
	if st.InformationGap {
		return []string{teacher.InformationGapWarning}
	}
	return nil
}

// WriteText writes the teacher's decisions.
func (r *TeachResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	p.teacher(SimTag(r.Simulated), r.Model, r.Teacher)
	return p.err
}

// Warnings warn of an information gap.
func (r *TeachResult) Warnings() []string { return teacherWarnings(r.Teacher) }

// panel writes each teacher of a panel and how they agree.
func (p *printer) panel(tag string, pn *teacher.PanelStats) {
	p.f("%steacher panel of %d (quorum %s):\n", tag, len(pn.Teachers), pn.Quorum)
	tw := p.table(false)
	fmt.Fprintln(tw, "  teacher\tfamily\tkept\tabstained\tcorrected\tunreadable")
	for _, t := range pn.Teachers {
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%d\t%d\n", t.Model, t.Family, t.Kept, t.Abstained, t.Corrected, t.Invalid)
	}
	p.flush(tw)
	for _, pa := range pn.Pairwise {
		p.f("  %s vs %s: Scott's pi %s %s over %d records\n", pa.A, pa.B, pa.ScottPi.Value, ciText(pa.ScottPi.CI), pa.Records)
	}
	p.f("  Fleiss' kappa %s %s\n", pn.FleissKappa.Value, ciText(pn.FleissKappa.CI))
}

// calibration writes one calibration: its teacher, versions and test
// figures.
func (p *printer) calibration(tag string, r *refine.Result) {
	model := r.Original.Model
	if r.Panel != nil {
		p.panel(tag, r.Panel)
		p.teacher("", "the panel's decisions", r.Teacher)
	} else {
		p.teacher(tag, model, r.Teacher)
	}
	for _, b := range r.Blind {
		p.f("label-blind check of %s: predicted %d, %d contrary to the recorded label; kept %d of those: rationalisation rate %s %s\n",
			b.Model, b.Predicted, b.Contrary, b.Rationalised, b.RationalisationRate.Value, ciText(b.RationalisationRate.CI))
	}
	if b := r.BlindAgreement; b != nil {
		p.f("the blind teacher against the outcomes on %d training records: pi %s %s; the judge on the same records %s %s; difference %s %s\n",
			b.Records, b.Value, ciText(b.CI), b.Judge.Value, ciText(b.Judge.CI), b.Difference.Value, ciText(b.Difference.CI))
	}
	if rt := r.Retest; rt != nil {
		p.retest(r.Judge+" (original, on validation)", rt)
	}
	p.f("%s%s: %d iteration(s); stopped: %s\n", tag, r.Judge, r.Iterations, r.StopReason)
	tw := p.table(true)
	fmt.Fprintf(tw, "\tversion\thash\ttrain pi\tunmotivated pi\tval pi\tval gain [%.0f%%]\tval flips\tval fail recall\tval pass recall\tdisagreements\taccepted\tdropped\t\n", 100*r.Selection.Level)
	for i, v := range r.Versions {
		mark := ""
		if i == r.Selected {
			mark = "*"
		}
		fmt.Fprintf(tw, "\t%d%s\t%.12s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%d\t%d\t%d\t\n", v.Iteration, mark, v.Hash, v.TrainPi, shortValue(v.TrainUnmotivated.Value), v.ValPi, gainText(v.ValGain),
			v.ValFlips, shortValue(v.ValFailRecall), shortValue(v.ValPassRecall), v.Disagreements, len(v.Accepted), v.Dropped)
	}
	p.flush(tw)
	p.f("  selected by %s: %s\n", r.Selection.Rule, r.Selection.Why)
	if len(r.Refused) > 0 {
		var causes []string
		for _, c := range refine.CountRefusals(r.Refused) {
			causes = append(causes, fmt.Sprintf("%s %d", c.Cause, c.Count))
		}
		p.f("  revisions refused: %s (first: iteration %d, %s)\n", strings.Join(causes, ", "), r.Refused[0].Iteration, r.Refused[0].Detail)
	}
	line := func(name string, e *judge.Evaluation) {
		f := e.Figures["scott_pi"]
		p.f("  test %-28s scott_pi %s %s\n", name, f.Value, ciText(f.CI))
	}
	line("original", r.Original)
	if r.Tuned != nil {
		line(fmt.Sprintf("threshold tuned (%d)", r.TunedThreshold), r.Tuned)
	}
	line("calibrated", r.Calibrated)
	g := r.Gain["scott_pi"]
	p.f("  gain (paired)                     %s %s\n", g.Value, g.CI)
}

// gainText is a paired gain with its interval, short.
func gainText(f metrics.Figure) string {
	if !f.Value.Defined() {
		return "undefined"
	}
	if f.CI == nil || !f.CI.Defined() {
		return fmt.Sprintf("%+.3f", f.Value.V)
	}
	return fmt.Sprintf("%+.3f [%+.3f, %+.3f]", f.Value.V, f.CI.Lo, f.CI.Hi)
}

func shortValue(v metrics.Value) string {
	if !v.Defined() {
		return "undefined"
	}
	return fmt.Sprintf("%.3f", v.V)
}

// repeats writes repeated runs and their summary.
func (p *printer) repeats(runs []refine.Run, s *refine.RepeatSummary) {
	p.f("\n%d runs:\n", s.Runs)
	tw := p.table(false)
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
	p.flush(tw)
	ci := "none"
	if s.GainCI != nil {
		ci = fmt.Sprintf("[%.4f, %.4f]", s.GainCI[0], s.GainCI[1])
	}
	p.f("gain over runs: mean %+.4f, sd %.4f, range [%+.4f, %+.4f], 95%% t interval of the mean %s; %d of %d runs with an interval above 0\n",
		s.MeanGain, s.SDGain, s.MinGain, s.MaxGain, ci, s.Positive, s.Runs)
	p.f("selection stability: %.0f%% of runs chose the most chosen version (%d distinct)\n", 100*s.Stability, len(s.Selected))
	for i, e := range s.Edits {
		if i == 5 {
			p.f("  ... %d more edits\n", len(s.Edits)-5)
			break
		}
		p.f("  accepted in %d of %d runs: [%s] %s\n", e.Runs, s.Runs, e.Kind, e.Text)
	}
}

// WriteText writes the calibration, its repeats and its ablation.
func (r *CalibrateResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	tag := SimTag(r.Simulated)
	if len(r.Starts) > 0 {
		p.starts(r.Starts)
	}
	if r.StartEach != nil {
		p.startEach(r.StartEach)
	}
	p.calibration(tag, r.Result)
	if r.RepeatsSummary != nil {
		p.repeats(r.Repeats, r.RepeatsSummary)
	}
	if r.Without != nil {
		p.f("\nwithout %s:\n", r.Ablation.Input)
		p.calibration(tag, r.Without)
	}
	return p.err
}

// Warnings warn of a panel that disagrees and of an information gap.
func (r *CalibrateResult) Warnings() []string {
	ws := inputWarnings(0, r.InputsCut)
	if r.ValRecords < 30 || r.ValGroups < 10 {
		ws = append(ws, fmt.Sprintf("validation holds only %d records in %d groups: the version it selects rests on too few to trust (at least 30 records in 10 groups); --repeats 5 shows how much the result varies", r.ValRecords, r.ValGroups))
	}
	for _, res := range []*refine.Result{r.Result, r.Without} {
		if res == nil {
			continue
		}
		if res.Panel != nil && res.Panel.Warning != "" {
			ws = append(ws, res.Panel.Warning)
		}
		ws = append(ws, teacherWarnings(res.Teacher)...)
		ws = append(ws, res.Warnings...)
		if b := res.BlindAgreement; b != nil && b.Note != "" {
			ws = append(ws, b.Note)
		}
	}
	return ws
}

// WriteText writes the noise before and after the teacher.
func (r *NoiseResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	nr := r.Noise
	p.f("%s%d of %d labels flipped: noise %.1f%% before the teacher, %.1f%% after (over %d kept)\n",
		SimTag(r.Simulated), nr.Flipped, nr.Records, 100*nr.Before, 100*nr.After, nr.Kept)
	for _, l := range record.SortedKeys(nr.Removed) {
		c := nr.Removed[l]
		p.f("  true %s: removed %d of %d flipped, %d of %d not flipped\n", l, c.FlippedRemoved, c.Flipped, c.CleanRemoved, c.Clean)
	}
	return p.err
}

// WriteText writes each version's agreement per window.
func (r *DriftResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	tw := p.table(false)
	fmt.Fprintf(tw, "%s%s\trecords", SimTag(r.Simulated), r.By)
	for _, s := range r.Specs {
		fmt.Fprintf(tw, "\t%s %.8s", s.Name, s.Version())
	}
	fmt.Fprintln(tw)
	for _, win := range r.Windows {
		start := win.Start.Format("2006-01")
		if r.By == refine.ByWeek {
			start = win.Start.Format("2006-01-02")
		}
		fmt.Fprintf(tw, "%s\t%d", start, win.N)
		for _, s := range r.Specs {
			fg := win.Pi[s.Version()]
			fmt.Fprintf(tw, "\t%s %s", fg.Value, fg.CI)
		}
		fmt.Fprintln(tw)
	}
	p.flush(tw)
	return p.err
}

// WriteText writes the round's counts and rates.
func (r *ACRRoundResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	st := r.Stats
	p.f("%sround %d: %d instructions, %d samples: %d single-turn records (sample won), %d critique records, %d skipped\n",
		SimTag(r.Simulated), r.Round, st.Instructions, st.Samples, st.SingleTurn, st.Critique, st.Skipped)
	p.f("  sample win rate %s; sample pass rate %s; best sample pass rate %s; reference pass rate %s\n",
		acr.RateText(st.WinRate, st.WinRateCI), acr.RateText(st.SamplePassRate, st.SamplePassRateCI),
		acr.RateText(st.BestPassRate, st.BestPassRateCI), acr.RateText(st.ReferencePassRate, st.ReferencePassRateCI))
	p.f("  decided by: %s\n  written: %s, %s\n", Counts(st.DecidedBy, "nothing"), r.Output, r.Lineage)
	return p.err
}

// WriteText says how many instructions were written where.
func (r *ACRInstructionsResult) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "%d instructions written to %s\n", r.Instructions, r.Output)
	return err
}

// WriteText writes the judge check's agreement, self-preference and flags.
func (r *ACRCheckResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	res := r.Check
	p.f("%sjudge check of %s (%s): %d pairs the tests separate (%d against the reference, %d between samples), over %d instructions\n",
		SimTag(r.Simulated), r.Pairwise, r.JudgeModel, res.Pairs, res.ReferencePairs, res.SamplePairs, res.Instructions)
	p.f("  agreement with the tests: %s\n", report.PercentEstimate(res.Agreement))
	p.f("    where the executor decides (one side passes, %d pairs): %s\n", res.ExecutorDecided, report.PercentEstimate(res.AgreementExecutor))
	p.f("    where the judge decides (neither passes, %d pairs): %s\n", res.JudgeDecided, report.PercentEstimate(res.AgreementJudge))
	bias := "undefined (" + res.ReferenceBias.Value.Undefined + ")"
	if v := res.ReferenceBias; v.Value.Defined() {
		bias = fmt.Sprintf("%+.2f", v.Value.V)
		if v.CI != nil {
			bias += fmt.Sprintf(" [%+.2f, %+.2f]", v.CI.Lo, v.CI.Hi)
		}
	}
	p.f("  leaning toward the reference where both pass (%d pairs; -1 the sample, +1 the reference): %s\n", res.Tied, bias)
	p.f("  self-preference: %s (%d of %d disagreements against the reference; %d judge ties)\n", report.PercentEstimate(res.SelfPreference),
		res.SelfPreferred, res.SelfPreferred+res.JudgeTies, res.JudgeTies)
	if len(res.Flags) == 0 {
		p.f("  ok: agreement >= %.0f%%, self-preference <= %.0f%%\n", 100*res.MinAgreement, 100*res.MaxSelfPreference)
	}
	for _, fl := range res.Flags {
		p.f("  FLAG: %s\n", fl)
	}
	return p.err
}

// WriteText writes one line a round.
func (r *ACRReportResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	for _, st := range r.Rounds {
		p.f("round %d: %d instructions, %d single-turn, %d critique, %d skipped; win rate %s, sample pass rate %s\n",
			st.Round, st.Instructions, st.SingleTurn, st.Critique, st.Skipped, acr.RateText(st.WinRate, st.WinRateCI), acr.RateText(st.SamplePassRate, st.SamplePassRateCI))
	}
	return p.err
}

// WriteText writes what the build kept and dropped.
func (r *BenchBuildResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	p.f("%s\nwritten to %s in %.0f s\n", r.Describe(), r.File, r.Seconds)
	tw := p.table(false)
	for _, rule := range record.SortedKeys(r.PerRule) {
		fmt.Fprintf(tw, "  rule %s\t%d\n", rule, r.PerRule[rule])
	}
	p.flush(tw)
	reasons := map[string]int{}
	for _, d := range r.Dropped {
		reasons[strings.SplitN(d.Reason, " (", 2)[0]]++
	}
	for _, reason := range record.SortedKeys(reasons) {
		p.f("  dropped: %s: %d\n", reason, reasons[reason])
	}
	if len(r.SetAside) > 0 {
		p.f("  set aside (canonical solution fails): %s\n", strings.Join(r.SetAside, ", "))
	}
	return p.err
}

// WriteText writes a table of every metric's and judge's figures.
func (r *BenchRunResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	tw := p.table(true)
	fmt.Fprintf(tw, "%s%d programs\t%s\tinvalid\t\n", SimTag(r.Simulated), r.Programs, strings.Join(bench.MetaFigures, "\t"))
	row := func(name string, figs map[string]metrics.Figure, invalid string) {
		fmt.Fprintf(tw, "%s", name)
		for _, f := range bench.MetaFigures {
			fg := figs[f]
			cell := fg.Value.String()
			if fg.CI != nil && fg.CI.Defined() {
				cell += fmt.Sprintf(" [%.2f, %.2f]", fg.CI.Lo, fg.CI.Hi)
				if fg.CI.Warning != "" {
					cell += " (!)"
				}
			}
			fmt.Fprintf(tw, "\t%s", cell)
		}
		fmt.Fprintf(tw, "\t%s\t\n", invalid)
	}
	for _, e := range r.Evaluations {
		row(e.Name, e.Figures, fmt.Sprint(e.Invalid))
		if e.WithoutScore5 != nil {
			row("  without score 5", e.WithoutScore5, "")
		}
	}
	p.flush(tw)
	p.f("Intervals: 95%%, %d bootstrap resamples of whole problems; (!) marks one resting on too few problems to trust.\n", r.Resamples)
	return p.err
}

// WriteText writes the agreement figures, and the classification of the
// second rater against the first.
func (r *AgreementResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	p.f("%s: %d items rated by %s", r.File, r.Items, strings.Join(r.Raters, ", "))
	if r.Skipped > 0 {
		p.f(" (%d rows left out: a value is missing)", r.Skipped)
	}
	p.f("\n")
	tw := p.table(false)
	line := func(name string, e *metrics.Figure) {
		if e != nil {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", name, e.Value, ciText(e.CI))
		}
	}
	line("observed agreement", r.ObservedAgreement)
	line("Scott's pi", r.ScottPi)
	line("Cohen's kappa", r.CohenKappa)
	line("Bennett's S", r.BennettS)
	line("Krippendorff's alpha ("+r.Alpha.Level+")", &r.Alpha.Figure)
	p.flush(tw)
	c := r.Classification
	if c == nil {
		return p.err
	}
	p.f("\n%s against %s as the reference: accuracy %s, MCC %s\n", r.Raters[1], r.Raters[0], c.Accuracy, c.MCC)
	tw = p.table(true)
	fmt.Fprintln(tw, "class\tprecision\trecall\tF1\tsupport\t")
	for _, m := range c.PerClass {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t\n", m.Class, m.Precision, m.Recall, m.F1, m.Support)
	}
	p.flush(tw)
	p.f("\nconfusion (rows %s, columns %s):\n", r.Raters[0], r.Raters[1])
	tw = p.table(true)
	fmt.Fprintf(tw, "\t%s\t\n", strings.Join(c.Classes, "\t"))
	for i, row := range c.Confusion {
		cells := make([]string, len(row))
		for j, v := range row {
			cells[j] = strconv.Itoa(v)
		}
		fmt.Fprintf(tw, "%s\t%s\t\n", c.Classes[i], strings.Join(cells, "\t"))
	}
	p.flush(tw)
	return p.err
}

func num(v *float64) string {
	if v == nil {
		return "undefined"
	}
	return fmt.Sprintf("%.3f", *v)
}

func interval(v []float64) string {
	if len(v) != 2 {
		return "no interval"
	}
	return fmt.Sprintf("%.3f, %.3f", v[0], v[1])
}

// WriteText writes the demo's findings and where its files are.
func (r *DemoResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	p.f("[simulated] gavel demo: %d synthetic records, seed %d, in %.0f s\n", r.Records, r.Seed, r.Seconds)
	for _, j := range r.Judges {
		p.f("  %-9s test pi %s -> %s (gain %s [%s]) in %d iteration(s); %d revision(s) over the %d-character cap\n", j.Judge,
			num(j.Test.Original.ScottPi), num(j.Test.Calibrated.ScottPi), num(j.Gain.ScottPi), interval(j.Gain.CI), j.Iterations, j.RevisionsOverCap, j.MaxPromptChars)
	}
	for _, c := range r.Controls {
		p.f("  control %-18s %-9s pi %s -> %s (gain %s [%s])\n", c.Name, c.Judge,
			num(c.Original.ScottPi), num(c.Calibrated.ScottPi), num(c.Gain.ScottPi), interval(c.Gain.CI))
	}
	p.f("  teacher: %d kept, %d abstained, %d corrected\n", r.Teacher.Kept, r.Teacher.Abstained, r.Teacher.Corrected)
	p.f("  label noise %.1f%% -> %.1f%% after the teacher\n", 100*r.Noise.Before, 100*r.Noise.After)
	p.f("  teacher abstains on %.0f%% of failures with the reference, %.0f%% without\n",
		100*r.Ablation.TeacherAbstainFailWith, 100*r.Ablation.TeacherAbstainFailWithout)
	p.f("  model calls: %d live (simulated), %d from the cache\n", r.ModelCalls.Live, r.ModelCalls.Cached)
	p.f("report: %s\nsummary: %s and %s\n", r.Files["report.html"], r.Files["summary.md"], r.Files["summary.json"])
	if r.Files["store"] != "" {
		p.f("store: %s (keep it to rerun commands on it; it is safe to delete)\n", r.Files["store"])
		p.f("runs: gavel --db %s runs list, or gavel --db %s view to open every run down to its records\n", r.Files["store"], r.Files["store"])
	} else {
		p.f("store: removed (give --out DIR to keep it)\n")
	}
	return p.err
}

func sortedKeys(m map[string]string) []string { return record.SortedKeys(m) }

// joinArgs is a command line, arguments with spaces quoted.
func joinArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if strings.ContainsAny(a, " \t\"'") {
			out[i] = strconv.Quote(a)
		}
	}
	return strings.Join(out, " ")
}

// joinShort is prompt versions by their first 12 characters.
func joinShort(hashes []string) string {
	out := make([]string, len(hashes))
	for i, h := range hashes {
		out[i] = h
		if len(h) > 12 {
			out[i] = h[:12]
		}
	}
	return strings.Join(out, ", ")
}

// tooLong counts the verdicts of inputs refused for their length.
func tooLong(vs map[string]judge.Verdict) int {
	n := 0
	for _, v := range vs {
		if v.ParseError == llm.InputTooLong {
			n++
		}
	}
	return n
}

// inputWarnings say how many records were too long for the model, and
// how many were cut.
func inputWarnings(tooLong, cut int) []string {
	var ws []string
	if tooLong > 0 {
		ws = append(ws, fmt.Sprintf("%d record(s) were longer than the model's context window: their verdicts are invalid (input_too_long); --max-input-chars cuts inputs to fit", tooLong))
	}
	if cut > 0 {
		ws = append(ws, fmt.Sprintf("%d record(s) had inputs cut to --max-input-chars (gavel runs records RUN shows which)", cut))
	}
	return ws
}

// Warnings say how many inputs were too long for the model, or cut.
func (r *JudgeResult) Warnings() []string { return inputWarnings(r.InputTooLong, r.InputsCut) }

// Warnings say how many inputs were too long for the model, or cut.
func (r *EvalResult) Warnings() []string { return inputWarnings(r.InputTooLong, r.InputsCut) }
