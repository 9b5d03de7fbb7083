package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"sync"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
)

//go:embed templates/eval.html
var evalHTML string

// EvalReport is the page of `gavel eval --report`.
type EvalReport struct {
	Title     string
	Simulated bool
	Split     string
	Intervals string
	Version   string
	Sections  []EvalSection
	// Comparison, when set, shows the paired differences of two judges.
	Comparison *Comparison
	// Metrics orders the figures (default judge.ReportedMetrics).
	Metrics []string
	// Retest is the judge asked twice (eval --retest); Flips and Paired
	// count the compared judges' differing verdicts, beside it.
	Retest        *judge.Retest
	Flips, Paired int
}

// EvalSection is one judge's evaluation.
type EvalSection struct {
	Name string
	Note string
	Eval *judge.Evaluation
	// Disagreements are the records it got wrong, shown folded.
	Disagreements []Disagreement
}

// Comparison is the paired difference A minus B.
type Comparison struct {
	A, B    string
	Figures map[string]metrics.Figure
	// Note says what is compared (e.g. a version's transfer to a model).
	Note string
}

var evalTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("eval").Funcs(template.FuncMap{
		"short": func(s string) string { return s[:min(12, len(s))] },
		"value": func(v metrics.Value) string {
			if !v.Defined() {
				return "undefined"
			}
			return fmt.Sprintf("%.3f", v.V)
		},
		"interval": func(iv *metrics.Interval) string { return ciText(iv, 3) },
		"dropped": func(iv *metrics.Interval) string {
			if iv == nil || iv.Dropped == 0 {
				return ""
			}
			return fmt.Sprintf("%d of %d", iv.Dropped, iv.Resamples)
		},
		"fig": func(figs map[string]metrics.Figure, name string) *metrics.Figure {
			if f, ok := figs[name]; ok {
				return &f
			}
			return nil
		},
		"confusion": func(e *judge.Evaluation) template.HTML {
			c := e.Metrics.Confusion
			return Confusion("Confusion matrix", "outcome", "judge says", []string{"fail", "pass"}, [][]int{{c[0][0], c[0][1]}, {c[1][0], c[1][1]}})
		},
		"intervals": func(figs map[string]metrics.Figure, names []string) template.HTML {
			return IntervalChart("Metrics with 95% intervals", intervalRows(figs, names), -0.25, 1)
		},
		"intervalsRange": func(figs map[string]metrics.Figure, names []string, lo, hi float64) template.HTML {
			return IntervalChart("Differences with paired 95% intervals", intervalRows(figs, names), lo, hi)
		},
		"sweepChart": func(pts []metrics.SweepPoint) template.HTML {
			var series []Series
			for _, name := range []string{"scott_pi", "accuracy", "fail_recall", "pass_recall"} {
				s := Series{Name: name}
				for _, p := range pts {
					v, _ := p.Metrics.Metric(name)
					y := math.NaN()
					if v.Defined() {
						y = v.V
					}
					s.Points = append(s.Points, Point{X: p.Threshold, Y: y})
				}
				series = append(series, s)
			}
			return LineChart("Metrics by pass threshold", "threshold (checks that must pass)", series, -0.5, 1)
		},
	}).Parse(evalHTML))
})

func intervalRows(figs map[string]metrics.Figure, names []string) []Interval {
	var rows []Interval
	for _, n := range names {
		fg, ok := figs[n]
		if !ok {
			continue
		}
		r := Interval{Name: n, Defined: fg.Value.Defined(), Value: fg.Value.V}
		if fg.CI != nil && fg.CI.Defined() {
			r.Lo, r.Hi = fg.CI.Lo, fg.CI.Hi
		} else {
			r.Lo, r.Hi = r.Value, r.Value
		}
		rows = append(rows, r)
	}
	return rows
}

// WriteEval renders the evaluation page.
func WriteEval(w io.Writer, r *EvalReport) error {
	if len(r.Metrics) == 0 {
		r.Metrics = judge.ReportedMetrics
	}
	return evalTmpl().Execute(w, r)
}

// Disagreement is a record whose verdict is not its outcome (an
// unreadable answer included), for a report's folded table.
type Disagreement struct {
	ID, Outcome, Verdict, Reasoning string
}

// Disagreements are the records a judge got wrong, in their order, each
// with the start of its reasoning; verdicts are decided at threshold
// (rubric judges).
func Disagreements(kind judge.Kind, threshold int, rs []*record.Record, vs map[string]judge.Verdict) []Disagreement {
	var out []Disagreement
	for _, r := range rs {
		v, ok := vs[r.ID]
		if !ok {
			continue
		}
		got := v.Decide(kind, threshold)
		if (got == judge.Pass && r.Outcome.Label == record.Pass) || (got == judge.Fail && r.Outcome.Label == record.Fail) {
			continue
		}
		why := v.Reasoning
		if got == judge.Invalid {
			why = "unreadable: " + v.ParseError
		}
		if lines := strings.SplitN(strings.TrimSpace(why), "\n", 4); len(lines) > 3 {
			why = strings.Join(lines[:3], "\n") + " …"
		}
		out = append(out, Disagreement{ID: r.ID, Outcome: string(r.Outcome.Label), Verdict: string(got), Reasoning: why})
	}
	return out
}
