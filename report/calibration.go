package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
	"github.com/gavelhq/gavel/teacher"
)

//go:embed templates/calibration.html
var calibrationHTML string

// CalibrationReport is the page of `gavel calibrate --report` and of the
// demo.
type CalibrationReport struct {
	Title     string
	Simulated bool
	Split     string
	Version   string
	Sections  []*CalibrationSection
	Ablation  *Ablation
	Noise     *refine.NoiseResult
	Calls     *llm.RunStats
	// Controls are the same calibrations run with other teacher or editor
	// models (the simulated world's controls), beside the main ones.
	Controls []*Control
	// Repeats are repeated calibrations (calibrate --repeats), with their
	// summary; the first is the one Sections show.
	Repeats       []refine.Run
	RepeatSummary *refine.RepeatSummary
	// Starts are the starting prompts of a framing search (calibrate
	// --start), before any edit; ValRecords the validation part's size.
	Starts     []StartRow
	ValRecords int
}

// StartRow is one starting prompt on train and validation, and its
// paired validation gain over the first.
type StartRow struct {
	Judge, Prompt       string
	Train, Val, ValGain metrics.Figure
	Chosen              bool
}

// startsChart draws each start's validation pi with its interval.
func startsChart(ss []StartRow) template.HTML {
	if len(ss) == 0 {
		return ""
	}
	var rows []Interval
	for _, st := range ss {
		for _, part := range []struct {
			name string
			f    metrics.Figure
		}{{"train", st.Train}, {"val", st.Val}} {
			iv := Interval{Name: st.Judge + " on " + part.name, Defined: part.f.Value.Defined(), Value: part.f.Value.V, Lo: part.f.Value.V, Hi: part.f.Value.V}
			if part.f.CI != nil && part.f.CI.Defined() {
				iv.Lo, iv.Hi = part.f.CI.Lo, part.f.CI.Hi
			}
			rows = append(rows, iv)
		}
	}
	return IntervalChart("Scott's pi of each starting prompt before any edit, 95% intervals", rows, -0.25, 1)
}

// flipsChart draws the judge's own flip rate (its retest) beside each
// version's share of validation verdicts that differ from the original's.
func flipsChart(r *refine.Result, val int) template.HTML {
	rt := r.Retest
	if rt == nil || val == 0 {
		return ""
	}
	f := rt.FlipRate
	rows := []Interval{{Name: "the original asked twice", Defined: f.Value.Defined(), Value: f.Value.V, Lo: f.Value.V, Hi: f.Value.V}}
	if f.CI != nil && f.CI.Defined() {
		rows[0].Lo, rows[0].Hi = f.CI.Lo, f.CI.Hi
	}
	for _, v := range r.Versions[1:] {
		share := float64(v.ValFlips) / float64(val)
		rows = append(rows, Interval{Name: fmt.Sprintf("version %d against the original", v.Iteration), Defined: true, Value: share, Lo: share, Hi: share})
	}
	return IntervalChart("Share of validation verdicts that flip: the judge by itself, and each version", rows, 0, 0.6)
}

// Control is one control calibration.
type Control struct {
	Name, Description, TeacherModel, EditorModel string
	Result                                       *refine.Result
}

// CalibrationSection is one calibration.
type CalibrationSection struct {
	Title  string
	Result *refine.Result
	// Records lets the page show sample teacher justifications with their
	// outcomes.
	Records []*record.Record
}

// Ablation compares a calibration with and without one input.
type Ablation struct {
	Input         string
	With, Without *refine.Result
}

type evalRow struct {
	// Name is the table's label; Short the chart's, distinct per row.
	Name, Short string
	Eval        *judge.Evaluation
}

type sample struct {
	Action, RecordID, Outcome, Justification string
}

type diffLine struct{ Class, Text string }

func pct(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }

var calTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("calibration").Funcs(template.FuncMap{
		"deref": func(p *float64) float64 { return *p },
		"short": func(s string) string { return s[:min(12, len(s))] },
		"validationDropped": func(v *refine.Version) []refine.DroppedEdit {
			var out []refine.DroppedEdit
			for _, d := range v.DroppedEdits {
				if strings.HasPrefix(d.Why, "validation:") {
					out = append(out, d)
				}
			}
			return out
		},
		"join": strings.Join,
		"pct":  pct,
		"value": func(v metrics.Value) string {
			if !v.Defined() {
				return "undefined"
			}
			return fmt.Sprintf("%.3f", v.V)
		},
		"interval":    func(iv *metrics.Interval) string { return ciText(iv, 3) },
		"refusals":    refine.CountRefusals,
		"fig":         func(e *judge.Evaluation, name string) metrics.Figure { return e.Figures[name] },
		"failAbstain": func(r *refine.Result) string { return pct(r.Teacher.AbstainByLabel[record.Fail]) },
	}).Parse(calibrationHTML))
})

// sectionView adds what the template draws to a section.
type sectionView struct {
	*CalibrationSection
	Rows                               []evalRow
	TestChart, IterChart, TeacherChart template.HTML
	Samples                            []sample
	Diff                               string
	DiffLines                          []diffLine
	// Disagreements are the test records the selected prompt got wrong.
	Disagreements []Disagreement
}

func view(s *CalibrationSection) *sectionView {
	r := s.Result
	v := &sectionView{CalibrationSection: s}
	if r.CalibratedVerdicts != nil && r.Calibrated != nil {
		v.Disagreements = Disagreements(r.Kind, r.Calibrated.Threshold, r.Test, r.CalibratedVerdicts)
	}
	v.Rows = append(v.Rows, evalRow{"original", "original", r.Original})
	if r.Tuned != nil {
		v.Rows = append(v.Rows, evalRow{fmt.Sprintf("original, threshold tuned on train (%d)", r.TunedThreshold), fmt.Sprintf("threshold %d", r.TunedThreshold), r.Tuned})
	}
	v.Rows = append(v.Rows, evalRow{"calibrated (selected)", "calibrated", r.Calibrated})
	var rows []Interval
	for _, row := range v.Rows {
		f := row.Eval.Figures["scott_pi"]
		iv := Interval{Name: row.Short, Defined: f.Value.Defined(), Value: f.Value.V, Lo: f.Value.V, Hi: f.Value.V}
		if f.CI != nil && f.CI.Defined() {
			iv.Lo, iv.Hi = f.CI.Lo, f.CI.Hi
		}
		rows = append(rows, iv)
	}
	v.TestChart = IntervalChart("Test Scott's pi with 95% intervals", rows, -0.25, 1)
	train, val := Series{Name: "train (teacher-kept)"}, Series{Name: "validation (whole)"}
	for _, ver := range r.Versions {
		train.Points = append(train.Points, Point{float64(ver.Iteration), refine.ValueOrNaN(ver.TrainPi)})
		val.Points = append(val.Points, Point{float64(ver.Iteration), refine.ValueOrNaN(ver.ValPi)})
	}
	v.IterChart = LineChart("Scott's pi by iteration", "iteration (0 is the original prompt)", []Series{train, val}, -0.25, 1)
	// Teacher decisions by recorded status.
	byID := map[string]*record.Record{}
	for _, rec := range s.Records {
		byID[rec.ID] = rec
	}
	counts := map[record.Status]map[teacher.Action]int{}
	perAction := map[teacher.Action]int{}
	for _, d := range r.Decisions {
		rec := byID[d.RecordID]
		if rec == nil {
			continue
		}
		if counts[rec.Outcome.Status] == nil {
			counts[rec.Outcome.Status] = map[teacher.Action]int{}
		}
		counts[rec.Outcome.Status][d.Action]++
		if perAction[d.Action] < 3 && d.Justification != "" {
			perAction[d.Action]++
			v.Samples = append(v.Samples, sample{string(d.Action), d.RecordID, teacher.Outcome(rec.Outcome), d.Justification})
		}
	}
	sort.Slice(v.Samples, func(i, j int) bool { return v.Samples[i].Action < v.Samples[j].Action })
	var statuses []string
	for st := range counts {
		statuses = append(statuses, string(st))
	}
	sort.Strings(statuses)
	var bars []Bar
	for _, st := range statuses {
		c := counts[record.Status(st)]
		bars = append(bars, Bar{Label: st, Parts: []BarPart{
			{"kept", "#2ca02c", float64(c[teacher.Keep])},
			{"corrected", "#ff7f0e", float64(c[teacher.Correct])},
			{"abstained", "#d62728", float64(c[teacher.Abstain])},
		}})
	}
	v.TeacherChart = StackedBars("Teacher decisions by recorded status", bars)
	if r.Selected != 0 {
		v.Diff = refine.Diff(r.Versions[0].Spec, r.SelectedSpec())
		for _, l := range strings.Split(strings.TrimRight(v.Diff, "\n"), "\n") {
			cls := ""
			switch {
			case strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++"):
				cls = "add"
			case strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---"):
				cls = "del"
			}
			v.DiffLines = append(v.DiffLines, diffLine{cls, l})
		}
	}
	return v
}

// controlNotes is each control once, for its description.
func controlNotes(cs []*Control) []*Control {
	var out []*Control
	seen := map[string]bool{}
	for _, c := range cs {
		if !seen[c.Name] {
			seen[c.Name] = true
			out = append(out, c)
		}
	}
	return out
}

// controlsChart draws each control's gain with its interval.
func controlsChart(cs []*Control) template.HTML {
	if len(cs) == 0 {
		return ""
	}
	var rows []Interval
	for _, c := range cs {
		g := c.Result.Gain["scott_pi"]
		iv := Interval{Name: c.Result.Judge + " " + c.Name, Defined: g.Value.Defined(), Value: g.Value.V, Lo: g.Value.V, Hi: g.Value.V}
		if g.CI != nil && g.CI.Defined() {
			iv.Lo, iv.Hi = g.CI.Lo, g.CI.Hi
		}
		rows = append(rows, iv)
	}
	return IntervalChart("Test gain in Scott's pi by control, 95% intervals", rows, -0.25, 0.75)
}

// repeatCharts draws every repeated run's trajectory (validation pi by
// version) and each run's test gain with its interval.
func repeatCharts(runs []refine.Run) (template.HTML, template.HTML) {
	if len(runs) == 0 {
		return "", ""
	}
	var series []Series
	var gains []Interval
	for _, r := range runs {
		sr := Series{Name: fmt.Sprintf("seed %d", r.Seed)}
		for i, v := range r.Trajectory {
			sr.Points = append(sr.Points, Point{float64(i), v})
		}
		series = append(series, sr)
		iv := Interval{Name: fmt.Sprintf("seed %d", r.Seed)}
		if r.Gain.ScottPi != nil {
			iv.Defined, iv.Value, iv.Lo, iv.Hi = true, *r.Gain.ScottPi, *r.Gain.ScottPi, *r.Gain.ScottPi
			if len(r.Gain.CI) == 2 {
				iv.Lo, iv.Hi = r.Gain.CI[0], r.Gain.CI[1]
			}
		}
		gains = append(gains, iv)
	}
	return LineChart("Validation Scott's pi by version, each run", "version (0 is the original prompt)", series, -0.25, 1),
		IntervalChart("Test gain in Scott's pi by run, 95% intervals", gains, -0.25, 0.75)
}

// WriteCalibration renders the calibration page.
func WriteCalibration(w io.Writer, r *CalibrationReport) error {
	var views []*sectionView
	for _, s := range r.Sections {
		views = append(views, view(s))
	}
	traj, gains := repeatCharts(r.Repeats)
	var flips template.HTML
	if len(r.Sections) > 0 && r.Sections[0].Result != nil {
		flips = flipsChart(r.Sections[0].Result, r.ValRecords)
	}
	return calTmpl().Execute(w, struct {
		*CalibrationReport
		Sections      []*sectionView
		GapWarning    string
		ControlsChart template.HTML
		ControlNotes  []*Control
		RepeatChart   template.HTML
		RepeatGains   template.HTML
		StartsChart   template.HTML
		FlipsChart    template.HTML
	}{r, views, teacher.InformationGapWarning, controlsChart(r.Controls), controlNotes(r.Controls), traj, gains, startsChart(r.Starts), flips})
}

// WriteCalibrationMarkdown writes the same results as Markdown.
func WriteCalibrationMarkdown(w io.Writer, r *CalibrationReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", r.Title)
	if r.Simulated {
		b.WriteString("> **Simulated.** Everything here ran on gavel's simulated world (`--model sim`), a test double. None of it is evidence about any real model.\n\n")
	}
	fmt.Fprintf(&b, "Records: %s. Made by gavel %s.\n", r.Split, r.Version)
	val := func(v metrics.Value) string {
		if !v.Defined() {
			return "undefined"
		}
		return fmt.Sprintf("%.3f", v.V)
	}
	ci := func(f metrics.Figure) string {
		if f.CI == nil || !f.CI.Defined() {
			return ""
		}
		return ciText(f.CI, 3)
	}
	for _, s := range r.Sections {
		res := s.Result
		fmt.Fprintf(&b, "\n## %s\n\n", s.Title)
		fmt.Fprintf(&b, "%d iteration(s), %d version(s); selected version %d (`%.12s`) by the %s rule: %s. Stopped: %s. Length cap %d characters; %d revision(s) refused for length.\n\n",
			res.Iterations, len(res.Versions), res.Selected, res.Versions[res.Selected].Hash, res.Selection.Rule, res.Selection.Why, res.StopReason, res.MaxChars, res.TooLong)
		for _, c := range refine.CountRefusals(res.Refused) {
			fmt.Fprintf(&b, "- revisions refused for %s: %d\n", c.Cause, c.Count)
		}
		b.WriteString("| prompt (test) | Scott's pi | 95% interval | fail precision | fail recall | pass recall | invalid |\n|---|---|---|---|---|---|---|\n")
		row := func(name string, e *judge.Evaluation) {
			m := e.Metrics
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %d |\n", name, val(m.ScottPi), ci(e.Figures["scott_pi"]), val(m.FailPrecision), val(m.FailRecall), val(m.PassRecall), e.Invalid)
		}
		row("original", res.Original)
		if res.Tuned != nil {
			row(fmt.Sprintf("original, threshold %d tuned on train", res.TunedThreshold), res.Tuned)
		}
		row("calibrated", res.Calibrated)
		g := res.Gain["scott_pi"]
		fmt.Fprintf(&b, "| **gain** (paired) | %s | %s | | | | |\n\n", val(g.Value), ci(g))
		t := res.Teacher
		fmt.Fprintf(&b, "Teacher: %d kept, %d abstained, %d corrected of %d; abstention on failures %s, on passes %s.\n",
			t.Kept, t.Abstained, t.Corrected, t.Records, pct(t.AbstainByLabel[record.Fail]), pct(t.AbstainByLabel[record.Pass]))
		if t.InformationGap {
			fmt.Fprintf(&b, "\n**Information gap:** %s\n", teacher.InformationGapWarning)
		}
		if p := res.Panel; p != nil {
			fmt.Fprintf(&b, "\nTeacher panel (quorum %s); the counts above are the panel's.\n\n| teacher | family | kept | abstained | corrected |\n|---|---|---|---|---|\n", p.Quorum)
			for _, m := range p.Teachers {
				fmt.Fprintf(&b, "| `%s` | %s | %d | %d | %d |\n", m.Model, m.Family, m.Kept, m.Abstained, m.Corrected)
			}
			for _, pa := range p.Pairwise {
				fmt.Fprintf(&b, "\n`%s` vs `%s`: Scott's pi %s %s.", pa.A, pa.B, val(pa.ScottPi.Value), ciText(pa.ScottPi.CI, 3))
			}
			fmt.Fprintf(&b, "\nFleiss' kappa %s %s.\n", val(p.FleissKappa.Value), ciText(p.FleissKappa.CI, 3))
			if p.Warning != "" {
				fmt.Fprintf(&b, "\n**One family:** %s\n", p.Warning)
			}
		}
		if len(res.Blind) > 0 {
			b.WriteString("\nLabel-blind check:\n\n| teacher | contrary to the label | kept of those | rationalisation rate | 95% interval |\n|---|---|---|---|---|\n")
			for _, bl := range res.Blind {
				fmt.Fprintf(&b, "| `%s` | %d | %d | %s | %s |\n", bl.Model, bl.Contrary, bl.Rationalised, val(bl.RationalisationRate.Value), ciText(bl.RationalisationRate.CI, 3))
			}
		}
		b.WriteString("\n| version | train pi | val pi | val gain (paired) | interval | val fail recall | val pass recall | accepted edits | dropped unpaired |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, v := range res.Versions {
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %d | %d |\n", v.Iteration, val(v.TrainPi), val(v.ValPi), val(v.ValGain.Value), ci(v.ValGain),
				val(v.ValFailRecall), val(v.ValPassRecall), len(v.Accepted), v.Dropped)
		}
		if res.Selected != 0 {
			fmt.Fprintf(&b, "\n```diff\n%s```\n", refine.Diff(res.Versions[0].Spec, res.SelectedSpec()))
		}
	}
	if rs := r.RepeatSummary; rs != nil {
		fmt.Fprintf(&b, "\n## Repeated calibrations\n\n%d runs: test gain mean %+.3f, sd %.3f, range [%+.3f, %+.3f]", rs.Runs, rs.MeanGain, rs.SDGain, rs.MinGain, rs.MaxGain)
		if rs.GainCI != nil {
			fmt.Fprintf(&b, ", 95%% t interval of the mean [%.3f, %.3f]", rs.GainCI[0], rs.GainCI[1])
		}
		fmt.Fprintf(&b, "; %d of %d runs with a gain interval above zero; selection stability %s.\n\n| seed | selected | gain | 95%% interval |\n|---|---|---|---|\n", rs.Positive, rs.Runs, pct(rs.Stability))
		for _, run := range r.Repeats {
			gain, iv := "undefined", ""
			if run.Gain.ScottPi != nil {
				gain = fmt.Sprintf("%+.3f", *run.Gain.ScottPi)
			}
			if len(run.Gain.CI) == 2 {
				iv = fmt.Sprintf("[%.3f, %.3f]", run.Gain.CI[0], run.Gain.CI[1])
			}
			fmt.Fprintf(&b, "| %d | `%.12s` | %s | %s |\n", run.Seed, run.SelectedVersion, gain, iv)
		}
	}
	if len(r.Controls) > 0 {
		b.WriteString("\n## Controls\n\nThe same calibrations with a worse teacher or a proposer that ignores the evidence. The gain should depend on the evidence.\n\n")
		b.WriteString("| control | judge | teacher | editor | original pi | calibrated pi | gain | 95% interval |\n|---|---|---|---|---|---|---|---|\n")
		for _, c := range r.Controls {
			res := c.Result
			g := res.Gain["scott_pi"]
			fmt.Fprintf(&b, "| %s | %s | `%s` | `%s` | %s | %s | %s | %s |\n", c.Name, res.Judge, c.TeacherModel, c.EditorModel,
				val(res.Original.Metrics.ScottPi), val(res.Calibrated.Metrics.ScottPi), val(g.Value), ci(g))
		}
	}
	if len(r.Starts) > 0 {
		b.WriteString("\n## Starting prompts\n\n| start | prompt | train pi | val pi | val gain over the first |\n|---|---|---|---|---|\n")
		for _, st := range r.Starts {
			mark := ""
			if st.Chosen {
				mark = " (the loop's)"
			}
			fmt.Fprintf(&b, "| %s%s | `%.12s` | %s %s | %s %s | %s %s |\n", st.Judge, mark, st.Prompt, val(st.Train.Value), ci(st.Train),
				val(st.Val.Value), ci(st.Val), val(st.ValGain.Value), ci(st.ValGain))
		}
	}
	if len(r.Sections) > 0 && r.Sections[0].Result != nil {
		res := r.Sections[0].Result
		if ba := res.BlindAgreement; ba != nil {
			fmt.Fprintf(&b, "\nThe blind teacher against the outcomes on %d training records: pi %s %s; the judge %s %s; difference %s %s.",
				ba.Records, val(ba.Value), ci(metrics.Figure{Value: ba.Value, CI: ba.CI}), val(ba.Judge.Value), ci(ba.Judge), val(ba.Difference.Value), ci(ba.Difference))
			if ba.Note != "" {
				b.WriteString(" Note: " + ba.Note + ".")
			}
			b.WriteString("\n")
		}
		if rt := res.Retest; rt != nil {
			fmt.Fprintf(&b, "\nThe original asked twice on %d validation records: %d flips (%s %s), pi between the asks %s %s.\n",
				rt.Samples, rt.Flips, val(rt.FlipRate.Value), ci(rt.FlipRate), val(rt.ScottPi.Value), ci(rt.ScottPi))
		}
	}
	if a := r.Ablation; a != nil {
		fmt.Fprintf(&b, "\n## Information ablation: %s\n\n| | teacher abstains on failures | calibrated test pi |\n|---|---|---|\n", a.Input)
		fmt.Fprintf(&b, "| with | %s | %s |\n| without | %s | %s |\n", pct(a.With.Teacher.AbstainByLabel[record.Fail]), val(a.With.Calibrated.Metrics.ScottPi),
			pct(a.Without.Teacher.AbstainByLabel[record.Fail]), val(a.Without.Calibrated.Metrics.ScottPi))
	}
	if n := r.Noise; n != nil {
		fmt.Fprintf(&b, "\n## Label noise\n\n%s of %d training labels flipped: noise %s before the teacher, %s after.\n", pct(n.Flip), n.Records, pct(n.Before), pct(n.After))
	}
	if c := r.Calls; c != nil {
		fmt.Fprintf(&b, "\n## Model calls\n\n%d requests: %d sent, %d from the cache; %d input and %d output tokens; $%.4f.\n", c.Requests, c.Sent, c.CacheHits, c.Usage.InputTokens, c.Usage.OutputTokens, c.Cost)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Bar is one stacked bar.
type Bar struct {
	Label string
	Parts []BarPart
}

// BarPart is one segment of a stacked bar.
type BarPart struct {
	Name, Color string
	Value       float64
}

// StackedBars draws horizontal stacked bars, scaled to the longest, with
// each segment's count in it (where it fits) and each bar's total after it.
func StackedBars(title string, bars []Bar) template.HTML {
	const rowH, top, totalW = 24.0, 30.0, 40.0
	// Room for the longest bar label on the left and the longest legend
	// entry on the right (about 6.5 px a character at 11 px), after room
	// for the totals.
	left, right := 110.0, 120.0+totalW
	for _, b := range bars {
		left = math.Max(left, 16+6.5*float64(len([]rune(b.Label))))
		for _, p := range b.Parts {
			right = math.Max(right, totalW+34+6.5*float64(len([]rune(p.Name))))
		}
	}
	w := left + 330 + right
	h := top + rowH*float64(len(bars)) + 10
	if len(bars) > 0 {
		// Room for the legend too.
		h = math.Max(h, top+16*float64(len(bars[0].Parts))+10)
	}
	maxT := 1.0
	for _, b := range bars {
		t := 0.0
		for _, p := range b.Parts {
			t += p.Value
		}
		maxT = math.Max(maxT, t)
	}
	pw := w - left - right
	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %s %s" width="%s" height="%s" role="img" aria-label="%s">`, f(w), f(h), f(w), f(h), template.HTMLEscapeString(title))
	fmt.Fprintf(&s, `<text x="4" y="16" font-size="13" font-weight="bold">%s</text>`, template.HTMLEscapeString(title))
	for i, b := range bars {
		y := top + rowH*float64(i)
		fmt.Fprintf(&s, `<text x="%s" y="%s" font-size="11" text-anchor="end">%s</text>`, f(left-6), f(y+14), template.HTMLEscapeString(b.Label))
		x, total := left, 0.0
		for _, p := range b.Parts {
			bw := p.Value / maxT * pw
			if bw > 0 {
				fmt.Fprintf(&s, `<rect x="%s" y="%s" width="%s" height="18" fill="%s"><title>%s: %g</title></rect>`, f(x), f(y+2), f(bw), p.Color, template.HTMLEscapeString(p.Name), p.Value)
				if label := fmt.Sprintf("%g", p.Value); bw >= 8+6*float64(len(label)) {
					fmt.Fprintf(&s, `<text x="%s" y="%s" font-size="10" fill="#fff" text-anchor="middle">%s</text>`, f(x+bw/2), f(y+15), label)
				}
			}
			x += bw
			total += p.Value
		}
		fmt.Fprintf(&s, `<text x="%s" y="%s" font-size="10">%g</text>`, f(x+4), f(y+15), total)
	}
	if len(bars) > 0 {
		lx := left + pw + totalW
		for j, p := range bars[0].Parts {
			fmt.Fprintf(&s, `<rect x="%s" y="%s" width="10" height="10" fill="%s"/><text x="%s" y="%s" font-size="11">%s</text>`,
				f(lx+12), f(top+float64(j)*16), p.Color, f(lx+26), f(top+float64(j)*16+9), template.HTMLEscapeString(p.Name))
		}
	}
	s.WriteString(`</svg>`)
	return template.HTML(s.String())
}
