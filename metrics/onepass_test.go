package metrics_test

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/gavelhq/gavel/metrics"
)

// The one-pass bootstrap (issue 29) must give every figure the interval
// its own bootstrap gave before, and the prepared alpha must equal alpha
// computed afresh per resample, to the last bit.

// oldAlpha is Alpha as it was before it was prepared for resampling
// (git history: metrics/alpha.go before issue 29): the reference.
func oldAlpha(units [][]float64, level metrics.Level) metrics.Value {
	vals := map[float64]int{}
	for _, u := range units {
		if len(u) < 2 {
			continue
		}
		for _, v := range u {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return metrics.Undef("a value is not a finite number")
			}
			vals[v] = 0
		}
	}
	if len(vals) == 0 {
		return metrics.Undef("no unit has two or more values to pair")
	}
	keys := make([]float64, 0, len(vals))
	for v := range vals {
		keys = append(keys, v)
	}
	sort.Float64s(keys)
	for i, v := range keys {
		vals[v] = i
	}
	k := len(keys)
	o := make([]float64, k*k)
	for _, u := range units {
		m := len(u)
		if m < 2 {
			continue
		}
		w := 1 / float64(m-1)
		for i := range u {
			for j := range u {
				if i != j {
					o[vals[u[i]]*k+vals[u[j]]] += w
				}
			}
		}
	}
	nc := make([]float64, k)
	n := 0.0
	for c := range k {
		for j := range k {
			nc[c] += o[c*k+j]
		}
		n += nc[c]
	}
	if level == metrics.LevelRatio && keys[0] < 0 {
		return metrics.Undef("ratio level needs values of one sign")
	}
	d := func(c, j int) float64 {
		switch level {
		case metrics.LevelNominal:
			if c == j {
				return 0
			}
			return 1
		case metrics.LevelOrdinal:
			lo, hi := min(c, j), max(c, j)
			s := 0.0
			for g := lo; g <= hi; g++ {
				s += nc[g]
			}
			s -= (nc[lo] + nc[hi]) / 2
			return s * s
		case metrics.LevelInterval:
			x := keys[c] - keys[j]
			return x * x
		}
		sum := keys[c] + keys[j]
		if sum == 0 {
			return 0
		}
		x := (keys[c] - keys[j]) / sum
		return x * x
	}
	do, de := 0.0, 0.0
	for c := range k {
		for j := range k {
			if c == j {
				continue
			}
			dd := d(c, j)
			do += o[c*k+j] * dd
			de += nc[c] * nc[j] * dd
		}
	}
	do /= n
	de /= n * (n - 1)
	if de == 0 {
		return metrics.Undef("all pairable values are the same, so no disagreement is expected")
	}
	return metrics.Def(1 - do/de)
}

func randomUnits(rng *rand.Rand, n int, values []float64) [][]float64 {
	units := make([][]float64, n)
	for i := range units {
		m := rng.IntN(4) // 0..3 coders gave a value
		for range m {
			units[i] = append(units[i], values[rng.IntN(len(values))])
		}
	}
	return units
}

func sameValue(t *testing.T, what string, got, want metrics.Value) {
	t.Helper()
	if got.Defined() != want.Defined() || got.Undefined != want.Undefined || (got.Defined() && got.V != want.V) {
		t.Fatalf("%s: got %+v, want %+v", what, got, want)
	}
}

func TestPreparedAlphaEqualsAlphaPerResample(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 29))
	sets := map[string][]float64{
		"small scale":   {1, 2, 3, 4, 5},
		"two values":    {0, 1},
		"signed":        {-2, 0.5, 3, 7.25},
		"with infinity": {1, 2, math.Inf(1)},
	}
	for name, values := range sets {
		for level := metrics.LevelNominal; level <= metrics.LevelRatio; level++ {
			units := randomUnits(rng, 40, values)
			prep := metrics.NewAlphaUnits(units, level)
			sameValue(t, name+" "+level.String()+" all", prep.Of(nil), oldAlpha(units, level))
			for r := range 200 {
				idx := make([]int, 1+rng.IntN(len(units)))
				sel := make([][]float64, len(idx))
				for j := range idx {
					idx[j] = rng.IntN(len(units))
					sel[j] = units[idx[j]]
				}
				sameValue(t, name+" "+level.String()+" resample", prep.Of(idx), oldAlpha(sel, level))
				_ = r
			}
		}
	}
}

// Alpha from a resample's table of two-coder units is alpha over those
// units, to the last bit, at every level (a category whose value is not a
// finite number makes both undefined alike).
func TestAlphaOfTableEqualsAlphaOfUnits(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 29))
	for name, codes := range map[string][]float64{
		"nominal codes": {0, 1, 2},
		"scale":         {1, 2, 3, 4, 5},
		"signed":        {-2, 0.5, 3, 7.25},
		"with nan":      {1, 2, math.NaN()},
	} {
		for level := metrics.LevelNominal; level <= metrics.LevelRatio; level++ {
			n := 60
			a, b := make([]int, n), make([]int, n)
			units := make([][]float64, n)
			for i := range n {
				a[i] = rng.IntN(len(codes))
				b[i] = a[i]
				if rng.Float64() < 0.4 {
					b[i] = rng.IntN(len(codes))
				}
				units[i] = []float64{codes[a[i]], codes[b[i]]}
			}
			prep := metrics.NewAlphaUnits(units, level)
			tab := metrics.NewTable(len(codes))
			for r := range 300 {
				idx := make([]int, 1+rng.IntN(n))
				tab.Reset()
				for j := range idx {
					idx[j] = rng.IntN(n)
					tab.Add(a[idx[j]], b[idx[j]], 1)
				}
				want := prep.Of(idx)
				got := prep.OfTable(tab, codes)
				if got.Defined() != want.Defined() || got.Undefined != want.Undefined || (got.Defined() && math.Float64bits(got.V) != math.Float64bits(want.V)) {
					t.Fatalf("%s %s resample %d: table %+v, units %+v", name, level, r, got, want)
				}
			}
		}
	}
}

func TestBootstrapEachEqualsOneBootstrapPerFigure(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 29))
	n := 300
	a, b := make([]int, n), make([]int, n)
	groups := make([]string, n)
	for i := range n {
		a[i] = rng.IntN(3)
		b[i] = a[i]
		if rng.Float64() < 0.3 {
			b[i] = rng.IntN(3)
		}
		groups[i] = string(rune('a' + i%40))
	}
	figures := []func(*metrics.Table) metrics.Value{(*metrics.Table).ObservedAgreement, (*metrics.Table).ScottPi, (*metrics.Table).CohenKappa, (*metrics.Table).BennettS}
	for _, opt := range []metrics.BootstrapOptions{
		{Resamples: 500, Seed: 9},
		{Resamples: 500, Seed: 9, Groups: groups},
		{Resamples: 500, Seed: 9, Groups: groups[:n], Level: 0.9},
		{Resamples: 300, Seed: 1, Groups: func() []string {
			g := make([]string, n)
			for i := range g {
				g[i] = string(rune('a' + i%4))
			}
			return g
		}()}, // few groups: item intervals beside
	} {
		tab := metrics.NewTable(3)
		each := metrics.BootstrapEach(n, len(figures), func(idx []int, out []metrics.Value) {
			tab.Reset()
			for _, i := range idx {
				tab.Add(a[i], b[i], 1)
			}
			for j, f := range figures {
				out[j] = f(tab)
			}
		}, opt)
		for j, f := range figures {
			one := metrics.Bootstrap(n, func(idx []int) metrics.Value {
				t := metrics.NewTable(3)
				for _, i := range idx {
					t.Add(a[i], b[i], 1)
				}
				return f(t)
			}, opt)
			if each[j].String() != one.String() || each[j].Lo != one.Lo || each[j].Hi != one.Hi || each[j].Dropped != one.Dropped ||
				each[j].Groups != one.Groups || (each[j].ItemCI == nil) != (one.ItemCI == nil) {
				t.Fatalf("figure %d with %+v: one pass %+v, alone %+v", j, opt, each[j], one)
			}
			if one.ItemCI != nil && *each[j].ItemCI != *one.ItemCI {
				t.Fatalf("figure %d: item intervals differ: %+v, %+v", j, *each[j].ItemCI, *one.ItemCI)
			}
		}
	}
}
