package main_test

import (
	"path/filepath"
	"testing"
)

type retestJSON struct {
	Samples  int `json:"samples"`
	Flips    int `json:"flips"`
	FlipRate struct {
		Value *float64 `json:"value"`
		CI    *struct {
			Lo float64 `json:"lo"`
			Hi float64 `json:"hi"`
		} `json:"ci"`
	} `json:"flip_rate"`
	ScottPi struct {
		Value *float64 `json:"value"`
	} `json:"scott_pi"`
}

// eval --retest measures the simulated judge's configured noise: a judge
// whose reading is steady and whose verdict flips with probability p at
// each ask disagrees with itself with probability 2p(1-p) (0 for p = 0);
// the repeat is cached like any call.
func TestRetestMeasuresTheJudgesNoise(t *testing.T) {
	db := simStore(t, filepath.Join(t.TempDir(), "w"), 600)
	for _, c := range []struct {
		model string
		p     float64
	}{{"sim:judge-noise=0", 0}, {"sim:judge-noise=0.25", 0.25}} {
		var out struct {
			Retest *retestJSON `json:"retest"`
			Calls  struct {
				Sent int `json:"sent"`
			} `json:"calls"`
		}
		args := []string{"eval", "--judge", "passfail", "--split", "main:test", "--model", c.model, "--retest", "1000", "--resamples", "2000", "--json"}
		decodeJSON(t, mustGavel(t, db, args...), &out)
		rt := out.Retest
		if rt == nil || rt.Samples < 150 || rt.FlipRate.Value == nil || rt.FlipRate.CI == nil {
			t.Fatalf("%s: retest %+v", c.model, rt)
		}
		want := 2 * c.p * (1 - c.p)
		if c.p == 0 {
			if rt.Flips != 0 || *rt.ScottPi.Value < 0.999 {
				t.Fatalf("%s: a judge without noise flipped %d of %d (pi %v)", c.model, rt.Flips, rt.Samples, *rt.ScottPi.Value)
			}
		} else if rt.FlipRate.CI.Lo > want || rt.FlipRate.CI.Hi < want || rt.Flips == 0 {
			t.Fatalf("%s: flip rate %v %+v; want an interval holding 2p(1-p) = %v", c.model, *rt.FlipRate.Value, rt.FlipRate.CI, want)
		}
		// Asked again, everything comes from the cache, the repeat too.
		decodeJSON(t, mustGavel(t, db, args...), &out)
		if out.Calls.Sent != 0 || out.Retest.Flips != rt.Flips {
			t.Fatalf("%s: the rerun sent %d calls, flips %d (first %d)", c.model, out.Calls.Sent, out.Retest.Flips, rt.Flips)
		}
	}
}
