package metrics

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Interval is a percentile bootstrap confidence interval.
type Interval struct {
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	Level float64 `json:"level"`
	// Resamples were drawn; Dropped of them gave an undefined value (e.g.
	// one category only) and are left out of the percentiles.
	Resamples int `json:"resamples"`
	Dropped   int `json:"dropped"`
	// Groups is the number of clusters resampled (0: items were).
	Groups int `json:"groups,omitempty"`
	// Resampled says what was resampled: "groups" or "items".
	Resampled string `json:"resampled,omitempty"`
	// Warning is set when the interval cannot be trusted: a cluster
	// bootstrap over fewer than MinGroups groups. ItemCI is then the
	// interval from resampling items instead, to read beside it.
	Warning string    `json:"warning,omitempty"`
	ItemCI  *Interval `json:"item_ci,omitempty"`
	// Undefined says why there is no interval.
	Undefined string `json:"undefined,omitempty"`
}

// MinGroups is the fewest groups a cluster bootstrap is trusted with:
// with fewer, the resamples can take only a handful of distinct values
// and the interval looks far narrower than the uncertainty is.
const MinGroups = 10

// Defined reports whether the interval exists.
func (iv Interval) Defined() bool { return iv.Undefined == "" }

func (iv Interval) String() string {
	if !iv.Defined() {
		return "no interval (" + iv.Undefined + ")"
	}
	s := fmt.Sprintf("[%.4f, %.4f]", iv.Lo, iv.Hi)
	if iv.Dropped > 0 {
		s += fmt.Sprintf(" (%d of %d resamples undefined)", iv.Dropped, iv.Resamples)
	}
	if iv.Warning != "" {
		s += " (warning: " + iv.Warning + ")"
	}
	return s
}

// BootstrapOptions configure a bootstrap. The zero value means 10,000
// resamples, a 95% interval, seed 0 and resampling items.
type BootstrapOptions struct {
	Resamples int
	Level     float64
	Seed      uint64
	// Groups, when set, gives each item's group; whole groups are drawn
	// with replacement (a cluster bootstrap), since items of one group
	// (completions of one task) are not independent.
	Groups []string
}

func (o BootstrapOptions) norm() BootstrapOptions {
	if o.Resamples <= 0 {
		o.Resamples = 10_000
	}
	if o.Level <= 0 || o.Level >= 1 {
		o.Level = 0.95
	}
	return o
}

// Statistic computes a figure over the items at the given indices (an
// index may repeat). It is called once per resample and should not
// allocate.
type Statistic func(idx []int) Value

// Bootstrap returns the percentile interval of stat over n items.
func Bootstrap(n int, stat Statistic, opt BootstrapOptions) Interval {
	return BootstrapEach(n, 1, func(idx []int, out []Value) { out[0] = stat(idx) }, opt)[0]
}

// PairedBootstrap returns the percentile interval of a(idx) - b(idx): two
// judges scored on the same resampled items, so that what the items share
// cancels out. A resample where either is undefined is dropped.
func PairedBootstrap(n int, a, b Statistic, opt BootstrapOptions) Interval {
	return Bootstrap(n, Paired(a, b), opt)
}

// Paired is the statistic a(idx) - b(idx), undefined where either is.
func Paired(a, b Statistic) Statistic {
	return func(idx []int) Value {
		va, vb := a(idx), b(idx)
		if !va.Defined() {
			return va
		}
		if !vb.Defined() {
			return vb
		}
		return Def(va.V - vb.V)
	}
}

// Statistics computes k figures at once over the items at the given
// indices (an index may repeat), writing them into out (length k). It is
// called once per resample and should not allocate.
type Statistics func(idx []int, out []Value)

// BootstrapEach returns the percentile interval of each of k figures from
// one pass of resamples: the indices of a resample are drawn once and
// stats computes every figure from them (typically from one table filled
// once). Each figure's interval is the one Bootstrap gives it alone with
// the same options: the same seed draws the same resamples.
func BootstrapEach(n, k int, stats Statistics, opt BootstrapOptions) []Interval {
	opt = opt.norm()
	ivs := make([]Interval, k)
	for j := range ivs {
		ivs[j] = Interval{Level: opt.Level, Resamples: opt.Resamples}
	}
	undefined := func(why string) []Interval {
		for j := range ivs {
			ivs[j].Undefined = why
		}
		return ivs
	}
	if n == 0 {
		return undefined("no items")
	}
	if opt.Groups != nil && len(opt.Groups) != n {
		return undefined(fmt.Sprintf("%d groups for %d items", len(opt.Groups), n))
	}
	rng := rand.New(rand.NewPCG(opt.Seed, 0x626f6f74)) // "boot"
	var clusters [][]int
	if opt.Groups != nil {
		byGroup := map[string]int{}
		for i, g := range opt.Groups {
			c, ok := byGroup[g]
			if !ok {
				c = len(clusters)
				byGroup[g] = c
				clusters = append(clusters, nil)
			}
			clusters[c] = append(clusters[c], i)
		}
		for j := range ivs {
			ivs[j].Groups = len(clusters)
		}
	}
	idx := make([]int, 0, n)
	out := make([]Value, k)
	vals := make([][]float64, k)
	for j := range vals {
		vals[j] = make([]float64, 0, opt.Resamples)
	}
	// The draws of each resample (items, or groups) come from a goroutine
	// of their own, the one random stream in its order, while this one
	// computes the figures of the resample before: the same resamples, on
	// two cores.
	draws := drawResamples(rng, opt.Resamples, n, len(clusters))
	for d := range draws {
		idx = idx[:0]
		if clusters == nil {
			idx = append(idx, d.at...)
		} else {
			for _, c := range d.at {
				idx = append(idx, clusters[c]...)
			}
		}
		d.done()
		stats(idx, out)
		for j, v := range out {
			if !v.Defined() || math.IsNaN(v.V) {
				ivs[j].Dropped++
				continue
			}
			vals[j] = append(vals[j], v.V)
		}
	}
	alpha := (1 - opt.Level) / 2
	var itemCIs []Interval
	for j := range ivs {
		iv := &ivs[j]
		if len(vals[j]) == 0 {
			iv.Undefined = "every resample was undefined"
			continue
		}
		sort.Float64s(vals[j])
		iv.Lo = stat.Quantile(alpha, stat.Empirical, vals[j], nil)
		iv.Hi = stat.Quantile(1-alpha, stat.Empirical, vals[j], nil)
		iv.Resampled = "items"
		if clusters == nil {
			continue
		}
		iv.Resampled = "groups"
		if len(clusters) < MinGroups {
			if itemCIs == nil {
				items := opt
				items.Groups = nil
				itemCIs = BootstrapEach(n, k, stats, items)
			}
			it := itemCIs[j]
			iv.ItemCI = &it
			iv.Warning = fmt.Sprintf("only %d groups were resampled (fewer than %d): a cluster bootstrap cannot give an honest interval from so few; "+
				"the item-level interval %s treats the %d records as independent, which they are not", len(clusters), MinGroups, it.String(), n)
		}
	}
	return ivs
}

// draw is one resample's draws: item indices, or group indices when the
// resampling is by group; done gives its buffer back.
type draw struct {
	at   []int
	done func()
}

// drawResamples draws resamples resamples of n items, or of groups groups
// when groups > 0, from rng in order, a few ahead of their reader.
func drawResamples(rng *rand.Rand, resamples, n, groups int) <-chan draw {
	const ahead = 4
	size := n
	if groups > 0 {
		size = groups
	}
	free := make(chan []int, ahead)
	for range ahead {
		free <- make([]int, size)
	}
	out := make(chan draw, ahead)
	go func() {
		defer close(out)
		for range resamples {
			at := <-free
			for i := range at {
				at[i] = int(rng.Uint64N(uint64(size)))
			}
			out <- draw{at, func() { free <- at }}
		}
	}()
	return out
}

// Figure is a value with its bootstrap interval: the one shape of every
// reported figure ({value, ci}), whichever method made it.
type Figure struct {
	Value     Value     `json:"value"`
	Undefined string    `json:"undefined,omitempty"`
	CI        *Interval `json:"ci,omitempty"`
}

// WithCI computes stat on all items and its bootstrap interval.
func WithCI(n int, stat Statistic, opt BootstrapOptions) Figure {
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	e := Figure{Value: stat(all)}
	e.Undefined = e.Value.Undefined
	iv := Bootstrap(n, stat, opt)
	e.CI = &iv
	return e
}

// Wilson is the Wilson score interval of a proportion, k successes of n
// independent trials, at the given level (0.95 when out of range).
func Wilson(k, n int, level float64) Interval {
	if level <= 0 || level >= 1 {
		level = 0.95
	}
	iv := Interval{Level: level, Resampled: "none (Wilson score interval)"}
	if n <= 0 {
		iv.Undefined = "no trials"
		return iv
	}
	z := distuv.Normal{Mu: 0, Sigma: 1}.Quantile(1 - (1-level)/2)
	p := float64(k) / float64(n)
	nf := float64(n)
	den := 1 + z*z/nf
	centre := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	iv.Lo, iv.Hi = math.Max(0, centre-half), math.Min(1, centre+half)
	return iv
}
