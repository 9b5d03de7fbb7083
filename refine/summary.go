package refine

import (
	"fmt"
	"math"
	"strings"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/metrics"
)

// PromptText is a prompt as people read it in diffs: the system prompt
// and, for rubric judges, the checks.
func PromptText(s *judge.Spec) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(s.System, "\n"))
	b.WriteString("\n")
	if len(s.Checks) > 0 {
		b.WriteString("\nChecks:\n")
		for _, c := range s.Checks {
			fmt.Fprintf(&b, "- %s: %s\n", c.Name, c.Question)
		}
	}
	return b.String()
}

// Diff is the unified diff between two prompt versions.
func Diff(a, b *judge.Spec) string {
	d, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(PromptText(a)), B: difflib.SplitLines(PromptText(b)),
		FromFile: a.Name + "@" + a.ShortVersion(), ToFile: b.Name + "@" + b.ShortVersion(), Context: 3,
	})
	return d
}

// PiCI is a value with its interval as [lo, hi], the shape summary.json
// has always used (scott_pi, ci); Figures holds every figure in gavel's
// one shape for a figure, {"value", "ci": {"lo", "hi", ...}}, as every
// command's JSON does.
type PiCI struct {
	ScottPi   *float64   `json:"scott_pi"`
	CI        []float64  `json:"ci"`
	Undefined string     `json:"undefined,omitempty"`
	Figures   FigureList `json:"figures,omitempty"`
}

// FigureList holds every reported figure of an evaluation.
type FigureList map[string]metrics.Figure

func piCI(f metrics.Figure) PiCI {
	p := PiCI{CI: []float64{}}
	if f.Value.Defined() {
		v := f.Value.V
		p.ScottPi = &v
	} else {
		p.Undefined = f.Value.Undefined
	}
	if f.CI != nil && f.CI.Defined() {
		p.CI = []float64{f.CI.Lo, f.CI.Hi}
	}
	return p
}

func evalSummary(e *judge.Evaluation) *PiCI {
	if e == nil {
		return nil
	}
	p := piCI(e.Figures["scott_pi"])
	p.Figures = FigureList(e.Figures)
	return &p
}

// JudgeSummary is one judge's line in summary.json: the test figures of
// the original, threshold-tuned (rubric) and calibrated prompts, and the
// gain.
type JudgeSummary struct {
	Judge string `json:"judge"`
	Test  struct {
		Original       *PiCI `json:"original"`
		ThresholdTuned *PiCI `json:"threshold_tuned"`
		Calibrated     *PiCI `json:"calibrated"`
	} `json:"test"`
	TunedThreshold  int      `json:"tuned_threshold,omitempty"`
	Gain            PiCI     `json:"gain"`
	Iterations      int      `json:"iterations"`
	Versions        int      `json:"versions"`
	SelectedVersion string   `json:"selected_version"`
	StopReason      string   `json:"stop_reason"`
	Inputs          []string `json:"inputs"`
	// MaxPromptChars is the length cap; RevisionsOverCap counts the
	// revisions refused for it.
	MaxPromptChars   int `json:"max_prompt_chars"`
	RevisionsOverCap int `json:"revisions_over_cap"`
}

// Summary returns a calibration's line for summary.json.
func (r *Result) Summary() JudgeSummary {
	s := JudgeSummary{Judge: r.Judge, Iterations: r.Iterations, Versions: len(r.Versions),
		SelectedVersion: r.Versions[r.Selected].Hash, StopReason: r.StopReason, Inputs: r.Inputs, TunedThreshold: r.TunedThreshold,
		MaxPromptChars: r.MaxChars, RevisionsOverCap: r.TooLong}
	s.Test.Original = evalSummary(r.Original)
	s.Test.ThresholdTuned = evalSummary(r.Tuned)
	s.Test.Calibrated = evalSummary(r.Calibrated)
	s.Gain = piCI(r.Gain["scott_pi"])
	s.Gain.Figures = FigureList(r.Gain)
	return s
}

// ValueOrNaN is for charts: a defined value, else NaN (a gap).
func ValueOrNaN(v metrics.Value) float64 {
	if v.Defined() {
		return v.V
	}
	return math.NaN()
}

// ControlSummary is one control run's line in summary.json: the same
// calibration with other teacher or editor models, so a reader can see
// how the gain depends on the evidence.
type ControlSummary struct {
	Name         string `json:"name"`
	Judge        string `json:"judge"`
	TeacherModel string `json:"teacher_model"`
	EditorModel  string `json:"editor_model"`
	Original     PiCI   `json:"original"`
	Calibrated   PiCI   `json:"calibrated"`
	Gain         PiCI   `json:"gain"`
	// Selected is the selected version's iteration (0: the original).
	Selected         int `json:"selected_iteration"`
	RevisionsOverCap int `json:"revisions_over_cap"`
}

// Control returns a calibration's line as a named control.
func (r *Result) Control(name, teacherModel, editorModel string) ControlSummary {
	c := ControlSummary{Name: name, Judge: r.Judge, TeacherModel: teacherModel, EditorModel: editorModel,
		Original: *evalSummary(r.Original), Calibrated: *evalSummary(r.Calibrated),
		Gain: piCI(r.Gain["scott_pi"]), Selected: r.Versions[r.Selected].Iteration, RevisionsOverCap: r.TooLong}
	c.Gain.Figures = FigureList(r.Gain)
	return c
}
