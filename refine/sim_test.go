package refine_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
	"github.com/gavelhq/gavel/sim"
	"github.com/gavelhq/gavel/store/sqlite"
)

func simWorld(t testing.TB, n int, seed uint64) (*sqlite.DB, refine.Data) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "gavel.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rs, err := sim.Records(sim.WorldOptions{N: n, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	var members []record.Member
	err = db.Import(ctx, func(w record.Writer) error {
		for i := range rs {
			if rs[i].Outcome.Status == record.StatusDraft {
				continue
			}
			if _, err := w.Put(ctx, &rs[i]); err != nil {
				return err
			}
			members = append(members, record.MemberOf(&rs[i]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	split, err := record.MakeSplit(members, record.SplitSpec{Name: "main", Train: 0.4, Val: 0.3, Test: 0.3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var d refine.Data
	for i := range rs {
		r := &rs[i]
		switch split.Assign[r.ID] {
		case record.Train:
			d.Train = append(d.Train, r)
		case record.Val:
			d.Val = append(d.Val, r)
		case record.Test:
			d.Test = append(d.Test, r)
		}
	}
	return db, d
}

func simClient() *llm.Service {
	reg := llm.NewRegistry()
	reg.Register(sim.Info)
	return llm.NewService(reg, nil, llm.Options{})
}

func TestCalibrateSimulated(t *testing.T) {
	db, data := simWorld(t, 1200, 7)
	for _, name := range []string{"rubric5", "passfail"} {
		s, _ := judge.Load(name)
		res, err := refine.Calibrate(context.Background(), simClient(), db, data, refine.Config{
			Judge: s, Model: "sim", Boot: metrics.BootstrapOptions{Resamples: 500, Seed: 1}})
		if err != nil {
			t.Fatal(err)
		}
		o, c := res.Original.Metrics.ScottPi.V, res.Calibrated.Metrics.ScottPi.V
		t.Logf("%s: test pi %.3f -> %.3f (gain CI %v); %d versions, selected %d; stop: %s; teacher %+v",
			name, o, c, res.Gain["scott_pi"].CI, len(res.Versions), res.Selected, res.StopReason, res.Teacher)
		for _, v := range res.Versions {
			t.Logf("  v%d train %.3f val %.3f dis %d accepted %d dropped %d %s", v.Iteration, v.TrainPi.V, v.ValPi.V, v.Disagreements, len(v.Accepted), v.Dropped, v.Note)
		}
		if c-o < 0.15 {
			t.Errorf("%s: calibration gained %.3f, want at least 0.15", name, c-o)
		}
	}
}
