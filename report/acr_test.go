package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/acr"
	"github.com/gavelhq/gavel/internal/golden"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/report"
)

func TestACRPageGolden(t *testing.T) {
	// Two rounds of three instructions, two samples each.
	var lines []acr.Lineage
	for round := 1; round <= 2; round++ {
		for i := range 3 {
			l := acr.Lineage{Round: round, ID: string(rune('a' + i)), BestSample: 1, Simulated: true,
				Reference: &acr.Execution{Status: "passed", Tested: true}}
			status := []string{"passed", "failed", "build_error"}[(i+round)%3]
			for s := 1; s <= 2; s++ {
				l.Samples = append(l.Samples, &acr.SampleResult{Index: s, Exec: &acr.Execution{Status: status, Tested: true},
					JudgedValid: s == 1, Composite: float64(i+s+round) / 8})
			}
			if status == "passed" {
				l.Branch, l.Winner, l.DecidedBy = "single_turn", acr.Sample, "judge"
			} else {
				l.Branch, l.Winner, l.DecidedBy, l.TestWinner = "critique", acr.Reference, "executor", acr.Reference
			}
			l.Pairwise = acr.Combine("B", "A")
			lines = append(lines, l)
		}
	}
	stats := acr.Stats(lines)
	if len(stats) != 2 || stats[0].Instructions != 3 || stats[0].SingleTurn != 1 || stats[0].Critique != 2 || stats[0].JudgedInvalid != 3 {
		t.Fatalf("stats: %+v", stats[0])
	}
	cs := []*acr.Comparison{
		{ID: "a", Sample: 1, TestWinner: acr.Reference, Judge: acr.Combine("B", "A"), Agree: true},
		{ID: "b", Sample: 1, TestWinner: acr.Reference, Judge: acr.Combine("A", "B"), Agree: false},
		{ID: "c", Sample: 2, TestWinner: acr.Reference, Judge: acr.Combine("A", "A"), Agree: false},
	}
	check := acr.Summarise(cs, 3, acr.CheckOptions{Bootstrap: metrics.BootstrapOptions{Resamples: 200, Seed: 1}})
	var b bytes.Buffer
	if err := report.WriteACR(&b, &report.ACRReport{Title: "[simulated] ACR rounds", Simulated: true, Sources: []string{"r1.lineage.jsonl"},
		Rounds: stats, Check: check}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	golden.Check(t, "acr.html", page)
	for _, want := range []string{"Simulated.", "Win rate and pass rates by round", "Records by branch", "Composite scores",
		"Samples by executor status", "Judge check", "33.3%"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "self-preference 50.0% is over") {
		t.Error("the page flags self-preference of 1 in 2 disagreements")
	}
	if !strings.Contains(page, "agreement with the tests 33.3% is under 85%") {
		t.Error("the page does not flag agreement of 1 in 3")
	}
}
