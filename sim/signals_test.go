package sim_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/sim"
)

func TestCatalogue(t *testing.T) {
	if err := sim.Validate(); err != nil {
		t.Fatal(err)
	}
	fatal := 0
	for _, s := range sim.Signals {
		if s.Prior > 0.5 {
			fatal++
		}
	}
	if len(sim.Signals) < 12 || fatal < 6 || len(sim.Signals)-fatal < 5 {
		t.Fatalf("%d signals, %d fatal", len(sim.Signals), fatal)
	}
	// The tasks' reference patches carry no signal.
	for _, task := range sim.Tasks {
		for _, after := range []string{task.Reference.After, task.Alternative} {
			d, err := sim.FileDiff(task.Reference.File, task.Reference.Before, after, 10)
			if err != nil {
				t.Fatal(err)
			}
			if found := sim.Detect(d); len(found) != 0 {
				t.Errorf("task %s: reference shows signal %s:\n%s", task.ID, found[0].Name, d)
			}
		}
	}
}

func TestRecords(t *testing.T) {
	rs, err := sim.Records(sim.WorldOptions{N: 2000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := sim.Records(sim.WorldOptions{N: 2000, Seed: 1})
	fails, hidden, noncode, drafts := 0, 0, 0, 0
	for i, r := range rs {
		a, _ := r.Canonical()
		b, _ := again[i].Canonical()
		if string(a) != string(b) {
			t.Fatal("the same seed gave different records")
		}
		var meta struct{ Sim sim.Truth }
		if err := json.Unmarshal(r.Meta, &meta); err != nil || !meta.Sim.Simulated {
			t.Fatalf("record %s not labelled simulated: %s", r.ID, r.Meta)
		}
		// What the detectors find is exactly the signals the record was built with.
		var found []string
		for _, s := range sim.Detect(r.Candidate) {
			found = append(found, s.Name)
		}
		if strings.Join(found, ",") != strings.Join(sortedLike(meta.Sim.Signals), ",") {
			t.Fatalf("record %s: built with %v, detected %v\n%s", r.ID, meta.Sim.Signals, found, r.Candidate)
		}
		if r.Outcome.Label == "fail" && r.Outcome.Status != "draft" {
			fails++
		}
		if meta.Sim.Hidden {
			hidden++
		}
		if meta.Sim.NonCode {
			noncode++
			if r.Outcome.Reason != "duplicate" && r.Outcome.Reason != "superseded" {
				t.Fatalf("non-code abandonment without its reason: %+v", r.Outcome)
			}
		}
		if r.Outcome.Status == "draft" {
			drafts++
		}
	}
	share := float64(hidden) / float64(fails)
	if fails < 300 || fails > 1000 || share < 0.04 || share > 0.25 || noncode < 20 || drafts == 0 {
		t.Fatalf("%d failures, %d hidden (%.2f), %d non-code, %d drafts", fails, hidden, share, noncode, drafts)
	}
}

// Each world draws its own truth from the priors: over worlds, every
// signal is fatal in some and benign in others, and no two of the first
// worlds agree on all fifteen; a signal's share of worlds where it is
// fatal follows its prior.
func TestWorldsDrawTheirTruth(t *testing.T) {
	const worlds = 400
	fatalIn := map[string]int{}
	seen := map[string]bool{}
	for seed := uint64(1); seed <= worlds; seed++ {
		w := sim.NewWorld(seed)
		for _, name := range w.Fatal() {
			fatalIn[name]++
		}
		if seed <= 13 {
			if seen[w.String()] {
				t.Errorf("world %d repeats an earlier world's truth: %s", seed, w)
			}
			seen[w.String()] = true
		}
	}
	for _, s := range sim.Signals {
		share := float64(fatalIn[s.Name]) / worlds
		// Four standard errors of a share of 400 around the prior.
		if sd := math.Sqrt(s.Prior * (1 - s.Prior) / worlds); math.Abs(share-s.Prior) > 4*sd {
			t.Errorf("%s fatal in %.3f of worlds, prior %.2f", s.Name, share, s.Prior)
		}
		if fatalIn[s.Name] == 0 || fatalIn[s.Name] == worlds {
			t.Errorf("%s has the same effect in every world", s.Name)
		}
	}
	// A world's truth decides its outcomes: the same records with two
	// truths differ where they disagree, and only there.
	a, b := sim.WorldWith(2, []string{"off_by_one"}), sim.WorldWith(2, []string{"off_by_one", "added_logging"})
	ra, _ := sim.Records(sim.WorldOptions{N: 400, Seed: 2, World: a})
	rb, _ := sim.Records(sim.WorldOptions{N: 400, Seed: 2, World: b})
	differ := 0
	for i := range ra {
		if ra[i].Candidate != rb[i].Candidate {
			t.Fatalf("record %d: the truth changed the patch", i)
		}
		if ra[i].Outcome.Label != rb[i].Outcome.Label {
			differ++
			if !strings.Contains(rb[i].Candidate, "log.") && !strings.Contains(rb[i].Candidate, "slog.") {
				t.Errorf("record %d changed outcome without the signal whose truth changed", i)
			}
		}
	}
	if differ < 20 {
		t.Fatalf("making logging fatal changed %d of 400 outcomes", differ)
	}
}

// Records carry no tell of why they failed: a hidden failure is rejected
// and logged as any other failure is.
func TestRecordsWithoutTells(t *testing.T) {
	rs, err := sim.Records(sim.WorldOptions{N: 3000, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	type tally struct{ hidden, caused map[string]int }
	reasons := tally{map[string]int{}, map[string]int{}}
	logs := tally{map[string]int{}, map[string]int{}}
	nh, nc := 0, 0
	for _, r := range rs {
		var meta struct{ Sim sim.Truth }
		json.Unmarshal(r.Meta, &meta)
		if r.Outcome.Label != "fail" || meta.Sim.NonCode || r.Outcome.Status == "draft" {
			continue
		}
		key := func(m tally) map[string]int {
			if meta.Sim.Hidden {
				return m.hidden
			}
			return m.caused
		}
		if meta.Sim.Hidden {
			nh++
		} else {
			nc++
		}
		if r.Outcome.Source == "review" {
			key(reasons)[r.Outcome.Reason]++
		} else {
			// The failing test's name, the first line of the log.
			key(logs)[strings.SplitN(r.Context["test_output"], "\n", 2)[0]]++
		}
		for _, s := range sim.Signals {
			if strings.Contains(strings.ToLower(r.Context["test_output"]), strings.ReplaceAll(s.Name, "_", "")) {
				t.Errorf("record %s: the test output names signal %s", r.ID, s.Name)
			}
		}
	}
	if nh < 30 || nc < 300 {
		t.Fatalf("%d hidden and %d caused failures: too few to compare", nh, nc)
	}
	// Every form a hidden failure takes, a caused one takes too, and as
	// often (within 0.1).
	for _, m := range []tally{reasons, logs} {
		th, tc := 0, 0
		for _, n := range m.hidden {
			th += n
		}
		for _, n := range m.caused {
			tc += n
		}
		for k, n := range m.hidden {
			if math.Abs(float64(n)/float64(th)-float64(m.caused[k])/float64(tc)) > 0.1 {
				t.Errorf("%q: %d of %d hidden failures, %d of %d caused ones", k, n, th, m.caused[k], tc)
			}
		}
		for k := range m.caused {
			if m.hidden[k] == 0 && th > 20 {
				t.Errorf("%q: only caused failures take this form", k)
			}
		}
	}
}

// sortedLike orders signal names as the catalogue does.
func sortedLike(names []string) []string {
	var out []string
	for _, s := range sim.Signals {
		for _, n := range names {
			if n == s.Name {
				out = append(out, n)
			}
		}
	}
	return out
}
