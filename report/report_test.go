package report_test

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/bench"
	"github.com/gavelhq/gavel/internal/golden"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/report"
)

func evaluation(t *testing.T) *judge.Evaluation {
	s, _ := judge.Load("rubric5")
	var rs []*record.Record
	vs := map[string]judge.Verdict{}
	for i := range 40 {
		st := record.StatusPassed
		if i%3 == 0 {
			st = record.StatusFailed
		}
		r := &record.Record{ID: string(rune('A' + i)), Task: "t", Group: string(rune('a' + i/4)), Outcome: record.Outcome{Status: st}}
		r.Normalize()
		rs = append(rs, r)
		score := float64(5 - i%4)
		out := judge.Fail
		if score >= 5 {
			out = judge.Pass
		}
		if i == 7 {
			out = judge.Invalid
		}
		vs[r.ID] = judge.Verdict{RecordID: r.ID, Outcome: out, Score: score}
	}
	e, err := judge.Evaluate(s, "sim", rs, vs, 0, metrics.BootstrapOptions{Resamples: 300, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestEvalPageGolden(t *testing.T) {
	e := evaluation(t)
	var b bytes.Buffer
	err := report.WriteEval(&b, &report.EvalReport{Title: "[simulated] Judge evaluation: rubric5 on main:test", Simulated: true,
		Split: "main:test", Intervals: "300 resamples", Version: "test", Sections: []report.EvalSection{{Name: "rubric5", Eval: e}}})
	if err != nil {
		t.Fatal(err)
	}
	page := b.String()
	golden.Check(t, "eval.html", page)
	for _, want := range []string{"Simulated.", "<svg", "Confusion matrix", "Metrics by pass threshold", "1 invalid answers"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script") || strings.Contains(page, "http://") && !strings.Contains(page, "http://www.w3.org/2000/svg") {
		t.Error("the page is not self-contained")
	}
}

// Axes come from the data, with round ticks: a value below the default
// range widens it instead of being clipped, and 0 is a tick, drawn darker.
func TestChartAxesFitTheData(t *testing.T) {
	svg := string(report.IntervalChart("pi", []report.Interval{{Name: "a", Value: -0.377, Lo: -0.52, Hi: -0.2, Defined: true}}, -0.25, 1))
	// -0.52 to 1 in steps of 0.2: -0.6 ... 1.0, 0.0 among them.
	for _, tick := range []string{">-0.6<", ">-0.4<", ">0.0<", ">0.2<", ">1.0<"} {
		if !strings.Contains(svg, tick) {
			t.Errorf("interval chart lacks the tick %s: %s", tick, svg)
		}
	}
	if !strings.Contains(svg, `stroke="#888"`) {
		t.Error("no zero line")
	}
	line := string(report.LineChart("pi", "x", []report.Series{{Name: "s", Points: []report.Point{{0, -0.6}, {1, 0.4}}}}, -0.25, 1))
	if !strings.Contains(line, ">-0.6<") || !strings.Contains(line, ">0.0<") || strings.Contains(line, ">0.06<") {
		t.Errorf("line chart axis: %s", line)
	}
}

func TestChartsEscapeAndSkipGaps(t *testing.T) {
	svg := string(report.LineChart(`<b>"pi"</b>`, "x", []report.Series{{Name: "a&b", Points: []report.Point{{0, 0.5}, {1, math.NaN()}, {2, 0.7}}}}, 0, 1))
	if strings.Contains(svg, "<b>") || !strings.Contains(svg, "a&amp;b") {
		t.Fatalf("labels not escaped: %s", svg)
	}
	// The undefined point breaks the line: two move commands, no NaN.
	d := svg[strings.Index(svg, `<path d="`)+len(`<path d="`):]
	d = d[:strings.Index(d, `"`)]
	if strings.Count(d, "M") != 2 || strings.Count(d, "L") != 0 || strings.Contains(svg, "NaN") {
		t.Fatalf("gap not drawn as a gap: %s", svg)
	}
	c := string(report.Confusion("c", "known score", "metric", []string{"fail", "pass"}, [][]int{{3, 1}, {2, 7}}))
	if strings.Contains(c, "judge says") || !strings.Contains(c, ">metric<") || !strings.Contains(c, ">known score<") {
		t.Fatalf("axis labels: %s", c)
	}
	for _, n := range []string{">3<", ">1<", ">2<", ">7<"} {
		if !strings.Contains(c, n) {
			t.Fatalf("confusion lacks %s", n)
		}
	}
}

// Ticks 0.25 apart are labelled with two decimals (0.75, not 0.8).
func TestTickLabelsKeepTheirDecimals(t *testing.T) {
	svg := string(report.LineChart("pi", "x", []report.Series{{Name: "s", Points: []report.Point{{0, 0}, {1, 1.75}}}}, 0, 1.75))
	for _, want := range []string{">0.25<", ">0.75<", ">1.75<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("no tick %s in the chart", want)
		}
	}
	if strings.Contains(svg, ">0.8<") || strings.Contains(svg, ">1.8<") {
		t.Error("a tick 0.25 apart is rounded to one decimal")
	}
}

// Stacked bars say their counts: each segment's where it fits, and each
// bar's total.
func TestStackedBarsSayTheirCounts(t *testing.T) {
	svg := string(report.StackedBars("teacher", []report.Bar{{Label: "failed", Parts: []report.BarPart{{Name: "kept", Color: "#1f77b4", Value: 40}, {Name: "abstained", Color: "#d62728", Value: 12}}}}))
	for _, want := range []string{">40<", ">12<", ">52<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("no count %s in the bars: %s", want, svg)
		}
	}
}

// A bench report says once, under its table, that intervals over few
// problems cannot be trusted, and marks those cells.
func TestBenchReportWarnsOncePerTable(t *testing.T) {
	warn := &metrics.Interval{Lo: 0.1, Hi: 0.9, Warning: "few groups", Groups: 3}
	figs := map[string]metrics.Figure{}
	for _, name := range bench.MetaFigures {
		figs[name] = metrics.Figure{Value: metrics.Value{V: 0.5}, CI: warn}
	}
	var b bytes.Buffer
	if err := report.WriteBench(&b, &report.BenchReport{Title: "bench", Programs: 9, Evals: []*bench.MetaEval{{Name: "token_similarity", Figures: figs}, {Name: "passfail", Figures: figs}}}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if n := strings.Count(page, "only 3 problems"); n != 1 {
		t.Errorf("the few-groups note appears %d times, want once", n)
	}
	if n := strings.Count(page, "[0.10, 0.90] ⚠"); n != 2*len(bench.MetaFigures) {
		t.Errorf("%d cells marked, want %d", n, 2*len(bench.MetaFigures))
	}
	if strings.Contains(page, "not trustworthy; item-level") || strings.Count(page, "groups resampled") > 0 {
		t.Error("a cell still carries the whole warning")
	}
}

// The disagreements of a rubric judge at its threshold: wrong verdicts
// and unreadable answers, in record order, reasoning cut to three lines.
func TestDisagreements(t *testing.T) {
	var rs []*record.Record
	for _, c := range []struct{ id, status string }{{"A", "passed"}, {"B", "passed"}, {"C", "failed"}, {"D", "failed"}, {"E", "failed"}} {
		r := &record.Record{ID: c.id, Task: "t", Outcome: record.Outcome{Status: record.Status(c.status)}}
		r.Normalize()
		rs = append(rs, r)
	}
	vs := map[string]judge.Verdict{
		"A": {Outcome: judge.Pass, Score: 4, Reasoning: "fine"},
		"B": {Outcome: judge.Fail, Score: 2, Reasoning: "one\ntwo\nthree\nfour\nfive"},
		"C": {Outcome: judge.Pass, Score: 5, Reasoning: "all checks pass"},
		"D": {Outcome: judge.Invalid, ParseError: "not JSON"},
		"E": {Outcome: judge.Fail, Score: 1, Reasoning: "broken"},
	}
	got := report.Disagreements(judge.Rubric, 3, rs, vs)
	want := []report.Disagreement{{"B", "pass", "fail", "one\ntwo\nthree …"}, {"C", "fail", "pass", "all checks pass"}, {"D", "fail", "invalid", "unreadable: not JSON"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("disagreements %q\nwant %q", got, want)
	}
	var b bytes.Buffer
	if err := report.WriteEval(&b, &report.EvalReport{Title: "e", Split: "s", Sections: []report.EvalSection{{Name: "rubric5", Eval: evaluation(t), Disagreements: got}}}); err != nil {
		t.Fatal(err)
	}
	if page := b.String(); !strings.Contains(page, "3 record(s) whose verdict is not the outcome") || !strings.Contains(page, "<details") {
		t.Fatal("the eval page has no folded table of disagreements")
	}
}
