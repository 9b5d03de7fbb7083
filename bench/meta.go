package bench

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"time"

	bexec "github.com/gavelhq/gavel/bench/exec"
	"github.com/gavelhq/gavel/metrics"
)

// Metric scores a program on the 0..5 scale without a model: the
// baselines a judge should beat.
type Metric struct {
	Name        string
	Description string
	Score       func(p *Program) (float64, error)
}

// Metrics are the built-in baselines.
var Metrics = []*Metric{
	{Name: "token_similarity", Description: "5 x (1 - normalised token edit distance to the reference)",
		Score: func(p *Program) (float64, error) {
			return 5 * (1 - EditDistance(Tokens(p.Code), Tokens(p.Reference))), nil
		}},
	{Name: "ast_similarity", Description: "5 x (1 - normalised edit distance between the syntax trees' node sequences)",
		Score: func(p *Program) (float64, error) {
			a, err := astShape(p.Lang, p.Code)
			if err != nil {
				return 0, nil // a program that does not parse is as far as it gets
			}
			b, err := astShape(p.Lang, p.Reference)
			if err != nil {
				return 0, err
			}
			return 5 * (1 - EditDistance(a, b)), nil
		}},
	{Name: "compile_only", Description: "5 when the program builds (Go) or parses (Python), else 0",
		Score: func(p *Program) (float64, error) {
			if p.Status == bexec.BuildError {
				return 0, nil
			}
			return 5, nil
		}},
}

// MetricByName finds a built-in metric.
func MetricByName(name string) (*Metric, error) {
	var names []string
	for _, m := range Metrics {
		if m.Name == name {
			return m, nil
		}
		names = append(names, m.Name)
	}
	return nil, fmt.Errorf("unknown metric %q (built-in: %s)", name, strings.Join(names, ", "))
}

// astShape is the sequence of a program's syntax node kinds, in walk order.
func astShape(lang, code string) ([]string, error) {
	if lang == "python" {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bexec.PythonInterpreter(), "-I", "-c",
			"import ast,sys; print(' '.join(type(n).__name__ for n in ast.walk(ast.parse(sys.stdin.read()))))")
		cmd.Stdin = strings.NewReader(code)
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Run(); err != nil {
			return nil, err
		}
		return strings.Fields(out.String()), nil
	}
	f, err := parser.ParseFile(token.NewFileSet(), "", "package main\n"+code, 0)
	if err != nil {
		return nil, err
	}
	var kinds []string
	ast.Inspect(f, func(n ast.Node) bool {
		if n != nil {
			kinds = append(kinds, fmt.Sprintf("%T", n))
		}
		return true
	})
	return kinds, nil
}

// WorksScore is the lowest score of a program that works (its tests
// pass): works/broken agreement counts a score of 3 or more as works.
const WorksScore = 3

// MetaEval is how well a judge or metric recovers the known scores.
type MetaEval struct {
	Name    string `json:"name"`
	N       int    `json:"n"`
	Invalid int    `json:"invalid"`
	// Figures: spearman, kendall_tau_b, pearson, exact_accuracy,
	// within_one_accuracy, mae, and works_broken_scott_pi (works means a
	// score of 3 or more).
	Figures map[string]metrics.Figure `json:"figures"`
	// Confusion[known][predicted], predictions rounded to 0..5.
	Confusion [6][6]int `json:"confusion"`
	// ConfusionByScore is the same matrix labelled: known score, then
	// predicted score.
	ConfusionByScore map[string]map[string]int `json:"confusion_by_score"`
	// WithoutScore5 are the figures over the programs below 5 alone: a
	// metric that only tells the reference-like programs from the rest
	// looks much better with them than without.
	WithoutScore5 map[string]metrics.Figure `json:"figures_without_score_5,omitempty"`
}

// MetaFigures lists the figures in report order.
var MetaFigures = []string{"spearman", "kendall_tau_b", "pearson", "exact_accuracy", "within_one_accuracy", "mae", "works_broken_scott_pi"}

// MetaEvaluate compares predictions (on 0..5; NaN for an invalid one) with
// the programs' known scores, with bootstrap intervals that resample whole
// problems.
func MetaEvaluate(name string, progs []*Program, pred []float64, boot metrics.BootstrapOptions) *MetaEval {
	m := &MetaEval{Name: name, Figures: map[string]metrics.Figure{}}
	var known, got []float64
	var groups []string
	for i, p := range progs {
		if math.IsNaN(pred[i]) {
			m.Invalid++
			continue
		}
		known = append(known, float64(p.Score))
		got = append(got, pred[i])
		groups = append(groups, p.Problem)
		r := int(math.Round(math.Max(0, math.Min(5, pred[i]))))
		m.Confusion[p.Score][r]++
		if m.ConfusionByScore == nil {
			m.ConfusionByScore = map[string]map[string]int{}
		}
		known := strconv.Itoa(p.Score)
		if m.ConfusionByScore[known] == nil {
			m.ConfusionByScore[known] = map[string]int{}
		}
		m.ConfusionByScore[known][strconv.Itoa(r)]++
	}
	m.N = len(known)
	rounded := make([]float64, len(got))
	for i, v := range got {
		rounded[i] = math.Round(math.Max(0, math.Min(5, v)))
	}
	works := func(v float64) int {
		if v >= WorksScore {
			return metrics.Pass
		}
		return metrics.Fail
	}
	sub := func(xs []float64, idx []int) []float64 {
		out := make([]float64, len(idx))
		for j, i := range idx {
			out[j] = xs[i]
		}
		return out
	}
	stats := map[string]metrics.Statistic{
		"spearman":            func(idx []int) metrics.Value { return metrics.Spearman(sub(known, idx), sub(got, idx)) },
		"kendall_tau_b":       func(idx []int) metrics.Value { return metrics.KendallTauB(sub(known, idx), sub(got, idx)) },
		"pearson":             func(idx []int) metrics.Value { return metrics.Pearson(sub(known, idx), sub(got, idx)) },
		"exact_accuracy":      func(idx []int) metrics.Value { return metrics.WithinAccuracy(sub(known, idx), sub(rounded, idx), 0) },
		"within_one_accuracy": func(idx []int) metrics.Value { return metrics.WithinAccuracy(sub(known, idx), sub(rounded, idx), 1) },
		"mae":                 func(idx []int) metrics.Value { return metrics.MAE(sub(known, idx), sub(got, idx)) },
		"works_broken_scott_pi": func(idx []int) metrics.Value {
			ref, pr := make([]int, len(idx)), make([]int, len(idx))
			for j, i := range idx {
				ref[j], pr[j] = works(known[i]), works(got[i])
			}
			return metrics.ComputeBinary(ref, pr, nil).ScottPi
		},
	}
	boot.Groups = groups
	for _, name := range MetaFigures {
		e := metrics.WithCI(len(known), stats[name], boot)
		m.Figures[name] = metrics.Figure{Value: e.Value, Undefined: e.Undefined, CI: e.CI}
	}
	var below []*Program
	var belowPred []float64
	for i, p := range progs {
		if p.Score < 5 {
			below, belowPred = append(below, p), append(belowPred, pred[i])
		}
	}
	if len(below) > 0 && len(below) < len(progs) {
		m.WithoutScore5 = MetaEvaluate(name, below, belowPred, boot).Figures
	}
	return m
}
