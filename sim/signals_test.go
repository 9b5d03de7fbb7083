package sim_test

import (
	"encoding/json"
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
		if s.Effect == sim.Fatal {
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
	if fails < 400 || fails > 900 || share < 0.06 || share > 0.16 || noncode < 20 || drafts == 0 {
		t.Fatalf("%d failures, %d hidden (%.2f), %d non-code, %d drafts", fails, hidden, share, noncode, drafts)
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
