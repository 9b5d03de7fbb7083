package refine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/refine"
	"github.com/gavelhq/gavel/sim"
)

// Five repeats with different seeds take five different paths (their
// version hashes differ), share the teacher's and the judge's original
// calls through the cache, and report the spread of the gain with an
// interval.
func TestRepeatsSimulated(t *testing.T) {
	db, data := simWorld(t, 900, 5)
	s, _ := judge.Load("passfail")
	reg := llm.NewRegistry()
	reg.Register(sim.Info)
	client := llm.NewService(reg, db.Cache(), llm.Options{})
	runs, sum, err := refine.Repeat(context.Background(), client, db, data, refine.Config{Judge: s, Model: "sim", MaxIter: 3,
		Boot: metrics.BootstrapOptions{Resamples: 300, Seed: 1}}, refine.RepeatOptions{Repeats: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 5 || sum.Runs != 5 {
		t.Fatalf("%d runs, summary %+v", len(runs), sum)
	}
	paths := map[string]bool{}
	for _, r := range runs {
		var path string
		for _, v := range r.Result.Versions {
			path += v.Hash[:8] + " "
		}
		t.Logf("seed %d: gain %v %v, selected %.8s, versions %s", r.Seed, *r.Gain.ScottPi, r.Gain.CI, r.SelectedVersion, path)
		paths[path] = true
	}
	if len(paths) != 5 {
		t.Errorf("%d distinct trajectories of 5", len(paths))
	}
	if sum.GainCI == nil || sum.GainCI[0] > sum.MeanGain || sum.GainCI[1] < sum.MeanGain || sum.SDGain <= 0 {
		t.Fatalf("summary %+v", sum)
	}
	if sum.Stability <= 0 || sum.Stability > 1 || len(sum.Edits) == 0 {
		t.Fatalf("stability %v, edits %d", sum.Stability, len(sum.Edits))
	}
	t.Logf("mean gain %.3f sd %.3f CI %v; %d of 5 above zero; stability %.2f; top edit in %d runs: %s", sum.MeanGain, sum.SDGain,
		fmt.Sprint(*sum.GainCI), sum.Positive, sum.Stability, sum.Edits[0].Runs, sum.Edits[0].Text)
	// The runs share the teacher's and the original prompt's requests: the
	// cache answered them after the first run.
	// At least the teacher on train and the original on train, val and
	// test, four times over.
	if st := client.Stats(); st.CacheHits < 4*(len(data.Train)*2+len(data.Val)+len(data.Test)) {
		t.Errorf("no cache hits across repeats: %+v", st)
	}
}
