package refine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/teacher"
)

// ClassRemoval counts, for one true class, what the teacher removed
// (abstained on) among the records whose label was flipped and among the
// others.
type ClassRemoval struct {
	Flipped        int `json:"flipped"`
	FlippedRemoved int `json:"flipped_removed"`
	Clean          int `json:"clean"`
	CleanRemoved   int `json:"clean_removed"`
}

// NoiseResult is the label-noise study: flip a share of training labels,
// run the teacher, and measure the noise left in what it keeps.
type NoiseResult struct {
	Flip    float64 `json:"flip"`
	Seed    uint64  `json:"seed"`
	Records int     `json:"records"`
	Flipped int     `json:"flipped"`
	Kept    int     `json:"kept"`
	// Before is the share of wrong labels among all training records; After
	// among those the teacher keeps (corrections applied).
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	// Removed is by true label.
	Removed map[record.Label]*ClassRemoval `json:"removed_by_true_label"`
}

// FlipLabels returns copies of the records with a share of labels flipped
// (the status with them: passed and failed, landed and abandoned), chosen
// by the seed, and the set of flipped IDs. Drafts are left out.
func FlipLabels(rs []*record.Record, share float64, seed uint64) ([]*record.Record, map[string]bool) {
	var pool []*record.Record
	for _, r := range rs {
		if r.Outcome.Status != record.StatusDraft {
			pool = append(pool, r)
		}
	}
	sort.Slice(pool, func(i, j int) bool { return pool[i].ID < pool[j].ID })
	rng := rand.New(rand.NewPCG(seed, 0x6e6f697365)) // "noise"
	perm := rng.Perm(len(pool))
	n := int(share*float64(len(pool)) + 0.5)
	flipped := map[string]bool{}
	for _, i := range perm[:n] {
		flipped[pool[i].ID] = true
	}
	out := make([]*record.Record, 0, len(pool))
	for _, r := range pool {
		if !flipped[r.ID] {
			out = append(out, r)
			continue
		}
		c := *r
		c.Outcome.Reason = ""
		switch r.Outcome.Status {
		case record.StatusPassed:
			c.Outcome.Status, c.Outcome.Label = record.StatusFailed, record.Fail
		case record.StatusFailed:
			c.Outcome.Status, c.Outcome.Label = record.StatusPassed, record.Pass
		case record.StatusLanded:
			c.Outcome.Status, c.Outcome.Label = record.StatusAbandoned, record.Fail
		case record.StatusAbandoned:
			c.Outcome.Status, c.Outcome.Label = record.StatusLanded, record.Pass
		}
		out = append(out, &c)
	}
	return out, flipped
}

// NoiseStudy flips a share of the training labels, runs the teacher on
// the noisy records, and reports the noise before and after, and what the
// teacher removed by true class. It returns ErrPending (wrapped) when the
// teacher's answers are not all at hand.
func NoiseStudy(ctx context.Context, client llm.Client, j *judge.Spec, teacherModel string, train []*record.Record, share float64, seed uint64, concurrency int) (*NoiseResult, error) {
	noisy, flipped := FlipLabels(train, share, seed)
	truth := map[string]record.Label{}
	for _, r := range train {
		truth[r.ID] = r.Outcome.Label
	}
	ds, pending, err := teacher.Run(ctx, client, j, teacherModel, noisy, concurrency, nil)
	if err != nil {
		return nil, err
	}
	if pending > 0 {
		return nil, fmt.Errorf("noise study: %d teacher requests: %w", pending, llm.ErrPending)
	}
	res := &NoiseResult{Flip: share, Seed: seed, Records: len(noisy), Flipped: len(flipped),
		Removed: map[record.Label]*ClassRemoval{record.Pass: {}, record.Fail: {}}}
	res.Before = float64(len(flipped)) / float64(max(len(noisy), 1))
	byID := map[string]teacher.Decision{}
	for _, d := range ds {
		byID[d.RecordID] = d
	}
	wrong := 0
	for _, r := range noisy {
		d, ok := byID[r.ID]
		removed := !ok || d.Action == teacher.Abstain
		c := res.Removed[truth[r.ID]]
		if flipped[r.ID] {
			c.Flipped++
			if removed {
				c.FlippedRemoved++
			}
		} else {
			c.Clean++
			if removed {
				c.CleanRemoved++
			}
		}
		if removed {
			continue
		}
		res.Kept++
		if d.Label != truth[r.ID] {
			wrong++
		}
	}
	res.After = float64(wrong) / float64(max(res.Kept, 1))
	return res, nil
}

// The time windows of drift: weeks start on Monday, months on the 1st,
// both in UTC.
const (
	ByWeek  = "week"
	ByMonth = "month"
)

// CheckWindow says whether by names a drift window.
func CheckWindow(by string) error {
	if by != ByWeek && by != ByMonth {
		return fmt.Errorf("time window %q: want week or month", by)
	}
	return nil
}

// WindowStart is the start of the week (Monday, UTC) or month of t.
func WindowStart(t time.Time, by string) time.Time {
	t = t.UTC()
	if by == ByMonth {
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))
}

// TimeWindow is the records whose outcome time falls in one window.
type TimeWindow struct {
	Start   time.Time
	Records []*record.Record
}

// Windows groups records by the week or month of their outcome's time,
// oldest window first, each window's records in their given order.
func Windows(rs []*record.Record, by string) []TimeWindow {
	idx := map[time.Time]int{}
	var out []TimeWindow
	for _, r := range rs {
		w := WindowStart(r.Outcome.At, by)
		i, ok := idx[w]
		if !ok {
			i = len(out)
			idx[w] = i
			out = append(out, TimeWindow{Start: w})
		}
		out[i].Records = append(out[i].Records, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// Window is one time window of a drift study.
type Window struct {
	Start time.Time `json:"start"`
	N     int       `json:"n"`
	// Pi holds Scott's pi by prompt version, with intervals.
	Pi map[string]metrics.Figure `json:"scott_pi"`
}

// Drift evaluates prompt versions per time window (by week or month of
// the outcome time, as the service's drift monitor does) on the same
// records, so a team sees where a recalibrated judge loses to the old
// one. verdicts are by version, then record.
func Drift(specs []*judge.Spec, model string, rs []*record.Record, by string, verdicts map[string]map[string]judge.Verdict, boot metrics.BootstrapOptions) ([]Window, error) {
	if err := CheckWindow(by); err != nil {
		return nil, err
	}
	for _, r := range rs {
		if r.Outcome.At.IsZero() {
			return nil, fmt.Errorf("record %s has no outcome.at: drift needs times", r.ID)
		}
	}
	var out []Window
	for _, tw := range Windows(rs, by) {
		w := Window{Start: tw.Start, N: len(tw.Records), Pi: map[string]metrics.Figure{}}
		for _, s := range specs {
			e, err := judge.Evaluate(s, model, tw.Records, verdicts[s.Version()], 0, boot)
			if err != nil {
				return nil, err
			}
			w.Pi[s.Version()] = e.Figures["scott_pi"]
		}
		out = append(out, w)
	}
	return out, nil
}
