package deploy

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
)

// MinWindow is the fewest outcomes a window needs before its agreement can
// raise an alert.
const MinWindow = 10

// LiveFigure is a version's agreement with the outcomes that arrived for
// the changes it judged.
type LiveFigure struct {
	N  int            `json:"n"`
	Pi metrics.Figure `json:"scott_pi"`
}

// DriftWindow is one time window of the drift monitor.
type DriftWindow struct {
	Start time.Time      `json:"start"`
	N     int            `json:"n"`
	Pi    metrics.Figure `json:"scott_pi"`
}

// DriftReport is the drift monitor's state for a judge's active version.
type DriftReport struct {
	Judge   string        `json:"judge"`
	Version string        `json:"version"`
	Model   string        `json:"model"`
	By      string        `json:"by"`
	Windows []DriftWindow `json:"windows"`
	Overall *LiveFigure   `json:"overall,omitempty"`
	// Baseline is the version's Scott's pi on the test part when the gate
	// promoted it; nil when it was not promoted through the gate.
	Baseline *metrics.Figure `json:"baseline,omitempty"`
	// Alert is set when the latest window with at least MinWindow outcomes
	// has a pi below the baseline's interval; Status says why or why not.
	Alert  bool   `json:"alert"`
	Status string `json:"status"`
}

func judged(ctx context.Context, st Store, judgeName, version, model string) (*judge.PromptVersion, []*record.Record, map[string]judge.Verdict, error) {
	pv, err := st.Prompt(ctx, version)
	if err != nil {
		return nil, nil, nil, err
	}
	jrs, err := st.JudgedRecords(ctx, VerdictFilter{Judge: judgeName, Prompt: version, Model: model})
	if err != nil {
		return nil, nil, nil, err
	}
	rs := make([]*record.Record, 0, len(jrs))
	vs := make(map[string]judge.Verdict, len(jrs))
	for _, jr := range jrs {
		if jr.Record.Outcome.Status == record.StatusDraft {
			continue // not a reviewer's rejection, as in calibration
		}
		rs = append(rs, jr.Record)
		vs[jr.Record.ID] = jr.Verdict
	}
	return pv, rs, vs, nil
}

// LiveAgreement is a version's agreement with every outcome that arrived
// for changes it judged; nil when none has.
func LiveAgreement(ctx context.Context, st Store, judgeName, version, model string, boot metrics.BootstrapOptions) (*LiveFigure, error) {
	return (*LiveCache)(nil).Agreement(ctx, st, judgeName, version, model, boot)
}

// LiveCache keeps a judge's statistics (each version's live agreement,
// the drift report) until its records, outcomes or verdicts change (the
// store's JudgedStamp) or another version is activated: the records are
// read and the bootstrap run once per change of the data, not per read.
// Readers that miss together wait for one computation.
type LiveCache struct {
	mu sync.Mutex
	m  map[string]*liveEntry
}

type liveEntry struct {
	mu    sync.Mutex // held while the value is computed
	stamp string
	ok    bool
	v     any
}

// get answers the value kept under key for stamp, computing it when
// there is none (a nil cache keeps nothing).
func (c *LiveCache) get(key, stamp string, compute func() (any, error)) (any, error) {
	if c == nil {
		return compute()
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]*liveEntry{}
	}
	e := c.m[key]
	if e == nil {
		e = &liveEntry{}
		c.m[key] = e
	}
	c.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ok && e.stamp == stamp {
		return e.v, nil
	}
	v, err := compute()
	if err != nil {
		return nil, err
	}
	e.stamp, e.ok, e.v = stamp, true, v
	return v, nil
}

func (c *LiveCache) stamp(ctx context.Context, st Store, judgeName, version, model string) (string, error) {
	if c == nil {
		return "", nil
	}
	return st.JudgedStamp(ctx, VerdictFilter{Judge: judgeName, Prompt: version, Model: model})
}

// Agreement is LiveAgreement through the cache (a nil cache keeps
// nothing). Only Scott's pi is resampled, the one figure it reports.
func (c *LiveCache) Agreement(ctx context.Context, st Store, judgeName, version, model string, boot metrics.BootstrapOptions) (*LiveFigure, error) {
	key := fmt.Sprintf("live\x00%s\x00%s\x00%s\x00%d %d %g", judgeName, version, model, boot.Resamples, boot.Seed, boot.Level)
	stamp, err := c.stamp(ctx, st, judgeName, version, model)
	if err != nil {
		return nil, err
	}
	v, err := c.get(key, stamp, func() (any, error) { return liveAgreement(ctx, st, judgeName, version, model, boot) })
	if err != nil {
		return nil, err
	}
	return v.(*LiveFigure), nil
}

func liveAgreement(ctx context.Context, st Store, judgeName, version, model string, boot metrics.BootstrapOptions) (*LiveFigure, error) {
	pv, rs, vs, err := judged(ctx, st, judgeName, version, model)
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, nil
	}
	e, err := judge.Evaluate(pv.Spec, model, rs, vs, 0, metrics.BootstrapOptions{Resamples: -1})
	if err != nil {
		return nil, err
	}
	stat, err := e.Statistic("scott_pi")
	if err != nil {
		return nil, err
	}
	boot.Groups = judge.Groups(rs)
	return &LiveFigure{N: len(rs), Pi: metrics.WithCI(len(rs), stat, boot)}, nil
}

// Drift is the drift monitor (Drift) through the cache: kept until the
// active version's data change or another activation is made.
func (c *LiveCache) Drift(ctx context.Context, st Store, judgeName, model, by string, boot metrics.BootstrapOptions) (*DriftReport, error) {
	if by == "" {
		by = refine.ByWeek
	}
	if err := refine.CheckWindow(by); err != nil {
		return nil, &Error{Code: Invalid, Field: "by", Msg: err.Error()}
	}
	active, err := Active(ctx, st, judgeName)
	if err != nil {
		return nil, err
	}
	if active == nil {
		return nil, Errorf(NotFound, "judge %s has no active version: nothing is being monitored", judgeName)
	}
	key := fmt.Sprintf("drift\x00%s\x00%s\x00%s\x00%d %d %g", judgeName, model, by, boot.Resamples, boot.Seed, boot.Level)
	stamp, err := c.stamp(ctx, st, judgeName, active.Version, model)
	if err != nil {
		return nil, err
	}
	v, err := c.get(key, fmt.Sprintf("a%d %s", active.Seq, stamp), func() (any, error) { return drift(ctx, st, active, model, by, boot) })
	if err != nil {
		return nil, err
	}
	return v.(*DriftReport), nil
}

// Drift is the drift monitor: the active version's agreement (Scott's pi
// with its interval) with the outcomes that arrived, by week or month of
// the outcome's time, and an alert when the latest full window falls below
// the interval the gate measured when the version was promoted.
func Drift(ctx context.Context, st Store, judgeName, model, by string, boot metrics.BootstrapOptions) (*DriftReport, error) {
	return (*LiveCache)(nil).Drift(ctx, st, judgeName, model, by, boot)
}

func drift(ctx context.Context, st Store, active *Activation, model, by string, boot metrics.BootstrapOptions) (*DriftReport, error) {
	judgeName := active.Judge
	pv, rs, vs, err := judged(ctx, st, judgeName, active.Version, model)
	if err != nil {
		return nil, err
	}
	rep := &DriftReport{Judge: judgeName, Version: active.Version, Model: model, By: by, Windows: []DriftWindow{}}
	if active.Evidence != nil {
		b := active.Evidence.CandidatePi
		rep.Baseline = &b
	}
	for _, w := range refine.Windows(rs, by) {
		e, err := judge.Evaluate(pv.Spec, model, w.Records, vs, 0, boot)
		if err != nil {
			return nil, err
		}
		rep.Windows = append(rep.Windows, DriftWindow{Start: w.Start, N: len(w.Records), Pi: e.Figures["scott_pi"]})
	}
	if len(rs) > 0 {
		e, err := judge.Evaluate(pv.Spec, model, rs, vs, 0, boot)
		if err != nil {
			return nil, err
		}
		rep.Overall = &LiveFigure{N: len(rs), Pi: e.Figures["scott_pi"]}
	}
	rep.Alert, rep.Status = alert(rep)
	return rep, nil
}

func alert(rep *DriftReport) (bool, string) {
	if rep.Baseline == nil || rep.Baseline.CI == nil {
		return false, "no baseline: the active version was not promoted through the gate, so there is no test interval to compare with"
	}
	for i := len(rep.Windows) - 1; i >= 0; i-- {
		w := rep.Windows[i]
		if w.N < MinWindow {
			continue
		}
		when := "the week of " + w.Start.Format("2006-01-02")
		if rep.By == refine.ByMonth {
			when = w.Start.Format("January 2006")
		}
		if !w.Pi.Value.Defined() {
			return false, fmt.Sprintf("Scott's pi in %s is undefined (%s)", when, w.Pi.Undefined)
		}
		if w.Pi.Value.V < rep.Baseline.CI.Lo {
			return true, fmt.Sprintf("ALERT: Scott's pi in %s is %.3f (%d outcomes), below the interval [%.3f, %.3f] measured on the test part at promotion",
				when, w.Pi.Value.V, w.N, rep.Baseline.CI.Lo, rep.Baseline.CI.Hi)
		}
		return false, fmt.Sprintf("ok: Scott's pi in %s is %.3f (%d outcomes), within or above the promotion's interval [%.3f, %.3f]",
			when, w.Pi.Value.V, w.N, rep.Baseline.CI.Lo, rep.Baseline.CI.Hi)
	}
	return false, fmt.Sprintf("waiting: no %s has %d outcomes yet", rep.By, MinWindow)
}
