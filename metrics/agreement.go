package metrics

import "sort"

// Table is a square contingency table of two raters over K categories:
// At(i, j) is the (weighted) count of items rater A put in category i and
// rater B in category j. Bootstraps refill one table per resample, so it
// is a flat slice that can be reset without allocating.
type Table struct {
	K int
	M []float64
	N float64
}

// NewTable returns an empty K×K table.
func NewTable(k int) *Table { return &Table{K: k, M: make([]float64, k*k)} }

// TableOf counts pairs of category indices in 0..k-1.
func TableOf(a, b []int, k int) *Table {
	t := NewTable(k)
	for i := range a {
		t.Add(a[i], b[i], 1)
	}
	return t
}

// Add counts one pair with weight w.
func (t *Table) Add(a, b int, w float64) {
	t.M[a*t.K+b] += w
	t.N += w
}

// Reset empties the table.
func (t *Table) Reset() {
	clear(t.M)
	t.N = 0
}

// At returns the count in row i, column j.
func (t *Table) At(i, j int) float64 { return t.M[i*t.K+j] }

// Row and Col return the marginal counts of category c for raters A and B.
func (t *Table) Row(c int) float64 {
	s := 0.0
	for j := 0; j < t.K; j++ {
		s += t.M[c*t.K+j]
	}
	return s
}

// Col returns rater B's marginal count of category c.
func (t *Table) Col(c int) float64 {
	s := 0.0
	for i := 0; i < t.K; i++ {
		s += t.M[i*t.K+c]
	}
	return s
}

func (t *Table) trace() float64 {
	s := 0.0
	for c := 0; c < t.K; c++ {
		s += t.M[c*t.K+c]
	}
	return s
}

// Encode maps two raters' labels to category indices shared by both, in
// sorted order of the labels, and returns the category names.
func Encode(a, b []string) (ai, bi []int, cats []string) {
	seen := map[string]bool{}
	for _, s := range a {
		seen[s] = true
	}
	for _, s := range b {
		seen[s] = true
	}
	for s := range seen {
		cats = append(cats, s)
	}
	sort.Strings(cats)
	idx := make(map[string]int, len(cats))
	for i, c := range cats {
		idx[c] = i
	}
	ai, bi = make([]int, len(a)), make([]int, len(b))
	for i := range a {
		ai[i] = idx[a[i]]
	}
	for i := range b {
		bi[i] = idx[b[i]]
	}
	return ai, bi, cats
}

// ObservedAgreement is the share of items both raters put in the same
// category.
func (t *Table) ObservedAgreement() Value {
	return ratio(t.trace(), t.N, "no items")
}

// ScottPi is (Po - Pe) / (1 - Pe) with Pe the sum over categories of the
// squared pooled share of the category across both raters. It is undefined
// when both raters use a single category (Pe = 1).
func (t *Table) ScottPi() Value {
	if t.N == 0 {
		return Undef("no items")
	}
	po := t.trace() / t.N
	pe := 0.0
	for c := 0; c < t.K; c++ {
		p := (t.Row(c) + t.Col(c)) / (2 * t.N)
		pe += p * p
	}
	if pe >= 1-1e-12 {
		return Undef("both raters use one category only")
	}
	return Def((po - pe) / (1 - pe))
}

// CohenKappa is (Po - Pe) / (1 - Pe) with Pe from each rater's own
// marginals. It is undefined when Pe = 1.
func (t *Table) CohenKappa() Value {
	if t.N == 0 {
		return Undef("no items")
	}
	po := t.trace() / t.N
	pe := 0.0
	for c := 0; c < t.K; c++ {
		pe += t.Row(c) / t.N * t.Col(c) / t.N
	}
	if pe >= 1-1e-12 {
		return Undef("both raters use one and the same category only")
	}
	return Def((po - pe) / (1 - pe))
}

// BennettS is (Po - 1/K) / (1 - 1/K): agreement corrected for a uniform
// chance of each of the K categories.
func (t *Table) BennettS() Value {
	if t.N == 0 {
		return Undef("no items")
	}
	if t.K < 2 {
		return Undef("fewer than two categories")
	}
	k := float64(t.K)
	return Def((t.trace()/t.N - 1/k) / (1 - 1/k))
}
