package refine_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
	"github.com/gavelhq/gavel/sim"
	"github.com/gavelhq/gavel/teacher"
)

// unexplainable counts kept records whose outcome the judge's inputs
// cannot explain, by the world's truth (which only the test reads): hidden
// failures, outcomes decided outside the code, and labels that contradict
// whether the change is fatally wrong.
func unexplainable(rs []*record.Record, ds []teacher.Decision) int {
	kept := map[string]bool{}
	for _, d := range ds {
		if d.Action == teacher.Keep && !d.Invalid {
			kept[d.RecordID] = true
		}
	}
	n := 0
	for _, r := range rs {
		var meta struct{ Sim sim.Truth }
		json.Unmarshal(r.Meta, &meta)
		if kept[r.ID] && (meta.Sim.Hidden || meta.Sim.NonCode || meta.Sim.Fatal != (r.Outcome.Label == record.Fail)) {
			n++
		}
	}
	return n
}

// A deliberately sycophantic teacher (it keeps every label it is shown)
// keeps unexplainable records; a panel of it and two sound teachers of
// other families, deciding by majority, keeps fewer. The label-blind check
// measures each teacher's rationalisation rate: near the configured 0.6 of
// a partly sycophantic teacher, near 0 for sound ones.
func TestTeacherPanelSimulated(t *testing.T) {
	db, data := simWorld(t, 1200, 11)
	s, _ := judge.Load("passfail")
	boot := metrics.BootstrapOptions{Resamples: 300, Seed: 1}
	run := func(models []string, q string) *refine.Result {
		t.Helper()
		quorum, err := teacher.ParseQuorum(q)
		if err != nil {
			t.Fatal(err)
		}
		res, err := refine.Calibrate(context.Background(), simClient(), db, data, refine.Config{Judge: s, Model: "sim",
			TeacherModels: models, Quorum: quorum, LabelBlind: true, MaxIter: 1, Boot: boot})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	sycophant := "sim:family=c,consistent,sycophant=1"
	alone := run([]string{sycophant}, "all")
	panel := run([]string{"sim:family=a,consistent", "sim:family=b,consistent,teacher-error=0.05", sycophant}, "majority")
	u1, u3 := unexplainable(data.Train, alone.Decisions), unexplainable(data.Train, panel.Decisions)
	t.Logf("unexplainable records kept: sycophant alone %d, panel %d (of %d); panel %+v", u1, u3, len(data.Train), panel.Panel.Teachers)
	if alone.Teacher.Kept != len(data.Train) {
		t.Fatalf("the sycophant kept %d of %d", alone.Teacher.Kept, len(data.Train))
	}
	if u3 >= u1 || float64(u3) > 0.5*float64(u1) {
		t.Errorf("the panel kept %d unexplainable records, the sycophant alone %d", u3, u1)
	}
	if panel.Panel == nil || len(panel.Panel.Teachers) != 3 || panel.Panel.SameFamily || panel.Panel.FleissKappa.CI == nil {
		t.Fatalf("panel stats %+v", panel.Panel)
	}

	// The label-blind check: a teacher that rationalises 60% of the labels
	// it would not have predicted, beside a sound one, both consistent
	// readers (they notice the same things told the outcome or not).
	part := run([]string{"sim:family=a,consistent", "sim:family=d,consistent,sycophant=0.6"}, "all")
	if len(part.Blind) != 2 {
		t.Fatalf("blind stats %+v", part.Blind)
	}
	sound, syc := part.Blind[0], part.Blind[1]
	t.Logf("rationalisation: sound %v of %d contrary, sycophant %v of %d contrary", sound.RationalisationRate.Value, sound.Contrary,
		syc.RationalisationRate.Value, syc.Contrary)
	// The sound teacher uses the outcome it is told: told of a failure
	// it points to a cause it would not have failed the change for
	// unprompted (a TODO, a version bump), which the check counts; that
	// is the baseline. The sycophant keeps 60% of what the sound one
	// would not, so its rate is 0.6 + 0.4 x the sound one's.
	want := 0.6 + 0.4*sound.RationalisationRate.Value.V
	if syc.Contrary < 50 || math.Abs(syc.RationalisationRate.Value.V-want) > 0.1 || syc.RationalisationRate.CI.Lo > want || syc.RationalisationRate.CI.Hi < want {
		t.Errorf("sycophant's rationalisation rate %v %v over %d, want near %.3f", syc.RationalisationRate.Value, syc.RationalisationRate.CI, syc.Contrary, want)
	}
	if sound.RationalisationRate.Value.V > 0.5 || sound.RationalisationRate.CI.Hi >= syc.RationalisationRate.CI.Lo {
		t.Errorf("sound teacher's rationalisation rate %v %v, not below the sycophant's %v", sound.RationalisationRate.Value, sound.RationalisationRate.CI, syc.RationalisationRate.CI)
	}
	if len(syc.ByLabel) == 0 || len(syc.ByStatus) == 0 {
		t.Errorf("no rates by class: %+v", syc)
	}
	// A sound teacher whose reading depends on the whole request: its
	// blind and informed reads differ by chance (the simulated reader
	// notices a subtle trait about half the time), and the check counts
	// that as well. A sound teacher's rate is the baseline a teacher's is
	// read against.
	noisy := run([]string{"sim:family=a"}, "all")
	t.Logf("a sound teacher that reads each request afresh: rationalisation %v over %d contrary", noisy.Blind[0].RationalisationRate.Value, noisy.Blind[0].Contrary)
	if v := noisy.Blind[0].RationalisationRate.Value.V; v <= sound.RationalisationRate.Value.V {
		t.Errorf("a sound teacher reading afresh: rate %v, want the reading noise to show", v)
	}
}
