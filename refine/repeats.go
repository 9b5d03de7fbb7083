package refine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
)

// Repeated calibrations: AutoRefine ran each loop once, so how much of a
// gain is the method and how much the path it happened to take is not
// known. Repeat runs the loop K times with different seeds (the editor
// samples; optionally each run sees its own resample of train) and reports
// the spread of the test gain, how often each edit was accepted and how
// often the same version was selected.

// RepeatOptions configure repeated calibrations.
type RepeatOptions struct {
	// Repeats is K, at least 2; Seeds are 1..K, or BaseSeed+1..BaseSeed+K.
	Repeats  int
	BaseSeed int64
	// ResampleTrain gives each run the distinct records of a bootstrap
	// resample of train's groups (about 63% of them), drawn with its seed.
	ResampleTrain bool
}

// Run is one of the repeated calibrations.
type Run struct {
	Seed   int64   `json:"seed"`
	Result *Result `json:"-"`
	// SelectedVersion is the selected prompt's hash; Gain its paired gain
	// in Scott's pi over the original prompt on test.
	SelectedVersion string   `json:"selected_version"`
	Gain            PiCI     `json:"gain"`
	Train           int      `json:"train_records"`
	Accepted        []string `json:"accepted_edits"`
	// Trajectory is the validation pi of each version, in order.
	Trajectory []float64 `json:"val_scott_pi_by_version"`
}

// RepeatSummary describes the repeated runs together.
type RepeatSummary struct {
	Runs int `json:"runs"`
	// Gain: mean, standard deviation, range and a t interval of the mean
	// over the runs' test gains in Scott's pi.
	MeanGain float64     `json:"mean_gain"`
	SDGain   float64     `json:"sd_gain"`
	MinGain  float64     `json:"min_gain"`
	MaxGain  float64     `json:"max_gain"`
	GainCI   *[2]float64 `json:"gain_ci"`
	// Positive counts runs whose gain's interval lies above 0.
	Positive int `json:"runs_with_gain_above_zero"`
	// Selected counts the runs selecting each version; Stability is the
	// share of runs that selected the most selected one.
	Selected  map[string]int `json:"selected_versions"`
	Stability float64        `json:"selection_stability"`
	// Edits counts the runs that accepted each edit (by its text).
	Edits []EditCount `json:"edits"`
}

// EditCount is how many runs accepted an edit.
type EditCount struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
	Runs int    `json:"runs"`
}

// Repeat runs calibration opt.Repeats times. A run stopped for pending
// requests (offline, batches) does not stop the others, so one round of
// batches serves every run's current stage; Repeat then reports
// llm.ErrPending with the runs that finished.
func Repeat(ctx context.Context, client llm.Client, st Store, data Data, cfg Config, opt RepeatOptions) ([]Run, *RepeatSummary, error) {
	if opt.Repeats < 2 {
		return nil, nil, fmt.Errorf("repeats: want at least 2 runs, not %d", opt.Repeats)
	}
	var runs []Run
	pending := 0
	for i := 1; i <= opt.Repeats; i++ {
		c := cfg
		c.Seed = opt.BaseSeed + int64(i)
		d := data
		if opt.ResampleTrain {
			d.Train = resampleGroups(data.Train, uint64(c.Seed))
		}
		res, err := Calibrate(ctx, client, st, d, c)
		if errors.Is(err, llm.ErrPending) {
			pending++
			continue
		}
		if err != nil {
			return runs, nil, fmt.Errorf("repeat %d (seed %d): %w", i, c.Seed, err)
		}
		runs = append(runs, runOf(c.Seed, res, len(d.Train)))
	}
	if pending > 0 {
		return runs, nil, fmt.Errorf("repeats: %d of %d runs wait for answers: %w", pending, opt.Repeats, llm.ErrPending)
	}
	return runs, Summarise(runs), nil
}

func runOf(seed int64, res *Result, train int) Run {
	r := Run{Seed: seed, Result: res, SelectedVersion: res.Versions[res.Selected].Hash, Train: train}
	r.Gain = piCI(res.Gain["scott_pi"])
	for _, v := range res.Versions {
		r.Trajectory = append(r.Trajectory, v.ValPi.V)
	}
	// The edits on the way to the selected version.
	byHash := map[string]*Version{}
	for _, v := range res.Versions {
		byHash[v.Hash] = v
	}
	for v := res.Versions[res.Selected]; v != nil; v = byHash[v.Parent] {
		for _, p := range v.Accepted {
			r.Accepted = append(r.Accepted, p.Kind+": "+p.Text)
		}
		if v.Parent == "" {
			break
		}
	}
	sort.Strings(r.Accepted)
	return r
}

// Summarise describes repeated runs together.
func Summarise(runs []Run) *RepeatSummary {
	s := &RepeatSummary{Runs: len(runs), Selected: map[string]int{}}
	if len(runs) == 0 {
		return s
	}
	gains := make([]float64, len(runs))
	edits := map[string]*EditCount{}
	for i, r := range runs {
		if r.Gain.ScottPi != nil {
			gains[i] = *r.Gain.ScottPi
		}
		s.Selected[r.SelectedVersion]++
		if len(r.Gain.CI) == 2 && r.Gain.CI[0] > 0 {
			s.Positive++
		}
		seen := map[string]bool{}
		for _, v := range r.Result.Versions {
			for _, p := range v.Accepted {
				k := p.Kind + "\x00" + p.Text
				if seen[k] {
					continue
				}
				seen[k] = true
				if edits[k] == nil {
					edits[k] = &EditCount{Kind: p.Kind, Text: p.Text}
				}
				edits[k].Runs++
			}
		}
	}
	s.MeanGain, s.SDGain = stat.MeanStdDev(gains, nil)
	if len(gains) < 2 || math.IsNaN(s.SDGain) {
		s.SDGain = 0
	}
	s.MinGain, s.MaxGain = gains[0], gains[0]
	for _, g := range gains {
		s.MinGain, s.MaxGain = min(s.MinGain, g), max(s.MaxGain, g)
	}
	if len(gains) >= 2 {
		t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(gains) - 1)}.Quantile(0.975)
		half := t * s.SDGain / math.Sqrt(float64(len(gains)))
		s.GainCI = &[2]float64{s.MeanGain - half, s.MeanGain + half}
	}
	most := 0
	for _, n := range s.Selected {
		most = max(most, n)
	}
	s.Stability = float64(most) / float64(len(runs))
	for _, e := range edits {
		s.Edits = append(s.Edits, *e)
	}
	sort.Slice(s.Edits, func(i, j int) bool {
		if s.Edits[i].Runs != s.Edits[j].Runs {
			return s.Edits[i].Runs > s.Edits[j].Runs
		}
		return s.Edits[i].Kind+s.Edits[i].Text < s.Edits[j].Kind+s.Edits[j].Text
	})
	return s
}

// resampleGroups is the distinct records of a bootstrap resample of the
// records' groups (a record without a group is its own), in their order.
func resampleGroups(rs []*record.Record, seed uint64) []*record.Record {
	var groups []string
	seen := map[string]bool{}
	key := func(r *record.Record) string {
		if r.Group != "" {
			return "g:" + r.Group
		}
		return "r:" + r.ID
	}
	for _, r := range rs {
		if k := key(r); !seen[k] {
			seen[k] = true
			groups = append(groups, k)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	drawn := map[string]bool{}
	for range groups {
		drawn[groups[rng.IntN(len(groups))]] = true
	}
	var out []*record.Record
	for _, r := range rs {
		if drawn[key(r)] {
			out = append(out, r)
		}
	}
	return out
}
