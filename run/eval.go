package run

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/report"
)

// EvalConfig configures an evaluation. Zero values: no limit, the judge's
// own threshold, no tuning, no comparison.
type EvalConfig struct {
	Judge *judge.Spec
	Model string
	// Split is the records' split part, NAME:PART.
	Split         string
	ExcludeStatus []record.Status
	Limit         int
	// Threshold overrides a rubric judge's pass threshold.
	Threshold int
	// TuneOn is a split part to tune a rubric judge's threshold on, for
	// TuneMetric (default scott_pi).
	TuneOn, TuneMetric string
	// Compare is a second judge: the paired difference is reported.
	Compare *judge.Spec
	// Version is a stored prompt version of Judge, evaluated beside the
	// original it descends from (its transfer to Model).
	Version     string
	Resamples   int
	Seed        uint64
	Concurrency int
	// CheckRecords, when set, may refuse the records (the simulated
	// model on records it did not make).
	CheckRecords func([]*record.Record) error
	// Simulated marks results of the simulated model.
	Simulated bool
	// GavelVersion names the build, for the report.
	GavelVersion string
	// MaxInputChars, when above 0, cuts each longer input (CutRecords).
	MaxInputChars int
	// Retest, when above 0, asks the judge again about that many of the
	// records (all when more) and reports its own flip rate (--retest).
	Retest int
}

// Eval is an evaluation prepared: its judges and records read, nothing
// judged yet.
type Eval struct {
	cfg      EvalConfig
	spec     *judge.Spec
	other    *judge.Spec
	rs       []*record.Record
	trainRS  []*record.Record
	transfer *Transfer
}

// PrepareEval reads what an evaluation needs and checks its configuration.
func PrepareEval(ctx context.Context, st Store, cfg EvalConfig) (*Eval, error) {
	s := cfg.Judge
	if cfg.Resamples < 1 {
		return nil, deploy.FieldErrorf("resamples", "must be at least 1")
	}
	if cfg.TuneMetric == "" {
		cfg.TuneMetric = "scott_pi"
	}
	if _, err := (&metrics.Binary{}).Metric(cfg.TuneMetric); err != nil {
		return nil, deploy.FieldErrorf("tune_metric", "%v", err)
	}
	if (cfg.TuneOn != "" || cfg.Threshold != 0) && s.Kind != judge.Rubric {
		field := "threshold"
		if cfg.TuneOn != "" {
			field = "tune_on"
		}
		return nil, deploy.FieldErrorf(field, "thresholds and their tuning are for rubric judges; %s is %s", s.Name, s.Kind)
	}
	if cfg.Threshold < 0 || cfg.Threshold > len(s.Checks) {
		return nil, deploy.FieldErrorf("threshold", "%d: %s has %d checks, so a threshold is 1 to %d", cfg.Threshold, s.Name, len(s.Checks), len(s.Checks))
	}
	e := &Eval{cfg: cfg, spec: s, other: cfg.Compare}
	if cfg.Compare != nil && cfg.Version != "" {
		return nil, deploy.FieldErrorf("version", "a version is compared with its original; compare another judge apart")
	}
	if cfg.Version != "" {
		pv, root, err := Lineage(ctx, st, cfg.Version)
		if err != nil {
			return nil, err
		}
		if pv.Judge != s.Name {
			return nil, deploy.FieldErrorf("version", "%.12s is a version of %s, not of judge %s", pv.Hash, pv.Judge, s.Name)
		}
		e.spec, e.other = pv.Spec, root.Spec
		e.transfer = &Transfer{Version: pv.Hash, Original: root.Hash, Model: cfg.Model}
		cals, err := st.Calibrations(ctx, s.Name)
		if err != nil {
			return nil, err
		}
		for _, c := range cals {
			if c.Selected == pv.Hash && !slices.Contains(e.transfer.CalibratedWith, c.Model) {
				e.transfer.CalibratedWith = append(e.transfer.CalibratedWith, c.Model)
			}
		}
	}
	var err error
	if e.rs, err = Records(ctx, st, "split", cfg.Split, cfg.ExcludeStatus, cfg.Limit); err != nil {
		return nil, err
	}
	e.rs = CutRecords(e.rs, cfg.MaxInputChars)
	if cfg.CheckRecords != nil {
		if err := cfg.CheckRecords(e.rs); err != nil {
			return nil, err
		}
	}
	if cfg.TuneOn != "" {
		if e.trainRS, err = Records(ctx, st, "tune_on", cfg.TuneOn, cfg.ExcludeStatus, 0); err != nil {
			return nil, err
		}
		e.trainRS = CutRecords(e.trainRS, cfg.MaxInputChars)
	}
	return e, nil
}

// Plan adds the evaluation's model calls to a dry run's plan.
func (e *Eval) Plan(ctx context.Context, p *llm.Plan, c llm.Cache) error {
	model := e.cfg.Model
	if err := judge.PlanRun(ctx, p, c, e.spec, model, e.rs, e.spec.Name+" on "+e.cfg.Split); err != nil {
		return err
	}
	if e.trainRS != nil {
		if err := judge.PlanRun(ctx, p, c, e.spec, model, e.trainRS, e.spec.Name+" on "+e.cfg.TuneOn+" (threshold)"); err != nil {
			return err
		}
	}
	if e.other != nil {
		return judge.PlanRun(ctx, p, c, e.other, model, e.rs, e.other.Name+" on "+e.cfg.Split)
	}
	return nil
}

// EvalResult is an evaluation's result; marshalled, it is eval's --json
// output: each reported figure (scott_pi, cohen_kappa, ... with value and
// ci) at the top level beside the fields below. Field names are a
// contract.
type EvalResult struct {
	ResultVersion int    `json:"result_version"`
	Judge         string `json:"judge"`
	Prompt        string `json:"prompt"`
	Model         string `json:"model"`
	Split         string `json:"split"`
	Simulated     bool   `json:"simulated"`
	N             int    `json:"n"`
	Invalid       int    `json:"invalid"`
	// InputTooLong counts the invalid verdicts of inputs the model refused
	// for their length.
	InputTooLong int `json:"input_too_long"`
	// InputsCut counts the records whose inputs --max-input-chars cut.
	InputsCut int       `json:"inputs_cut"`
	Threshold int       `json:"threshold,omitempty"`
	Confusion [2][2]int `json:"confusion"`
	// ConfusionByLabel is the same matrix labelled: outcome, then verdict.
	ConfusionByLabel map[string]map[string]int `json:"confusion_by_label"`
	Figures          map[string]metrics.Figure `json:"-"`
	Thresholds       []ThresholdRow            `json:"thresholds,omitempty"`
	Tuned            *Tuned                    `json:"tuned,omitempty"`
	Compare          *Compared                 `json:"compare,omitempty"`
	Transfer         *Transfer                 `json:"transfer,omitempty"`
	// Retest is the judge's own noise (--retest): the floor under which
	// a comparison's flips cannot be told from noise.
	Retest *judge.Retest `json:"retest,omitempty"`
	Calls  llm.RunStats  `json:"calls"`

	// Report is the HTML and Markdown report's content.
	Report *report.EvalReport `json:"-"`
	// The records and verdicts behind the figures, for the run's log:
	// the judge's at the evaluation's threshold, and the compared judge's
	// (or the original's, for a version) beside them.
	judged        []*record.Record
	spec, other   *judge.Spec
	verdicts      map[string]judge.Verdict
	otherVerdicts map[string]judge.Verdict
}

// MarshalJSON puts the figures at the top level.
func (r *EvalResult) MarshalJSON() ([]byte, error) {
	type plain EvalResult
	return inline((*plain)(r), r.Figures)
}

// inline marshals v with extra's entries added at its top level, keys
// sorted, HTML left unescaped (as the commands print JSON).
func inline[T any](v any, extra map[string]T) ([]byte, error) {
	b, err := record.CompactJSON(v)
	if err != nil {
		return nil, err
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, x := range extra {
		if m[k], err = record.CompactJSON(x); err != nil {
			return nil, err
		}
	}
	return record.CompactJSON(m)
}

// ThresholdRow is a rubric judge's figures at one threshold.
type ThresholdRow struct {
	Threshold     float64       `json:"threshold"`
	ScottPi       metrics.Value `json:"scott_pi"`
	CohenKappa    metrics.Value `json:"cohen_kappa"`
	Accuracy      metrics.Value `json:"accuracy"`
	FailPrecision metrics.Value `json:"fail_precision"`
	FailRecall    metrics.Value `json:"fail_recall"`
	PassRecall    metrics.Value `json:"pass_recall"`
	// ScottPiCI is Scott's pi's 95% interval at this threshold.
	ScottPiCI *metrics.Interval `json:"scott_pi_ci,omitempty"`
}

// Tuned is a rubric threshold tuned on another split part, and the
// figures it gives on the evaluated one.
type Tuned struct {
	On        string                    `json:"on"`
	Metric    string                    `json:"metric"`
	Threshold int                       `json:"threshold"`
	OnValue   metrics.Value             `json:"on_value"`
	Test      map[string]metrics.Figure `json:"test"`
}

// Compared is a second judge on the same records, with the paired
// difference (the first judge minus this one).
type Compared struct {
	Judge  string `json:"judge"`
	Prompt string `json:"prompt"`
	// Flips counts the records the two judges decided differently (both
	// readable), of Paired: read beside the retest's flips.
	Flips      int                       `json:"flips"`
	Paired     int                       `json:"paired"`
	Figures    map[string]metrics.Figure `json:"figures"`
	Difference map[string]metrics.Figure `json:"difference"`
}

// Transfer is a stored prompt version evaluated with a model (maybe not
// the one it was calibrated with) beside the original it descends from,
// on the same model and records: the paired gain says whether the
// calibration carries over.
type Transfer struct {
	Version        string         `json:"version"`
	Original       string         `json:"original"`
	Model          string         `json:"model"`
	CalibratedWith []string       `json:"calibrated_with,omitempty"`
	Gain           metrics.Figure `json:"gain"`
	// OriginalFigures are the original's figures.
	OriginalFigures map[string]metrics.Figure `json:"original_figures"`
	Difference      map[string]metrics.Figure `json:"difference"`
	// Flips counts the records the version and the original decide
	// differently, of Paired (read beside --retest's).
	Flips  int `json:"flips"`
	Paired int `json:"paired"`
}

// Labelled names a confusion matrix's rows (outcome) and columns
// (verdict).
func Labelled(c [2][2]int) map[string]map[string]int {
	return map[string]map[string]int{"fail": {"fail": c[0][0], "pass": c[0][1]}, "pass": {"fail": c[1][0], "pass": c[1][1]}}
}

// Run judges every record the evaluation needs (all of them before it
// stops, when requests are pending) and measures the judge.
func (e *Eval) Run(ctx context.Context, env *Env) (*EvalResult, error) {
	cfg, s, other, rs := e.cfg, e.spec, e.other, e.rs
	boot := metrics.BootstrapOptions{Resamples: cfg.Resamples, Seed: cfg.Seed}
	// Every model call first, so that an offline run records all its
	// pending requests and stops once, at this stage boundary.
	var st stages
	vs, err := st.judge(ctx, env, s, cfg.Model, rs, cfg.Concurrency)
	if err != nil {
		return nil, err
	}
	var trainVS, otherVS map[string]judge.Verdict
	if e.trainRS != nil {
		if trainVS, err = st.judge(ctx, env, s, cfg.Model, e.trainRS, cfg.Concurrency); err != nil {
			return nil, err
		}
	}
	if other != nil {
		if otherVS, err = st.judge(ctx, env, other, cfg.Model, rs, cfg.Concurrency); err != nil {
			return nil, err
		}
	}
	var retest *judge.Retest
	if cfg.Retest > 0 && vs != nil {
		if retest, err = st.retest(ctx, env, s, cfg.Model, judge.RetestRecords(rs, cfg.Retest), vs, cfg.Threshold, cfg.Concurrency, boot); err != nil {
			return nil, err
		}
	}
	if err := st.err(); err != nil {
		return nil, err
	}

	ev, err := judge.Evaluate(s, cfg.Model, rs, vs, cfg.Threshold, boot)
	if err != nil {
		return nil, err
	}
	out := &EvalResult{ResultVersion: ResultVersion, Judge: s.Name, Prompt: ev.Prompt, Model: cfg.Model, Split: cfg.Split, Simulated: cfg.Simulated,
		N: ev.N, Invalid: ev.Invalid, Threshold: ev.Threshold, Confusion: ev.Metrics.Confusion, Figures: ev.Figures,
		ConfusionByLabel: Labelled(ev.Metrics.Confusion), Retest: retest}
	for _, p := range ev.Sweep {
		m := p.Metrics
		out.Thresholds = append(out.Thresholds, ThresholdRow{p.Threshold, m.ScottPi, m.CohenKappa, m.Accuracy, m.FailPrecision, m.FailRecall, m.PassRecall, p.ScottPiCI})
	}
	tag := ""
	if cfg.Simulated {
		tag = "[simulated] "
	}
	rep := &report.EvalReport{
		Title: fmt.Sprintf("%sJudge evaluation: %s on %s", tag, s.Name, cfg.Split), Simulated: cfg.Simulated,
		Split: cfg.Split, Version: cfg.GavelVersion,
		Intervals: fmt.Sprintf("percentile bootstrap, %d resamples of whole groups, seed %d", cfg.Resamples, cfg.Seed),
		Sections:  []report.EvalSection{{Name: s.Name, Eval: ev, Disagreements: report.Disagreements(s.Kind, ev.Threshold, rs, vs)}},
	}
	if e.trainRS != nil {
		te, err := judge.Evaluate(s, cfg.Model, e.trainRS, trainVS, 0, metrics.BootstrapOptions{Resamples: 1})
		if err != nil {
			return nil, err
		}
		th, onValue, err := te.TuneThreshold(cfg.TuneMetric)
		if err != nil {
			return nil, err
		}
		tuned, err := judge.Evaluate(s, cfg.Model, rs, vs, th, boot)
		if err != nil {
			return nil, err
		}
		out.Tuned = &Tuned{On: cfg.TuneOn, Metric: cfg.TuneMetric, Threshold: th, OnValue: onValue, Test: tuned.Figures}
		rep.Sections = append(rep.Sections, report.EvalSection{Name: s.Name + " with its threshold tuned on " + cfg.TuneOn, Eval: tuned,
			Note: fmt.Sprintf("Threshold %d had the best %s on %s (%s).", th, cfg.TuneMetric, cfg.TuneOn, onValue)})
	}
	if other != nil {
		oe, err := judge.Evaluate(other, cfg.Model, rs, otherVS, 0, boot)
		if err != nil {
			return nil, err
		}
		diff, err := ev.Compare(oe, boot)
		if err != nil {
			return nil, err
		}
		if t := e.transfer; t != nil {
			t.Gain, t.OriginalFigures, t.Difference = diff["scott_pi"], oe.Figures, diff
			t.Flips, t.Paired = Flips(s, other, rs, vs, otherVS, ev.Threshold)
			out.Transfer = t
			rep.Sections[0].Name = fmt.Sprintf("version %.12s", t.Version)
			rep.Sections = append(rep.Sections, report.EvalSection{Name: fmt.Sprintf("original %.12s", t.Original), Eval: oe})
			note := fmt.Sprintf("Version %.12s against the original prompt it descends from, both with %s on the same records.", t.Version, cfg.Model)
			if len(t.CalibratedWith) > 0 {
				note += fmt.Sprintf(" It was selected by a calibration with %s", strings.Join(t.CalibratedWith, ", "))
				if !slices.Contains(t.CalibratedWith, cfg.Model) {
					note += ": this is its transfer to another model"
				}
				note += "."
			}
			rep.Comparison = &report.Comparison{A: fmt.Sprintf("version %.12s", t.Version), B: "original", Figures: diff, Note: note}
		} else {
			out.Compare = &Compared{Judge: other.Name, Prompt: oe.Prompt, Figures: oe.Figures, Difference: diff}
			out.Compare.Flips, out.Compare.Paired = Flips(s, other, rs, vs, otherVS, ev.Threshold)
			rep.Sections = append(rep.Sections, report.EvalSection{Name: other.Name, Eval: oe})
			rep.Comparison = &report.Comparison{A: s.Name, B: other.Name, Figures: diff}
		}
	}
	rep.Retest = retest
	if out.Compare != nil {
		rep.Flips, rep.Paired = out.Compare.Flips, out.Compare.Paired
	} else if out.Transfer != nil {
		rep.Flips, rep.Paired = out.Transfer.Flips, out.Transfer.Paired
	}
	out.Calls = env.stats()
	out.Report = rep
	out.judged, out.spec, out.other, out.verdicts, out.otherVerdicts = rs, s, other, vs, otherVS
	out.InputTooLong, out.InputsCut = tooLong(vs), cutCount(rs)
	return out, nil
}
