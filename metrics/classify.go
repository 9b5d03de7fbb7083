package metrics

import "math"

// ClassMetrics are one class's precision, recall and F1, taking that class
// as the positive one.
type ClassMetrics struct {
	Class     string `json:"class"`
	Precision Value  `json:"precision"`
	Recall    Value  `json:"recall"`
	F1        Value  `json:"f1"`
	// Support is how many reference items are in the class.
	Support int `json:"support"`
}

// Classification compares predictions with reference labels. Invalid
// predictions (an unparseable judge answer) are not a class: they are
// counted apart and left out of every other figure, which are over the
// valid predictions only.
type Classification struct {
	Classes []string `json:"classes"`
	// Confusion[i][j] counts items of reference class i predicted as j.
	Confusion [][]int `json:"confusion"`
	N         int     `json:"n"`
	Invalid   int     `json:"invalid"`
	// InvalidRate is Invalid over all items, valid or not.
	InvalidRate Value          `json:"invalid_rate"`
	Accuracy    Value          `json:"accuracy"`
	PerClass    []ClassMetrics `json:"per_class"`
	MCC         Value          `json:"mcc"`
}

// Classify computes the classification figures of predictions against a
// reference over the named classes (indices into classes); pred[i] < 0
// marks an invalid prediction.
func Classify(ref, pred []int, classes []string) *Classification {
	k := len(classes)
	c := &Classification{Classes: classes, Confusion: make([][]int, k)}
	for i := range c.Confusion {
		c.Confusion[i] = make([]int, k)
	}
	for i := range ref {
		if pred[i] < 0 {
			c.Invalid++
			continue
		}
		c.Confusion[ref[i]][pred[i]]++
		c.N++
	}
	c.InvalidRate = ratio(float64(c.Invalid), float64(len(ref)), "no items")
	correct := 0
	t := make([]float64, k) // reference counts
	p := make([]float64, k) // predicted counts
	for i := range k {
		correct += c.Confusion[i][i]
		for j := range k {
			t[i] += float64(c.Confusion[i][j])
			p[j] += float64(c.Confusion[i][j])
		}
	}
	c.Accuracy = ratio(float64(correct), float64(c.N), "no valid predictions")
	for i, name := range classes {
		tp := float64(c.Confusion[i][i])
		m := ClassMetrics{Class: name, Support: int(t[i]),
			Precision: ratio(tp, p[i], "the class is never predicted"),
			Recall:    ratio(tp, t[i], "the class never occurs in the reference")}
		if m.Precision.Defined() && m.Recall.Defined() {
			m.F1 = ratio(2*tp, p[i]+t[i], "no items")
		} else {
			m.F1 = Undef("precision or recall is undefined")
		}
		c.PerClass = append(c.PerClass, m)
	}
	// Gorodkin's multi-class MCC; for two classes it is the usual
	// (TP TN - FP FN) / sqrt(...).
	s := float64(c.N)
	sumPT, sumP2, sumT2 := 0.0, 0.0, 0.0
	for i := range k {
		sumPT += p[i] * t[i]
		sumP2 += p[i] * p[i]
		sumT2 += t[i] * t[i]
	}
	den := math.Sqrt((s*s - sumP2) * (s*s - sumT2))
	c.MCC = ratio(float64(correct)*s-sumPT, den, "a rater (reference or prediction) uses one class only")
	return c
}

// Class returns the metrics of a named class.
func (c *Classification) Class(name string) ClassMetrics {
	for _, m := range c.PerClass {
		if m.Class == name {
			return m
		}
	}
	return ClassMetrics{Class: name, Precision: Undef("no class %q", name), Recall: Undef("no class %q", name), F1: Undef("no class %q", name)}
}
