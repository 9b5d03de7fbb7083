package metrics

import (
	"fmt"
	"math"
	"sort"
)

// The values of a binary judgement: failure is the positive class wherever
// gavel speaks of failure precision and recall.
const (
	Invalid = -1 // an unparseable judge answer: neither pass nor fail
	Fail    = 0
	Pass    = 1
)

// Binary holds every figure gavel reports for a pass/fail judge against
// pass/fail labels. Invalid predictions are counted apart and excluded from
// the rest.
type Binary struct {
	N       int `json:"n"`
	Invalid int `json:"invalid"`
	// Confusion[ref][pred], index 0 fail, 1 pass.
	Confusion         [2][2]int `json:"confusion"`
	ObservedAgreement Value     `json:"observed_agreement"`
	ScottPi           Value     `json:"scott_pi"`
	CohenKappa        Value     `json:"cohen_kappa"`
	Accuracy          Value     `json:"accuracy"`
	MCC               Value     `json:"mcc"`
	FailPrecision     Value     `json:"fail_precision"`
	FailRecall        Value     `json:"fail_recall"`
	FailF1            Value     `json:"fail_f1"`
	PassPrecision     Value     `json:"pass_precision"`
	PassRecall        Value     `json:"pass_recall"`
}

// BinaryMetricNames lists the figures Metric can pick out of a Binary, in
// report order.
var BinaryMetricNames = []string{"scott_pi", "cohen_kappa", "observed_agreement", "accuracy", "mcc",
	"fail_precision", "fail_recall", "fail_f1", "pass_precision", "pass_recall"}

// Metric returns a figure by its JSON name.
func (b *Binary) Metric(name string) (Value, error) {
	switch name {
	case "scott_pi":
		return b.ScottPi, nil
	case "cohen_kappa":
		return b.CohenKappa, nil
	case "observed_agreement":
		return b.ObservedAgreement, nil
	case "accuracy":
		return b.Accuracy, nil
	case "mcc":
		return b.MCC, nil
	case "fail_precision":
		return b.FailPrecision, nil
	case "fail_recall":
		return b.FailRecall, nil
	case "fail_f1":
		return b.FailF1, nil
	case "pass_precision":
		return b.PassPrecision, nil
	case "pass_recall":
		return b.PassRecall, nil
	}
	return Value{}, fmt.Errorf("unknown metric %q (want one of %v)", name, BinaryMetricNames)
}

// binaryCounts is the 2×2 table of one (re)sample.
type binaryCounts struct {
	c       [2][2]float64
	invalid int
}

func countBinary(ref, pred []int, idx []int) binaryCounts {
	var bc binaryCounts
	if idx == nil {
		for i := range ref {
			bc.add(ref[i], pred[i])
		}
		return bc
	}
	for _, i := range idx {
		bc.add(ref[i], pred[i])
	}
	return bc
}

func (bc *binaryCounts) add(r, p int) {
	if p < 0 {
		bc.invalid++
		return
	}
	bc.c[r][p]++
}

// ComputeBinary computes the figures for ref (Fail or Pass) against pred
// (Fail, Pass or Invalid) over the items at idx (all items when idx is nil).
func ComputeBinary(ref, pred []int, idx []int) *Binary {
	bc := countBinary(ref, pred, idx)
	return bc.binary()
}

func (bc *binaryCounts) binary() *Binary {
	b := &Binary{}
	bc.fill(b)
	return b
}

// fill computes the figures into b without allocating.
func (bc *binaryCounts) fill(b *Binary) {
	c := bc.c
	n := c[0][0] + c[0][1] + c[1][0] + c[1][1]
	*b = Binary{N: int(n), Invalid: bc.invalid}
	for r := range 2 {
		for p := range 2 {
			b.Confusion[r][p] = int(c[r][p])
		}
	}
	cells := [4]float64{c[0][0], c[0][1], c[1][0], c[1][1]}
	t := Table{K: 2, M: cells[:], N: n}
	b.ObservedAgreement = t.ObservedAgreement()
	b.ScottPi = t.ScottPi()
	b.CohenKappa = t.CohenKappa()
	b.Accuracy = b.ObservedAgreement
	if !b.Accuracy.Defined() {
		b.Accuracy = Undef("no valid predictions")
	}
	tp, fn, fp, tn := c[0][0], c[0][1], c[1][0], c[1][1] // failure positive
	b.FailPrecision = ratio(tp, tp+fp, "the judge never says fail")
	b.FailRecall = ratio(tp, tp+fn, "no failures in the reference")
	if b.FailPrecision.Defined() && b.FailRecall.Defined() {
		b.FailF1 = ratio(2*tp, 2*tp+fp+fn, "no items")
	} else {
		b.FailF1 = Undef("failure precision or recall is undefined")
	}
	b.PassPrecision = ratio(tn, tn+fn, "the judge never says pass")
	b.PassRecall = ratio(tn, tn+fp, "no passes in the reference")
	den := math.Sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
	b.MCC = ratio(tp*tn-fp*fn, den, "the judge or the reference uses one class only")
}

// BinaryStatistic returns a Statistic computing one named figure, for
// bootstraps; it allocates nothing per call.
func BinaryStatistic(name string, ref, pred []int) (Statistic, error) {
	var probe Binary
	if _, err := probe.Metric(name); err != nil {
		return nil, err
	}
	return func(idx []int) Value {
		bc := countBinary(ref, pred, idx)
		var b Binary
		bc.fill(&b)
		v, _ := b.Metric(name)
		return v
	}, nil
}

// BinaryFigures returns a Statistics computing the named figures of ref
// against pred from one count per resample (for BootstrapEach).
func BinaryFigures(names []string, ref, pred []int) (Statistics, error) {
	var probe Binary
	for _, name := range names {
		if _, err := probe.Metric(name); err != nil {
			return nil, err
		}
	}
	// Each item's cell of the table, counted as integers per resample.
	cell := make([]uint8, len(ref))
	for i := range ref {
		if pred[i] < 0 {
			cell[i] = 4
		} else {
			cell[i] = uint8(ref[i]*2 + pred[i])
		}
	}
	return func(idx []int, out []Value) {
		var n [5]int
		for _, i := range idx {
			n[cell[i]]++
		}
		bc := binaryCounts{invalid: n[4]}
		bc.c = [2][2]float64{{float64(n[0]), float64(n[1])}, {float64(n[2]), float64(n[3])}}
		var b Binary
		bc.fill(&b)
		for j, name := range names {
			out[j], _ = b.Metric(name)
		}
	}, nil
}

// SweepPoint is every binary figure at one threshold.
type SweepPoint struct {
	Threshold float64 `json:"threshold"`
	Metrics   *Binary `json:"metrics"`
	// ScottPiCI is Scott's pi's interval at this threshold, when asked for
	// (SweepIntervals).
	ScottPiCI *Interval `json:"scott_pi_ci,omitempty"`
	pred      []int
}

// Sweep evaluates a score-based judge at every threshold: the judge says
// pass when its score is at least the threshold. The thresholds are the
// distinct scores, plus one above the highest (the judge never passes).
// valid marks items with a score (nil: all); the others count as invalid.
func Sweep(ref []int, scores []float64, valid []bool) []SweepPoint {
	var ts []float64
	seen := map[float64]bool{}
	hi := math.Inf(-1)
	for i, s := range scores {
		if valid != nil && !valid[i] {
			continue
		}
		if !seen[s] {
			seen[s] = true
			ts = append(ts, s)
		}
		hi = max(hi, s)
	}
	sort.Float64s(ts)
	if len(ts) > 0 {
		ts = append(ts, hi+1)
	}
	pred := make([]int, len(scores))
	out := make([]SweepPoint, 0, len(ts))
	for _, t := range ts {
		for i, s := range scores {
			switch {
			case valid != nil && !valid[i]:
				pred[i] = Invalid
			case s >= t:
				pred[i] = Pass
			default:
				pred[i] = Fail
			}
		}
		out = append(out, SweepPoint{Threshold: t, Metrics: ComputeBinary(ref, pred, nil), pred: append([]int(nil), pred...)})
	}
	return out
}

// SweepIntervals gives every point of a sweep its Scott's pi interval, by
// the same bootstrap as the figures at the chosen threshold, in one pass:
// each resample counts every item once by its label and by the highest
// threshold it reaches, and every point's table is a sum of those counts.
func SweepIntervals(points []SweepPoint, ref []int, opt BootstrapOptions) {
	ivs := BootstrapEach(len(ref), len(points), SweepStatistics(points, ref), opt)
	for i := range points {
		points[i].ScottPiCI = &ivs[i]
	}
}

// SweepStatistics computes Scott's pi at every point of a sweep from one
// count per resample.
func SweepStatistics(points []SweepPoint, ref []int) Statistics {
	t := len(points)
	// reach[i]: how many of the points (in ascending threshold order) item
	// i passes, or -1 when invalid; a point's prediction is pass for the
	// items that reach beyond it.
	reach := make([]int, len(ref))
	for i := range ref {
		reach[i] = 0
		for q := range points {
			switch points[q].pred[i] {
			case Pass:
				reach[i] = q + 1
			case Invalid:
				reach[i] = -1
			}
			if reach[i] < 0 {
				break
			}
		}
	}
	cnt := make([][]float64, 2) // cnt[label][reach]
	for l := range cnt {
		cnt[l] = make([]float64, t+1)
	}
	return func(idx []int, out []Value) {
		for l := range cnt {
			clear(cnt[l])
		}
		invalid := 0
		for _, i := range idx {
			if reach[i] < 0 {
				invalid++
				continue
			}
			cnt[ref[i]][reach[i]]++
		}
		// At point q the items reaching q+1 or more pass, the rest fail.
		var pass [2]float64
		for l := range 2 {
			for r := t; r >= 1; r-- {
				pass[l] += cnt[l][r]
			}
		}
		var total [2]float64
		for l := range 2 {
			for r := 0; r <= t; r++ {
				total[l] += cnt[l][r]
			}
		}
		for q := range t {
			bc := binaryCounts{invalid: invalid}
			for l := range 2 {
				bc.c[l][Pass] = pass[l]
				bc.c[l][Fail] = total[l] - pass[l]
				pass[l] -= cnt[l][q+1]
			}
			var b Binary
			bc.fill(&b)
			out[q] = b.ScottPi
		}
	}
}

// BestThreshold picks the point with the highest defined value of metric;
// ties go to the higher (stricter) threshold.
func BestThreshold(points []SweepPoint, metric string) (SweepPoint, error) {
	best := -1
	bestV := math.Inf(-1)
	for i, p := range points {
		v, err := p.Metrics.Metric(metric)
		if err != nil {
			return SweepPoint{}, err
		}
		if v.Defined() && v.V >= bestV {
			best, bestV = i, v.V
		}
	}
	if best < 0 {
		return SweepPoint{}, fmt.Errorf("%s is undefined at every threshold", metric)
	}
	return points[best], nil
}
