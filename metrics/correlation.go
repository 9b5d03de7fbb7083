package metrics

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/stat"
)

// Pearson is the linear correlation of x and y.
func Pearson(x, y []float64) Value {
	if len(x) != len(y) {
		return Undef("x and y differ in length")
	}
	if len(x) < 2 {
		return Undef("fewer than two items")
	}
	if constant(x) || constant(y) {
		return Undef("a variable is constant")
	}
	return Def(stat.Correlation(x, y, nil))
}

func constant(x []float64) bool {
	for _, v := range x[1:] {
		if v != x[0] {
			return false
		}
	}
	return true
}

// Ranks returns the ranks of x (1-based), ties sharing their mean rank.
func Ranks(x []float64) []float64 {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return x[idx[a]] < x[idx[b]] })
	r := make([]float64, len(x))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && x[idx[j+1]] == x[idx[i]] {
			j++
		}
		mean := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[idx[k]] = mean
		}
		i = j + 1
	}
	return r
}

// Spearman is the Pearson correlation of the ranks (ties get mean ranks).
func Spearman(x, y []float64) Value {
	if len(x) != len(y) {
		return Undef("x and y differ in length")
	}
	return Pearson(Ranks(x), Ranks(y))
}

// KendallTauB is Kendall's tau-b, which corrects for ties in either
// variable: (C - D) / sqrt((n0 - n1)(n0 - n2)). Scores on a small scale
// (as benchmarks use) are counted through their joint table, so the cost
// does not grow with the square of the number of items.
func KendallTauB(x, y []float64) Value {
	n := len(x)
	if n != len(y) {
		return Undef("x and y differ in length")
	}
	if n < 2 {
		return Undef("fewer than two items")
	}
	xr, kx := denseRanks(x)
	yr, ky := denseRanks(y)
	var conc, disc float64
	if kx*ky <= 4096 {
		conc, disc = tableConcordance(xr, yr, kx, ky)
	} else {
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				s := sign(xr[i]-xr[j]) * sign(yr[i]-yr[j])
				if s > 0 {
					conc++
				} else if s < 0 {
					disc++
				}
			}
		}
	}
	n0 := float64(n) * float64(n-1) / 2
	n1, n2 := tiedPairs(xr, kx), tiedPairs(yr, ky)
	den := math.Sqrt((n0 - n1) * (n0 - n2))
	return ratio(conc-disc, den, "a variable is constant")
}

func sign(v int) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

// denseRanks maps values to 0..k-1 in order.
func denseRanks(x []float64) ([]int, int) {
	u := append([]float64(nil), x...)
	sort.Float64s(u)
	k := 0
	idx := map[float64]int{}
	for i, v := range u {
		if i == 0 || v != u[i-1] {
			idx[v] = k
			k++
		}
	}
	r := make([]int, len(x))
	for i, v := range x {
		r[i] = idx[v]
	}
	return r, k
}

func tiedPairs(r []int, k int) float64 {
	cnt := make([]float64, k)
	for _, v := range r {
		cnt[v]++
	}
	s := 0.0
	for _, c := range cnt {
		s += c * (c - 1) / 2
	}
	return s
}

// tableConcordance counts concordant and discordant pairs from the joint
// table: a cell pairs concordantly with every cell above and to the right
// of it, discordantly with every cell above and to the left.
func tableConcordance(xr, yr []int, kx, ky int) (conc, disc float64) {
	t := make([]float64, kx*ky)
	for i := range xr {
		t[xr[i]*ky+yr[i]]++
	}
	// cum[a][b] = count of cells with x > a and y > b, built from the top.
	above := make([]float64, ky) // per column, counts of rows > current row
	for a := kx - 1; a >= 0; a-- {
		// suffix sums over columns of the rows above
		var right float64
		suffix := make([]float64, ky+1)
		for b := ky - 1; b >= 0; b-- {
			right += above[b]
			suffix[b] = right
		}
		total := suffix[0]
		for b := 0; b < ky; b++ {
			c := t[a*ky+b]
			if c == 0 {
				continue
			}
			conc += c * suffix[b+1]
			// rows above with a smaller y: total minus those with y >= b
			disc += c * (total - suffix[b])
		}
		for b := 0; b < ky; b++ {
			above[b] += t[a*ky+b]
		}
	}
	return conc, disc
}

// MAE is the mean absolute error of predictions against reference values.
func MAE(ref, pred []float64) Value {
	if len(ref) != len(pred) {
		return Undef("x and y differ in length")
	}
	if len(ref) == 0 {
		return Undef("no items")
	}
	s := 0.0
	for i := range ref {
		s += math.Abs(ref[i] - pred[i])
	}
	return Def(s / float64(len(ref)))
}

// WithinAccuracy is the share of predictions within tol of the reference
// (tol 0: exact accuracy; 1: within-one accuracy).
func WithinAccuracy(ref, pred []float64, tol float64) Value {
	if len(ref) != len(pred) {
		return Undef("x and y differ in length")
	}
	if len(ref) == 0 {
		return Undef("no items")
	}
	n := 0
	for i := range ref {
		if math.Abs(ref[i]-pred[i]) <= tol+1e-12 {
			n++
		}
	}
	return Def(float64(n) / float64(len(ref)))
}
