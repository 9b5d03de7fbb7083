package main_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

type retestJSON struct {
	Samples  int      `json:"samples"`
	Flips    int      `json:"flips"`
	Flipped  []string `json:"flipped"`
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
		if len(rt.Flipped) != rt.Flips {
			t.Fatalf("%s: %d flips, %d flipped records named", c.model, rt.Flips, len(rt.Flipped))
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

type valueCI struct {
	Value *float64 `json:"value"`
	CI    *struct {
		Lo, Hi float64
	} `json:"ci"`
}

// calibrate --json carries the framing search (starts, each on train and
// val with intervals, the loop run from the chosen), the blind teacher
// beside the judge on the same records, the judge's retest, and per
// version its agreement on the training records that motivated none of
// its edits.
func TestCalibrateReportsItsReferencePoints(t *testing.T) {
	db := simStore(t, filepath.Join(t.TempDir(), "w"), 300)
	var out struct {
		Judges []struct {
			Judge string `json:"judge"`
		} `json:"judges"`
		Starts []struct {
			Judge   string  `json:"judge"`
			Train   valueCI `json:"train"`
			Val     valueCI `json:"val"`
			ValGain valueCI `json:"val_gain"`
			Chosen  bool    `json:"chosen"`
		} `json:"starts"`
		BlindAgreement *struct {
			Records int     `json:"records"`
			Value   float64 `json:"value"`
			CI      *struct{ Lo, Hi float64 }
			Judge   valueCI `json:"judge"`
		} `json:"blind_agreement"`
		Retest   *retestJSON `json:"retest"`
		Versions []struct {
			TrainUnmotivated valueCI  `json:"train_unmotivated"`
			TrainPi          *float64 `json:"train_scott_pi"`
			Accepted         []any    `json:"accepted"`
		} `json:"versions"`
	}
	decodeJSON(t, mustGavel(t, db, "calibrate", "--start", "passfail,predict", "--split", "main", "--model", "sim:judge-noise=0.1",
		"--max-iter", "2", "--label-blind", "--retest", "40", "--resamples", "300", "--json"), &out)
	if len(out.Starts) != 2 || out.Starts[0].Judge != "passfail" || out.Starts[1].Judge != "predict" {
		t.Fatalf("starts: %+v", out.Starts)
	}
	chosen := ""
	for _, s := range out.Starts {
		if s.Train.Value == nil || s.Train.CI == nil || s.Val.Value == nil || s.Val.CI == nil || s.ValGain.CI == nil {
			t.Fatalf("a start without its figures: %+v", s)
		}
		if s.Chosen {
			if chosen != "" {
				t.Fatal("two starts chosen")
			}
			chosen = s.Judge
		}
	}
	if chosen == "" || len(out.Judges) != 1 || out.Judges[0].Judge != chosen {
		t.Fatalf("the loop ran from %+v, the start chosen is %q", out.Judges, chosen)
	}
	if b := out.BlindAgreement; b == nil || b.Records < 100 || b.CI == nil || b.Judge.Value == nil || b.Judge.CI == nil {
		t.Fatalf("blind_agreement: %+v", out.BlindAgreement)
	}
	if rt := out.Retest; rt == nil || rt.Samples < 30 || rt.ScottPi.Value == nil {
		t.Fatalf("retest: %+v", out.Retest)
	}
	if len(out.Versions) < 2 {
		t.Fatalf("versions: %d", len(out.Versions))
	}
	// The original motivated nothing: its unmotivated pi is its train pi.
	v0 := out.Versions[0]
	if v0.TrainUnmotivated.Value == nil || v0.TrainPi == nil || *v0.TrainUnmotivated.Value != *v0.TrainPi {
		t.Fatalf("the original's unmotivated pi %v, train pi %v", v0.TrainUnmotivated.Value, v0.TrainPi)
	}
	for _, v := range out.Versions[1:] {
		if len(v.Accepted) > 0 && v.TrainUnmotivated.CI == nil {
			t.Fatalf("a version without its unmotivated interval: %+v", v)
		}
	}
}

// The two framings over simulated worlds. Where taste traits (formatting,
// logging, a version bump, a TODO) fail no change, the outcome-framed
// predict passes the passing changes that the review-framed passfail
// fails for taste: its pass recall is ahead, paired, in every such world,
// and its pi in some (not all: in a world whose failures often show a
// taste trait too, passfail catches them for it). Where the same traits
// do fail changes (the outcome is the reviewers' taste), predict's pi is
// not ahead.
func TestPredictAgainstPassfailOverWorlds(t *testing.T) {
	type fig struct {
		Value float64
		CI    struct{ Lo, Hi float64 }
	}
	compare := func(fatal string) map[string]fig {
		dir := t.TempDir()
		db := filepath.Join(dir, "gavel.db")
		world := filepath.Join(dir, "world.jsonl")
		mustGavel(t, db, "sim", "records", "--n", "3000", "--seed", "7", "--fatal", fatal, "-o", world)
		mustGavel(t, db, "ingest", world)
		mustGavel(t, db, "split", "main", "--exclude-status", "draft")
		var out struct {
			Compare struct {
				Difference map[string]fig `json:"difference"`
			} `json:"compare"`
		}
		decodeJSON(t, mustGavel(t, db, "eval", "--judge", "predict", "--compare", "passfail", "--split", "main:test", "--model", "sim", "--resamples", "2000", "--json"), &out)
		return out.Compare.Difference
	}
	bugs := "dropped_error_check,off_by_one,deleted_test,renamed_exported_api,swallowed_error,nil_map_write,hardcoded_result,ignored_context,unlocked_access"
	piAhead := 0
	for _, fatal := range []string{bugs, "off_by_one,nil_map_write,hardcoded_result", "dropped_error_check,deleted_test,renamed_exported_api,unlocked_access"} {
		d := compare(fatal)
		if d["pass_recall"].CI.Lo <= 0 {
			t.Errorf("taste benign, fatal %s: predict minus passfail pass recall %+v; want it ahead", fatal, d["pass_recall"])
		}
		if d["scott_pi"].CI.Lo > 0 {
			piAhead++
		}
	}
	if piAhead == 0 {
		t.Error("in no taste-benign world is predict's pi ahead of passfail's")
	}
	if d := compare(bugs + ",cosmetic_reformat,dependency_bump,todo_left,added_logging"); d["scott_pi"].CI.Lo > 0 {
		t.Errorf("taste fatal: predict minus passfail pi %+v; want predict not ahead", d["scott_pi"])
	}
}

// --validate-edits drops the edits that, applied alone, break more other
// training records than they fix: a proposer that writes rules without
// reading the disagreement (sim:random-rules) has most of its edits
// dropped, each with its counts; --dry-run counts the validation's calls.
func TestValidateEditsDropsEditsThatHarmElsewhere(t *testing.T) {
	db := simStore(t, filepath.Join(t.TempDir(), "w"), 600)
	args := []string{"calibrate", "--judge", "passfail", "--split", "main", "--model", "sim", "--editor-model", "sim:random-rules", "--max-iter", "1", "--resamples", "200"}
	var out struct {
		Versions []struct {
			Accepted     []any `json:"accepted"`
			DroppedEdits []struct {
				Why string `json:"why"`
			} `json:"dropped_edits"`
		} `json:"versions"`
	}
	decodeJSON(t, mustGavel(t, db, append(args, "--validate-edits", "--json")...), &out)
	dropped, kept := 0, 0
	for _, v := range out.Versions {
		kept += len(v.Accepted)
		for _, d := range v.DroppedEdits {
			var fixed, broken, of int
			if n, _ := fmt.Sscanf(d.Why, "validation: alone it fixes %d and breaks %d of %d other kept training records", &fixed, &broken, &of); n == 3 {
				if fixed >= broken || of != 40 {
					t.Fatalf("an edit dropped though it fixed %d and broke %d of %d", fixed, broken, of)
				}
				dropped++
			}
		}
	}
	if dropped == 0 || dropped <= kept {
		t.Fatalf("random rules: %d edits dropped by validation, %d kept; want most dropped", dropped, kept)
	}
	// The ordinary proposer writes each rule to fit its disagreement's
	// record; some such rules harm the other records, and go.
	out.Versions = nil
	decodeJSON(t, mustGavel(t, db, "calibrate", "--judge", "passfail", "--split", "main", "--model", "sim", "--max-iter", "1", "--resamples", "200", "--validate-edits", "--json"), &out)
	fitted := 0
	for _, v := range out.Versions {
		for _, d := range v.DroppedEdits {
			if strings.HasPrefix(d.Why, "validation: alone it fixes") {
				fitted++
			}
		}
	}
	if fitted == 0 {
		t.Fatal("the ordinary proposer: no edit dropped by validation")
	}
	var plan dryRunJSON
	decodeJSON(t, mustGavel(t, db, append(args, "--validate-edits", "--dry-run", "--json")...), &plan)
	found := false
	for _, l := range plan.Lines {
		found = found || strings.Contains(l.Stage, "--validate-edits")
	}
	if !found {
		t.Fatalf("the dry run does not count the validation: %+v", plan.Lines)
	}
}

// --start-each runs the loop from every start and selects across every
// version of every start, against the first start's prompt; the chosen is
// judged on test beside it.
func TestStartEachSelectsAcrossStarts(t *testing.T) {
	db := simStore(t, filepath.Join(t.TempDir(), "w"), 300)
	var out struct {
		StartEach *struct {
			Candidates []struct {
				Start   string  `json:"start"`
				Version string  `json:"version"`
				ValGain valueCI `json:"val_gain"`
			} `json:"candidates"`
			Chosen struct {
				Start   string  `json:"start"`
				Version string  `json:"version"`
				ValGain valueCI `json:"val_gain"`
			} `json:"chosen"`
			Test struct {
				Chosen, First, Gain valueCI
			} `json:"test"`
		} `json:"start_each"`
		Judges []struct {
			Judge string `json:"judge"`
		} `json:"judges"`
	}
	decodeJSON(t, mustGavel(t, db, "calibrate", "--start", "passfail,predict", "--start-each", "--split", "main", "--model", "sim",
		"--max-iter", "1", "--resamples", "300", "--json"), &out)
	se := out.StartEach
	if se == nil || len(se.Candidates) < 3 || se.Test.Gain.Value == nil || se.Test.Chosen.CI == nil {
		t.Fatalf("start_each: %+v", se)
	}
	starts := map[string]bool{}
	found := false
	for i, c := range se.Candidates {
		starts[c.Start] = true
		found = found || c.Version == se.Chosen.Version
		if i > 0 && c.ValGain.CI != nil && se.Chosen.ValGain.CI != nil && c.ValGain.CI.Lo > se.Chosen.ValGain.CI.Lo && c.ValGain.CI.Lo > 0 {
			t.Fatalf("candidate %+v has a higher lower bound than the chosen %+v", c, se.Chosen)
		}
	}
	if !starts["passfail"] || !starts["predict"] || !found || out.Judges[0].Judge != se.Chosen.Start {
		t.Fatalf("candidates from %v, chosen %+v, result of %+v", starts, se.Chosen, out.Judges)
	}
}
