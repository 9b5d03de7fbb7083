package run_test

import (
	"context"
	"testing"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/run"
	"github.com/gavelhq/gavel/sim"
	"github.com/gavelhq/gavel/store/sqlite"
)

// simWorlds opens each world a fresh store with the simulated model.
func simWorlds(t *testing.T) func(ctx context.Context, seed uint64) (run.DemoStore, *run.Env, func(), error) {
	reg := llm.NewRegistry()
	reg.Register(sim.Info)
	return run.WorldStores(t.TempDir(), reg, func(ctx context.Context, path string) (run.WorldStore, error) { return sqlite.Open(ctx, path) })
}

// Over five worlds, each drawing its own truth: the honest teacher's
// corrections stay rare (under 2% of training records) in every world,
// the label noise never rises after it, and the honest calibration gains
// more than random rules and an unreliable teacher on average over the
// worlds.
func TestSimStudyOverWorlds(t *testing.T) {
	if testing.Short() {
		t.Skip("calibrates 30 times")
	}
	res, err := run.SimStudy(context.Background(), run.SimStudyConfig{Worlds: 5, FirstSeed: 1, N: 600, Resamples: 200, MaxIter: 3,
		Open: simWorlds(t), Log: func(l string) { t.Log(l) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range res.Worlds {
		t.Logf("world %d: surprises %v; teacher kept %d abstained %d corrected %d (%.3f); noise %.3f -> %.3f",
			w.Seed, w.Surprises, w.Teacher.Kept, w.Teacher.Abstained, w.Teacher.Corrected, w.Teacher.CorrectedShare, w.Teacher.NoiseBefore, w.Teacher.NoiseAfter)
		for _, g := range w.Gains {
			t.Logf("  %s %s: %s %+v", g.Control, g.Judge, g.Gain.Value, g.Gain.CI)
		}
	}
	for _, w := range res.Worlds {
		if w.Teacher.CorrectedShare >= 0.02 || w.Teacher.NoiseAfter > w.Teacher.NoiseBefore || w.Teacher.InjectedAfter >= w.Teacher.InjectedBefore {
			t.Errorf("world %d: the teacher corrected %.3f of the training records; noise %.3f -> %.3f", w.Seed, w.Teacher.CorrectedShare, w.Teacher.NoiseBefore, w.Teacher.NoiseAfter)
		}
	}
	if res.Teacher.NoiseRose != 0 || res.Teacher.InjectedNoiseRose != 0 || res.Teacher.MostCorrected >= 0.02 {
		t.Errorf("teacher over worlds: %+v", res.Teacher)
	}
	for _, c := range append(res.Controls, res.Differences...) {
		t.Logf("%s %s: mean %s %+v, range [%.3f, %.3f], above %d below %d of %d", c.Control, c.Judge, c.Mean.Value, c.Mean.CI, c.Min, c.Max, c.Above, c.Below, c.Worlds)
		if c.Worlds != 5 || c.Mean.CI == nil || c.Min > c.Max {
			t.Fatalf("%s %s over worlds: %+v", c.Control, c.Judge, c)
		}
		// What holds over worlds: the honest calibration gains, and more
		// than random rules; the mean's interval over worlds says so.
		switch c.Control {
		case "honest", "honest - random_rules":
			if c.Mean.CI.Lo <= 0 {
				t.Errorf("%s %s: mean %s, interval over worlds [%.3f, %.3f] reaches 0", c.Control, c.Judge, c.Mean.Value, c.Mean.CI.Lo, c.Mean.CI.Hi)
			}
		}
	}
}

// In worlds whose truth turns the priors round (every signal fatal in
// most worlds is benign here, and the other way), so that the roles'
// beliefs are all wrong, the teacher still corrects under 2% of the
// training records: it never overrides an outcome with its own belief.
// With a quarter of the labels flipped (the paper's noise study) the noise
// among what it keeps falls, as in every world. Against the code's truth
// it rises a little here: it abstains on failures whose cause it does not
// suspect, and those are the true ones in such a world (in worlds drawn
// from the priors it falls, TestSimStudyOverWorlds).
func TestTeacherInWorldsThatProveItWrong(t *testing.T) {
	var turned []string
	for _, s := range sim.Signals {
		if s.Prior <= 0.5 {
			turned = append(turned, s.Name)
		}
	}
	res, err := run.SimStudy(context.Background(), run.SimStudyConfig{Worlds: 2, FirstSeed: 11, N: 600, Resamples: 100, MaxIter: 1,
		Judges: []string{"passfail"}, Open: simWorlds(t), World: func(seed uint64) *sim.World { return sim.WorldWith(seed, turned) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range res.Worlds {
		if len(w.Surprises) != len(sim.Signals) {
			t.Fatalf("world %d: %d surprises, want every signal", w.Seed, len(w.Surprises))
		}
		tc := w.Teacher
		t.Logf("world %d: kept %d, abstained %d, corrected %d; noise %.3f -> %.3f; injected %.3f -> %.3f", w.Seed, tc.Kept, tc.Abstained, tc.Corrected,
			tc.NoiseBefore, tc.NoiseAfter, tc.InjectedBefore, tc.InjectedAfter)
		if tc.CorrectedShare >= 0.02 || tc.NoiseAfter > tc.NoiseBefore+0.02 || tc.Kept == 0 || tc.InjectedAfter >= tc.InjectedBefore {
			t.Errorf("world %d: the teacher corrected %.3f of the training records; noise %.3f -> %.3f", w.Seed, tc.CorrectedShare, tc.NoiseBefore, tc.NoiseAfter)
		}
	}
}
