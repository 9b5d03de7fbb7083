package metrics

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// Level is the measurement level of Krippendorff's alpha: it fixes the
// difference function between two values.
type Level int

// The levels.
const (
	LevelNominal  Level = iota // different or not
	LevelOrdinal               // rank distance, weighted by how many values lie between
	LevelInterval              // squared difference
	LevelRatio                 // squared difference relative to the sum
)

func (l Level) String() string { return [...]string{"nominal", "ordinal", "interval", "ratio"}[l] }

// ParseLevel reads a level name.
func ParseLevel(s string) (Level, error) {
	for l := LevelNominal; l <= LevelRatio; l++ {
		if l.String() == s {
			return l, nil
		}
	}
	return 0, fmt.Errorf("unknown level %q (want nominal, ordinal, interval or ratio)", s)
}

// Alpha is Krippendorff's alpha for any number of coders with missing
// values. Each unit is the list of values the coders gave it (a missing
// value is simply absent); units with fewer than two values are not
// pairable and are left out. For the nominal and ordinal levels the values
// are category codes whose order only matters for ordinal.
//
// alpha = 1 - Do/De, from the coincidence matrix o: Do = sum o_ck d(c,k) / n,
// De = sum n_c n_k d(c,k) / (n (n - 1)).
func Alpha(units [][]float64, level Level) Value {
	return NewAlphaUnits(units, level).Of(nil)
}

// AlphaUnits is Krippendorff's alpha prepared for resampling: the values
// are coded once and each unit's pairs listed once, so that a resample
// only adds up the pairs of the units it draws (no maps, no sorting).
// Of(idx) equals Alpha over the units at idx, to the last bit: the pairs
// are added in the same order, and values a resample lacks add zeros.
type AlphaUnits struct {
	level Level
	keys  []float64 // every pairable value, sorted
	// pairs[u] lists unit u's ordered pairs as cells c*k+j, each with
	// weight w[u] = 1/(m-1); nil for a unit with fewer than two values.
	pairs   [][]int32
	w       []float64
	bad     []bool // a value that is not a finite number
	o, nc   []float64
	present []bool
}

// NewAlphaUnits prepares units (each the list of the values the coders
// gave it) at a level.
func NewAlphaUnits(units [][]float64, level Level) *AlphaUnits {
	a := &AlphaUnits{level: level, pairs: make([][]int32, len(units)), w: make([]float64, len(units)), bad: make([]bool, len(units))}
	vals := map[float64]int{}
	for i, u := range units {
		if len(u) < 2 {
			continue
		}
		for _, v := range u {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				a.bad[i] = true
				continue
			}
			vals[v] = 0
		}
	}
	a.keys = make([]float64, 0, len(vals))
	for v := range vals {
		a.keys = append(a.keys, v)
	}
	sort.Float64s(a.keys)
	for i, v := range a.keys {
		vals[v] = i
	}
	k := len(a.keys)
	for i, u := range units {
		m := len(u)
		if m < 2 || a.bad[i] {
			continue
		}
		cells := make([]int32, 0, m*(m-1))
		for x := range u {
			for y := range u {
				if x != y {
					cells = append(cells, int32(vals[u[x]]*k+vals[u[y]]))
				}
			}
		}
		a.pairs[i], a.w[i] = cells, 1/float64(m-1)
	}
	a.o, a.nc, a.present = make([]float64, k*k), make([]float64, k), make([]bool, k)
	return a
}

// Of is alpha over the units at idx (an index may repeat; nil: every
// unit once). It reuses the receiver's buffers: one goroutine at a time.
func (a *AlphaUnits) Of(idx []int) Value {
	o := a.o
	clear(o)
	pairable := false
	add := func(u int) bool {
		if a.bad[u] {
			return false
		}
		w := a.w[u]
		for _, c := range a.pairs[u] {
			o[c] += w
		}
		pairable = pairable || a.pairs[u] != nil
		return true
	}
	if idx == nil {
		for u := range a.pairs {
			if !add(u) {
				return Undef("a value is not a finite number")
			}
		}
	} else {
		for _, u := range idx {
			if !add(u) {
				return Undef("a value is not a finite number")
			}
		}
	}
	if !pairable {
		return Undef("no unit has two or more values to pair")
	}
	return a.fromCoincidences()
}

// OfTable is Of over two-coder units counted in t: t.At(x, y) units whose
// two coders gave categories x and y, category c having the value
// codes[c] (every finite one among the receiver's values). It equals Of
// over those units to the last bit, as each pair of values adds a whole
// number either way, but costs a pass over the k×k cells rather than over
// the units: a resample's table gives its alpha (BENCHMARKS.md).
func (a *AlphaUnits) OfTable(t *Table, codes []float64) Value {
	k := len(a.keys)
	o := a.o
	clear(o)
	at := make([]int, len(codes))
	for c, v := range codes {
		at[c] = -1
		if i, ok := slices.BinarySearch(a.keys, v); ok {
			at[c] = i
		}
	}
	pairable := false
	for x := range t.K {
		for y := range t.K {
			m := t.M[x*t.K+y]
			if m == 0 {
				continue
			}
			vx, vy := at[x], at[y]
			if vx < 0 || vy < 0 {
				return Undef("a value is not a finite number")
			}
			o[vx*k+vy] += m
			o[vy*k+vx] += m
			pairable = true
		}
	}
	if !pairable {
		return Undef("no unit has two or more values to pair")
	}
	return a.fromCoincidences()
}

// fromCoincidences is alpha from the coincidences in a.o.
func (a *AlphaUnits) fromCoincidences() Value {
	k := len(a.keys)
	o, nc := a.o, a.nc
	n := 0.0
	lowest := math.Inf(1)
	for c := range k {
		nc[c] = 0
		for j := range k {
			nc[c] += o[c*k+j]
		}
		n += nc[c]
		if nc[c] > 0 {
			lowest = min(lowest, a.keys[c])
		}
	}
	keys := a.keys
	if a.level == LevelRatio && lowest < 0 {
		return Undef("ratio level needs values of one sign")
	}
	d := func(c, j int) float64 {
		switch a.level {
		case LevelNominal:
			if c == j {
				return 0
			}
			return 1
		case LevelOrdinal:
			lo, hi := min(c, j), max(c, j)
			s := 0.0
			for g := lo; g <= hi; g++ {
				s += nc[g]
			}
			s -= (nc[lo] + nc[hi]) / 2
			return s * s
		case LevelInterval:
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
		if nc[c] == 0 {
			continue // a value this resample lacks adds nothing
		}
		for j := range k {
			if c == j || nc[j] == 0 {
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
		return Undef("all pairable values are the same, so no disagreement is expected")
	}
	return Def(1 - do/de)
}

// CodersToUnits turns a coders × units table (NaN for missing) into the
// per-unit value lists Alpha takes.
func CodersToUnits(coders [][]float64) [][]float64 {
	if len(coders) == 0 {
		return nil
	}
	units := make([][]float64, len(coders[0]))
	for _, row := range coders {
		for u, v := range row {
			if u < len(units) && !math.IsNaN(v) {
				units[u] = append(units[u], v)
			}
		}
	}
	return units
}

// FleissKappa is Fleiss' kappa for items each rated by the same number of
// raters: counts[i][c] is how many raters put item i in category c.
func FleissKappa(counts [][]int) Value {
	if len(counts) == 0 {
		return Undef("no items")
	}
	k := len(counts[0])
	raters := -1
	pj := make([]float64, k)
	pbar := 0.0
	for i, row := range counts {
		if len(row) != k {
			return Undef("item %d has %d categories, not %d", i, len(row), k)
		}
		n := 0
		sq := 0
		for c, x := range row {
			if x < 0 {
				return Undef("item %d has a negative count", i)
			}
			n += x
			sq += x * x
			pj[c] += float64(x)
		}
		if raters == -1 {
			raters = n
		} else if n != raters {
			return Undef("items are rated by different numbers of raters (%d and %d)", raters, n)
		}
		if n < 2 {
			return Undef("fewer than two raters per item")
		}
		pbar += float64(sq-n) / float64(n*(n-1))
	}
	total := float64(len(counts) * raters)
	pe := 0.0
	for c := range pj {
		p := pj[c] / total
		pe += p * p
	}
	pbar /= float64(len(counts))
	if pe >= 1-1e-12 {
		return Undef("all ratings are in one category")
	}
	return Def((pbar - pe) / (1 - pe))
}
