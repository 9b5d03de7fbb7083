package report_test

import (
	"bytes"
	"math"
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
		// Two samples neither of which passes, the second runs: the judge
		// decides such pairs in a round; here it picks the second.
		{ID: "c", Sample: 1, Kind: acr.AgainstSample, Against: 2, DecidedBy: acr.DecidedByJudge, TestWinner: acr.Other,
			Judge: acr.Judgement{Winner: acr.Other, How: "both_orders"}, Agree: true},
		// A sample that passes like the reference; the judge picks the reference.
		{ID: "a", Sample: 2, Kind: acr.AgainstReference, Against: -1, DecidedBy: acr.DecidedByJudge, Tied: true, Judge: acr.Combine("B", "A")},
	}
	check := acr.Summarise(cs, 3, acr.CheckOptions{Bootstrap: metrics.BootstrapOptions{Resamples: 200, Seed: 1}})
	// Worked by hand: 4 pairs the tests separate, 2 agree; of the 3 the
	// executor decides 1 agrees, of the 1 the judge decides 1; of the 2
	// disagreements against the reference 1 prefers the sample; the one
	// tied pair leans to the reference.
	for name, f := range map[string]struct {
		got  metrics.Figure
		want float64
	}{"agreement": {check.Agreement, 0.5}, "executor": {check.AgreementExecutor, 1.0 / 3}, "judge": {check.AgreementJudge, 1},
		"self": {check.SelfPreference, 0.5}, "bias": {check.ReferenceBias, 1}} {
		if !f.got.Value.Defined() || math.Abs(f.got.Value.V-f.want) > 1e-12 || f.got.CI == nil {
			t.Errorf("%s: %+v, want %v", name, f.got, f.want)
		}
	}
	if check.Pairs != 4 || check.SamplePairs != 1 || check.ReferencePairs != 3 || check.ExecutorDecided != 3 || check.JudgeDecided != 1 || check.Tied != 1 {
		t.Fatalf("counts: %+v", check)
	}
	var b bytes.Buffer
	if err := report.WriteACR(&b, &report.ACRReport{Title: "[simulated] ACR rounds", Simulated: true, Sources: []string{"r1.lineage.jsonl"},
		Rounds: stats, Check: check}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	golden.Check(t, "acr.html", page)
	for _, want := range []string{"Simulated.", "Win rate and pass rates by round", "Records by branch", "Composite scores",
		"Samples by executor status", "Judge check", "50.0%", "where the judge decides", "Reference bias where both pass", "&#43;1.00 [&#43;1.00, &#43;1.00]"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "self-preference 50.0% is over") {
		t.Error("the page flags self-preference of 1 in 2 disagreements")
	}
	if !strings.Contains(page, "agreement with the tests 50.0% is under 85%") {
		t.Error("the page does not flag agreement of 2 in 4")
	}
}
