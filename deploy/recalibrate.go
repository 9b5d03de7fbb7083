package deploy

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
)

// Monitor is the drift monitor that recalibrates: it watches every judge
// with an active version and, on an alert, calibrates it again.
type Monitor struct {
	Store  Store
	Client llm.Client
	// Model judges (as the service does).
	Model string
	Boot  metrics.BootstrapOptions
	// Log receives what the monitor does (default: discarded).
	Log *slog.Logger
}

func (m *Monitor) log() *slog.Logger {
	if m.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return m.Log
}

// RecalibrateOptions configure recalibration when the drift monitor
// alerts. Zero values take the defaults noted.
type RecalibrateOptions struct {
	// Every is how often the monitor checks each judge (default 1 hour).
	Every time.Duration
	// By is the drift window, week or month (default week).
	By string
	// TeacherModel and EditorModel default to the service's model.
	TeacherModel, EditorModel string
	// MinRecords is the fewest outcomes a recalibration needs (default
	// 60: 24 to train on, 18 each to validate and test).
	MinRecords int
	MaxIter    int
}

// Recalibration is a calibration the monitor started: its result is a
// candidate version, never active until the gate promotes it.
type Recalibration struct {
	Judge     string          `json:"judge"`
	Split     string          `json:"split"`
	Records   int             `json:"records"`
	From      string          `json:"from_version"`
	Candidate string          `json:"candidate_version"`
	Gain      *metrics.Figure `json:"gain_scott_pi,omitempty"`
	Alert     string          `json:"alert"`
}

// Recalibrate checks a judge's drift and, when the monitor alerts and no
// recalibration was started since the alerting window began, calibrates
// the active version again on the outcomes of the changes it judged: a new
// split of those records (train, validation, and a test part the gate
// will use). It returns nil when nothing was started.
func (m *Monitor) Recalibrate(ctx context.Context, judgeName string, opt RecalibrateOptions) (*Recalibration, error) {
	if opt.By == "" {
		opt.By = "week"
	}
	if opt.MinRecords <= 0 {
		opt.MinRecords = 60
	}
	rep, err := Drift(ctx, m.Store, judgeName, m.Model, opt.By, m.Boot)
	if err != nil || !rep.Alert {
		return nil, err
	}
	active, err := Active(ctx, m.Store, judgeName)
	if err != nil {
		return nil, err
	}
	latest := rep.Windows[len(rep.Windows)-1].Start
	cals, err := m.Store.Calibrations(ctx, judgeName)
	if err != nil {
		return nil, err
	}
	for _, c := range cals {
		if strings.HasPrefix(c.Split, "recal-") && !c.At.Before(latest) {
			return nil, nil // already recalibrated for this alert
		}
	}
	pv, rs, _, err := judged(ctx, m.Store, judgeName, active.Version, m.Model)
	if err != nil {
		return nil, err
	}
	// The changes the active version judged whose outcome arrived: the
	// records it is drifting on.
	since := rs
	if len(since) < opt.MinRecords {
		m.log().Warn("drift alert, but too few outcomes to recalibrate on", "judge", judgeName, "outcomes", len(since), "need", opt.MinRecords)
		return nil, nil
	}
	name := fmt.Sprintf("recal-%s-%s", judgeName, time.Now().UTC().Format("20060102T150405"))
	members := make([]record.Member, len(since))
	for i, r := range since {
		members[i] = record.MemberOf(r)
	}
	split, err := record.MakeSplit(members, record.SplitSpec{Name: name, Train: 0.4, Val: 0.3, Test: 0.3, Seed: 1})
	if err != nil {
		return nil, err
	}
	if err := m.Store.SaveSplit(ctx, split, false); err != nil {
		return nil, err
	}
	var data refine.Data
	for _, r := range since {
		data.Add(split.Assign[r.ID], r)
	}
	m.log().Info("drift alert: recalibrating", "judge", judgeName, "from", active.Version[:12], "split", name, "records", len(since), "alert", rep.Status)
	res, err := refine.Calibrate(ctx, m.Client, m.Store, data, refine.Config{Judge: pv.Spec, Model: m.Model,
		TeacherModel: opt.TeacherModel, EditorModel: opt.EditorModel, MaxIter: opt.MaxIter, Boot: m.Boot})
	if err != nil {
		return nil, fmt.Errorf("recalibrate %s: %w", judgeName, err)
	}
	selected := res.Versions[res.Selected].Hash
	if err := m.Store.SaveCalibration(context.WithoutCancel(ctx), judgeName, selected, name, m.Model, res); err != nil {
		return nil, err
	}
	out := &Recalibration{Judge: judgeName, Split: name, Records: len(since), From: active.Version, Candidate: selected, Alert: rep.Status}
	if g, ok := res.Gain["scott_pi"]; ok {
		out.Gain = &g
	}
	m.log().Info("recalibrated: a candidate version awaits the gate", "judge", judgeName, "candidate", selected[:12],
		"promote", "gavel promote "+judgeName+" "+selected[:12])
	return out, nil
}

// Run checks every judge with an active version each opt.Every and
// recalibrates those in alert, until ctx ends.
func (m *Monitor) Run(ctx context.Context, opt RecalibrateOptions) {
	if opt.Every <= 0 {
		opt.Every = time.Hour
	}
	tick := time.NewTicker(opt.Every)
	defer tick.Stop()
	for {
		as, err := m.Store.Activations(ctx, "")
		if err != nil && ctx.Err() == nil {
			m.log().Error("drift monitor", "err", err)
		}
		seen := map[string]bool{}
		for _, a := range as {
			if seen[a.Judge] {
				continue
			}
			seen[a.Judge] = true
			if _, err := m.Recalibrate(ctx, a.Judge, opt); err != nil && ctx.Err() == nil {
				m.log().Error("drift monitor", "judge", a.Judge, "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// A judge's store in service is a calibration's store.
var _ refine.Store = Store(nil)
