package acr

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/judge"
)

// Weights are the pointwise criteria's weights in the composite score.
type Weights map[string]float64

// ParseWeights reads --weights: "correctness=2,readability=0.5". Criteria
// not named keep weight 1; every name must be one of the judge's
// criteria; weights are at least 0 and not all 0.
func ParseWeights(s string, spec *judge.Spec) (Weights, error) {
	w := Weights{}
	for _, c := range spec.Criteria {
		w[c.Name] = 1
	}
	if strings.TrimSpace(s) == "" {
		return w, nil
	}
	for _, part := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("%q is not NAME=WEIGHT", part)
		}
		if _, known := w[name]; !known {
			var names []string
			for _, c := range spec.Criteria {
				names = append(names, c.Name)
			}
			return nil, fmt.Errorf("%q is not a criterion of judge %s (%s)", name, spec.Name, strings.Join(names, ", "))
		}
		x, err := strconv.ParseFloat(val, 64)
		if err != nil || x < 0 || math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, fmt.Errorf("%s: %q is not a number of at least 0", name, val)
		}
		w[name] = x
	}
	total := 0.0
	for _, x := range w {
		total += x
	}
	if total == 0 {
		return nil, fmt.Errorf("every weight is 0")
	}
	return w, nil
}

// String writes weights back in --weights form, sorted by name.
func (w Weights) String() string {
	names := make([]string, 0, len(w))
	for n := range w {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, n+"="+strconv.FormatFloat(w[n], 'g', -1, 64))
	}
	return strings.Join(parts, ",")
}

// Judged is the pointwise part of an answer's score: the weighted mean of
// its criteria scores, each normalised from the judge's scale to [0, 1]:
//
//	judged = sum_c w_c (s_c - min) / (max - min) / sum_c w_c
//
// ok is false for an invalid verdict or a missing criterion score.
func Judged(spec *judge.Spec, w Weights, scores map[string]int) (v float64, ok bool) {
	lo, hi := float64(spec.Scale[0]), float64(spec.Scale[1])
	total, weights := 0.0, 0.0
	for _, c := range spec.Criteria {
		s, present := scores[c.Name]
		if !present {
			return 0, false
		}
		total += w[c.Name] * (float64(s) - lo) / (hi - lo)
		weights += w[c.Name]
	}
	if weights == 0 {
		return 0, false
	}
	return total / weights, true
}

// Composite is an answer's composite score in [0, 1]:
//
//	composite = e * x + (1 - e) * judged
//
// where x is the executor's result (1 when the code passes its tests, or
// without tests builds and loads; else 0), judged the pointwise part above
// (0 when the judge's answer is invalid: an answer no one could grade does
// not win), and e the executor's weight (--exec-weight, default 0.5). With
// e = 0.5 every answer that works ranks at or above every answer that does
// not. When no code can be run (no language), x is unknown and the
// composite is the judged part alone.
func Composite(execWeight float64, works *bool, judged float64, judgedOK bool) float64 {
	if !judgedOK {
		judged = 0
	}
	if works == nil {
		return judged
	}
	x := 0.0
	if *works {
		x = 1
	}
	return execWeight*x + (1-execWeight)*judged
}

// Best returns the index of the highest composite; ties go to the lower
// index (the earlier sample), so the choice does not depend on timing.
// It returns -1 for no scores.
func Best(composites []float64) int {
	best := -1
	for i, c := range composites {
		if best < 0 || c > composites[best] {
			best = i
		}
	}
	return best
}
