package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"sync"

	"github.com/gavelhq/gavel/acr"
	"github.com/gavelhq/gavel/metrics"
)

//go:embed templates/acr.html
var acrHTML string

// ACRReport is the page of `gavel acr --report` and `gavel acr report`:
// per-round statistics of the data built, and the judge check when one
// ran.
type ACRReport struct {
	Title     string
	Simulated bool
	Sources   []string
	Rounds    []*acr.RoundStats
	Check     *acr.CheckResult
}

var acrTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("acr").Funcs(template.FuncMap{
		"val": func(v metrics.Value) string {
			if !v.Defined() {
				return "undefined"
			}
			return fmt.Sprintf("%.1f%%", 100*v.V)
		},
		"rate": acr.RateText,
		"num": func(v metrics.Value) string {
			if !v.Defined() {
				return "undefined"
			}
			return fmt.Sprintf("%.3f", v.V)
		},
		"est": PercentEstimate,
		"signed": func(e metrics.Figure) string {
			if !e.Value.Defined() {
				return "undefined (" + e.Value.Undefined + ")"
			}
			s := fmt.Sprintf("%+.2f", e.Value.V)
			if e.CI != nil && e.CI.Defined() {
				s += fmt.Sprintf(" [%+.2f, %+.2f]", e.CI.Lo, e.CI.Hi)
			}
			return s
		},
		"mul100": func(x float64) float64 { return 100 * x },
		"counts": func(m map[string]int) string {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			s := ""
			for i, k := range keys {
				if i > 0 {
					s += ", "
				}
				s += fmt.Sprintf("%s %d", k, m[k])
			}
			return s
		},
	}).Parse(acrHTML))
})

// PercentEstimate writes a share with its interval in percent, e.g.
// "86.8% [75.6%, 97.4%]", or "undefined (reason)".
func PercentEstimate(e metrics.Figure) string {
	if !e.Value.Defined() {
		return "undefined (" + e.Value.Undefined + ")"
	}
	s := fmt.Sprintf("%.1f%%", 100*e.Value.V)
	if e.CI != nil && e.CI.Defined() {
		s += fmt.Sprintf(" [%.1f%%, %.1f%%]", 100*e.CI.Lo, 100*e.CI.Hi)
	}
	return s
}

func valueOr(v metrics.Value) float64 {
	if !v.Defined() {
		return math.NaN()
	}
	return v.V
}

var statusColors = map[string]string{"passed": "#2ca02c", "failed": "#d62728", "build_error": "#9467bd", "timeout": "#ff7f0e",
	"resource_limit": "#8c564b", "crashed": "#e377c2", acr.NoCode: "#7f7f7f"}

// WriteACR renders the page.
func WriteACR(w io.Writer, r *ACRReport) error {
	var charts []template.HTML
	if len(r.Rounds) > 0 {
		var win, pass, best, ref []Point
		var branches, statuses []Bar
		var hists []HistSeries
		statusNames := []string{"passed", "failed", "build_error", "crashed", "timeout", "resource_limit", acr.NoCode}
		for _, st := range r.Rounds {
			x := float64(st.Round)
			win = append(win, Point{x, valueOr(st.WinRate)})
			pass = append(pass, Point{x, valueOr(st.SamplePassRate)})
			best = append(best, Point{x, valueOr(st.BestPassRate)})
			ref = append(ref, Point{x, valueOr(st.ReferencePassRate)})
			label := fmt.Sprintf("round %d", st.Round)
			branches = append(branches, Bar{Label: label, Parts: []BarPart{
				{"single-turn (sample won)", "#2ca02c", float64(st.SingleTurn)},
				{"critique (reference won)", "#1f77b4", float64(st.Critique)},
				{"skipped", "#7f7f7f", float64(st.Skipped)}}})
			var parts []BarPart
			for _, name := range statusNames {
				parts = append(parts, BarPart{name, statusColors[name], float64(st.ExecStatus[name])})
			}
			statuses = append(statuses, Bar{Label: label, Parts: parts})
			hists = append(hists, HistSeries{Name: label + " all samples", Values: st.Composite},
				HistSeries{Name: label + " best", Values: st.Best})
		}
		if len(r.Rounds) > 1 {
			charts = append(charts, LineChart("Win rate and pass rates by round", "round", []Series{
				{Name: "sample win rate", Points: win}, {Name: "sample pass rate", Points: pass},
				{Name: "best sample pass rate", Points: best}, {Name: "reference pass rate", Points: ref}}, 0, 1))
		}
		charts = append(charts,
			StackedBars("Records by branch", branches),
			StackedBars("Samples by executor status", statuses),
			Histogram("Composite scores", "composite score", hists, 10, 0, 1))
	}
	var checkCharts []template.HTML
	if c := r.Check; c != nil && c.Pairs > 0 {
		iv := func(name string, e metrics.Figure) Interval {
			row := Interval{Name: name, Defined: e.Value.Defined(), Value: e.Value.V, Lo: e.Value.V, Hi: e.Value.V}
			if e.CI != nil && e.CI.Defined() {
				row.Lo, row.Hi = e.CI.Lo, e.CI.Hi
			}
			return row
		}
		checkCharts = append(checkCharts, IntervalChart("Judge check (95% intervals)", []Interval{
			iv("agreement with tests", c.Agreement), iv("where the executor decides", c.AgreementExecutor),
			iv("where the judge decides", c.AgreementJudge), iv("self-preference", c.SelfPreference)}, 0, 1))
		if c.Tied > 0 {
			checkCharts = append(checkCharts, IntervalChart("Reference bias where both pass",
				[]Interval{iv("reference bias", c.ReferenceBias)}, -1, 1))
		}
		sides := []acr.Side{acr.Sample, acr.Reference, acr.Tie}
		m := make([][]int, 2)
		for i := range m {
			m[i] = make([]int, 3)
		}
		other := func(s acr.Side) acr.Side {
			if s == acr.Other {
				return acr.Reference
			}
			return s
		}
		for _, cmp := range c.Comparisons {
			if cmp.Tied {
				continue
			}
			row := 0
			if other(cmp.TestWinner) == acr.Reference {
				row = 1
			}
			for j, s := range sides {
				if other(cmp.Judge.Winner) == s {
					m[row][j]++
				}
			}
		}
		checkCharts = append(checkCharts, Confusion("Test winner (rows) by judge winner",
			"tests pick", "judge picks", []string{"sample", "other", "tie"}, append(m, make([]int, 3))))
	}
	return acrTmpl().Execute(w, struct {
		*ACRReport
		Charts, CheckCharts []template.HTML
	}{r, charts, checkCharts})
}
