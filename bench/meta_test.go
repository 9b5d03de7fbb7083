package bench_test

import (
	"math"
	"testing"

	"github.com/gavelhq/gavel/bench"
	"github.com/gavelhq/gavel/metrics"
)

func programs(scores ...int) []*bench.Program {
	var out []*bench.Program
	for i, s := range scores {
		out = append(out, &bench.Program{ID: string(rune('a' + i)), Problem: string(rune('a' + i/2)), Score: s})
	}
	return out
}

func TestMetaEvaluate(t *testing.T) {
	ps := programs(0, 1, 2, 3, 4, 5, 0, 5)
	boot := metrics.BootstrapOptions{Resamples: 200, Seed: 1}
	perfect := bench.MetaEvaluate("oracle", ps, []float64{0, 1, 2, 3, 4, 5, 0, 5}, boot)
	for name, want := range map[string]float64{"spearman": 1, "kendall_tau_b": 1, "pearson": 1, "exact_accuracy": 1, "within_one_accuracy": 1, "mae": 0, "works_broken_scott_pi": 1} {
		if v := perfect.Figures[name].Value; !v.Defined() || math.Abs(v.V-want) > 1e-12 {
			t.Errorf("oracle %s = %v, want %v", name, v, want)
		}
	}
	if perfect.Confusion[5][5] != 2 || perfect.Confusion[0][0] != 2 {
		t.Fatalf("confusion %v", perfect.Confusion)
	}
	// Off by one everywhere: exact 0, within one 1, MAE 1; ranks intact.
	shifted := bench.MetaEvaluate("shifted", ps, []float64{1, 2, 3, 4, 5, 5, 1, 5}, boot)
	if v := shifted.Figures["exact_accuracy"].Value.V; v != 0.25 {
		t.Errorf("exact %v, want 2/8 (the 5s stay 5)", v)
	}
	if v := shifted.Figures["within_one_accuracy"].Value.V; v != 1 {
		t.Errorf("within one %v", v)
	}
	// Invalid predictions are counted apart; a constant predictor's
	// correlations are undefined, never NaN.
	constant := bench.MetaEvaluate("constant", ps, []float64{5, 5, 5, 5, 5, 5, 5, math.NaN()}, boot)
	if constant.Invalid != 1 || constant.N != 7 || constant.Figures["spearman"].Value.Defined() {
		t.Fatalf("constant: %+v", constant)
	}
}
