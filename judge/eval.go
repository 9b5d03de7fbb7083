package judge

import (
	"fmt"

	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
)

// ReportedMetrics are the figures an evaluation gives with intervals, in
// report order.
var ReportedMetrics = []string{"scott_pi", "cohen_kappa", "accuracy", "fail_precision", "fail_recall", "pass_recall", "mcc"}

// Evaluation is a judge's agreement with recorded outcomes on a set of
// records.
type Evaluation struct {
	Judge     string `json:"judge"`
	Prompt    string `json:"prompt"`
	Model     string `json:"model"`
	Kind      Kind   `json:"kind"`
	Threshold int    `json:"threshold,omitempty"`
	// N counts the records; Invalid those whose answer could not be read
	// (kept out of every other figure).
	N       int                       `json:"n"`
	Invalid int                       `json:"invalid"`
	Metrics *metrics.Binary           `json:"-"`
	Figures map[string]metrics.Figure `json:"figures"`
	// Sweep holds every figure at every threshold (rubric judges).
	Sweep []metrics.SweepPoint `json:"thresholds,omitempty"`

	ref, pred []int
	scores    []float64
	valid     []bool
	groups    []string
}

// Labels returns the records' labels as metrics values.
func Labels(rs []*record.Record) []int {
	out := make([]int, len(rs))
	for i, r := range rs {
		if r.Outcome.Label == record.Pass {
			out[i] = metrics.Pass
		}
	}
	return out
}

// Groups returns each record's bootstrap cluster: its group, or its own
// ID when it has none.
func Groups(rs []*record.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Group
		if out[i] == "" {
			out[i] = "\x00" + r.ID
		}
	}
	return out
}

// Evaluate scores verdicts against the records' labels. Every record needs
// a verdict. threshold is the rubric pass threshold (0: the spec's).
func Evaluate(s *Spec, model string, rs []*record.Record, verdicts map[string]Verdict, threshold int, boot metrics.BootstrapOptions) (*Evaluation, error) {
	if threshold == 0 {
		threshold = s.PassThreshold()
	}
	e := &Evaluation{Judge: s.Name, Prompt: s.Version(), Model: model, Kind: s.Kind, N: len(rs),
		ref: Labels(rs), groups: Groups(rs)}
	if s.Kind == Rubric {
		e.Threshold = threshold
	}
	for _, r := range rs {
		v, ok := verdicts[r.ID]
		if !ok {
			return nil, fmt.Errorf("record %s has no verdict of prompt %.12s with %s", r.ID, e.Prompt, model)
		}
		e.scores = append(e.scores, v.Score)
		e.valid = append(e.valid, v.Outcome != Invalid)
		switch v.Decide(s.Kind, threshold) {
		case Pass:
			e.pred = append(e.pred, metrics.Pass)
		case Fail:
			e.pred = append(e.pred, metrics.Fail)
		default:
			e.pred = append(e.pred, metrics.Invalid)
			e.Invalid++
		}
	}
	e.Metrics = metrics.ComputeBinary(e.ref, e.pred, nil)
	boot.Groups = e.groups
	e.Figures = map[string]metrics.Figure{}
	// One pass of resamples: each counts the items once and every figure
	// is read from the count.
	var ivs []metrics.Interval
	if boot.Resamples >= 0 {
		stats, err := metrics.BinaryFigures(ReportedMetrics, e.ref, e.pred)
		if err != nil {
			return nil, err
		}
		ivs = metrics.BootstrapEach(len(rs), len(ReportedMetrics), stats, boot)
	}
	for j, name := range ReportedMetrics {
		v, _ := e.Metrics.Metric(name)
		f := metrics.Figure{Value: v, Undefined: v.Undefined}
		if ivs != nil {
			f.CI = &ivs[j]
		}
		e.Figures[name] = f
	}
	if s.Kind == Rubric {
		e.Sweep = metrics.Sweep(e.ref, e.scores, e.valid)
		if boot.Resamples >= 0 {
			metrics.SweepIntervals(e.Sweep, e.ref, boot)
		}
	}
	return e, nil
}

// Statistic returns a named figure of this evaluation as a bootstrap
// statistic over its records.
func (e *Evaluation) Statistic(name string) (metrics.Statistic, error) {
	return metrics.BinaryStatistic(name, e.ref, e.pred)
}

// TuneThreshold picks the rubric threshold with the best value of metric
// (default Scott's pi) on these records.
func (e *Evaluation) TuneThreshold(metric string) (int, metrics.Value, error) {
	if e.Kind != Rubric {
		return 0, metrics.Value{}, fmt.Errorf("only rubric judges have a threshold")
	}
	if metric == "" {
		metric = "scott_pi"
	}
	best, err := metrics.BestThreshold(e.Sweep, metric)
	if err != nil {
		return 0, metrics.Value{}, err
	}
	v, _ := best.Metrics.Metric(metric)
	return int(best.Threshold), v, nil
}

// Compare returns, for each reported metric, the paired bootstrap interval
// of e minus other on the same records (which must be the same, in the
// same order).
func (e *Evaluation) Compare(other *Evaluation, boot metrics.BootstrapOptions) (map[string]metrics.Figure, error) {
	if len(e.ref) != len(other.ref) {
		return nil, fmt.Errorf("the evaluations cover different records (%d and %d)", len(e.ref), len(other.ref))
	}
	// One pass of resamples for every figure of both.
	a, err := metrics.BinaryFigures(ReportedMetrics, e.ref, e.pred)
	if err != nil {
		return nil, err
	}
	b, _ := metrics.BinaryFigures(ReportedMetrics, other.ref, other.pred)
	k := len(ReportedMetrics)
	va, vb := make([]metrics.Value, k), make([]metrics.Value, k)
	boot.Groups = e.groups
	ivs := metrics.BootstrapEach(len(e.ref), k, func(idx []int, out []metrics.Value) {
		a(idx, va)
		b(idx, vb)
		for j := range out {
			switch {
			case !va[j].Defined():
				out[j] = va[j]
			case !vb[j].Defined():
				out[j] = vb[j]
			default:
				out[j] = metrics.Def(va[j].V - vb[j].V)
			}
		}
	}, boot)
	out := map[string]metrics.Figure{}
	for j, name := range ReportedMetrics {
		f := gainValue(e, other, name)
		f.CI = &ivs[j]
		out[name] = f
	}
	return out, nil
}

func gainValue(e, other *Evaluation, name string) metrics.Figure {
	va, _ := e.Metrics.Metric(name)
	vb, _ := other.Metrics.Metric(name)
	f := metrics.Figure{}
	if va.Defined() && vb.Defined() {
		f.Value = metrics.Def(va.V - vb.V)
	} else {
		f.Value = metrics.Undef("undefined for one of the judges")
		f.Undefined = f.Value.Undefined
	}
	return f
}

// Gain is one metric of e minus the same of other on the same records,
// with its paired bootstrap interval (whole groups resampled).
func (e *Evaluation) Gain(other *Evaluation, name string, boot metrics.BootstrapOptions) (metrics.Figure, error) {
	if len(e.ref) != len(other.ref) {
		return metrics.Figure{}, fmt.Errorf("the evaluations cover different records (%d and %d)", len(e.ref), len(other.ref))
	}
	boot.Groups = e.groups
	a, err := e.Statistic(name)
	if err != nil {
		return metrics.Figure{}, err
	}
	b, _ := other.Statistic(name)
	f := gainValue(e, other, name)
	iv := metrics.PairedBootstrap(len(e.ref), a, b, boot)
	f.CI = &iv
	return f, nil
}
