package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"sync"

	"github.com/gavelhq/gavel/bench"
)

//go:embed templates/bench.html
var benchHTML string

// BenchReport is the page of `gavel bench run --report`.
type BenchReport struct {
	Title     string
	Simulated bool
	Source    string
	Programs  int
	Resamples int
	Evals     []*bench.MetaEval
}

var benchTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("bench").Funcs(template.FuncMap{
		"fig": func(e *bench.MetaEval, name string) string {
			f := e.Figures[name]
			if !f.Value.Defined() {
				return "undefined"
			}
			s := fmt.Sprintf("%.3f", f.Value.V)
			if f.CI != nil && f.CI.Defined() {
				// The few-groups warning is said once, under the table.
				s += fmt.Sprintf(" [%.2f, %.2f]", f.CI.Lo, f.CI.Hi)
				if f.CI.Warning != "" {
					s += " ⚠"
				}
			}
			return s
		},
		"confusion": func(e *bench.MetaEval) template.HTML {
			labels := []string{"0", "1", "2", "3", "4", "5"}
			m := make([][]int, 6)
			for i := range m {
				m[i] = e.Confusion[i][:]
			}
			return Confusion("Known score (rows) by predicted score", "known score", "predicted", labels, m)
		},
	}).Parse(benchHTML))
})

// WriteBench renders the benchmark page.
func WriteBench(w io.Writer, r *BenchReport) error {
	var rows []Interval
	fewGroups := 0
	for _, e := range r.Evals {
		for _, f := range e.Figures {
			if f.CI != nil && f.CI.Warning != "" {
				fewGroups = f.CI.Groups
			}
		}
		f := e.Figures["spearman"]
		iv := Interval{Name: e.Name, Defined: f.Value.Defined(), Value: f.Value.V, Lo: f.Value.V, Hi: f.Value.V}
		if f.CI != nil && f.CI.Defined() {
			iv.Lo, iv.Hi = f.CI.Lo, f.CI.Hi
		}
		rows = append(rows, iv)
		if w, ok := e.WithoutScore5["spearman"]; ok {
			iv := Interval{Name: e.Name + " (without score 5)", Defined: w.Value.Defined(), Value: w.Value.V, Lo: w.Value.V, Hi: w.Value.V}
			if w.CI != nil && w.CI.Defined() {
				iv.Lo, iv.Hi = w.CI.Lo, w.CI.Hi
			}
			rows = append(rows, iv)
		}
	}
	return benchTmpl().Execute(w, struct {
		*BenchReport
		Figures       []string
		SpearmanChart template.HTML
		FewGroups     int
	}{r, bench.MetaFigures, IntervalChart("Spearman correlation with the known scores", rows, -0.5, 1), fewGroups})
}
