package server

import (
	"fmt"
	"testing"

	"github.com/gavelhq/gavel/record"
)

// Over 100 reviewed changes, a reviewer's order carries nothing of the
// outcomes: the outcome at position k predicts the next no better than
// chance, whether one bets on the same outcome again or on the other
// (the old order alternated, so the other was always right), and the
// sample holds as many of each outcome.
func TestReviewOrderCarriesNoOutcome(t *testing.T) {
	byLabel := map[record.Label][]string{}
	for i := range 150 {
		byLabel[record.Pass] = append(byLabel[record.Pass], fmt.Sprintf("acme/web#%d@%07x", i, i*7919))
	}
	for i := range 120 {
		byLabel[record.Fail] = append(byLabel[record.Fail], fmt.Sprintf("acme/api#%d@%07x", i, i*104729))
	}
	label := map[string]record.Label{}
	for l, ids := range byLabel {
		for _, id := range ids {
			label[id] = l
		}
	}
	for _, reviewer := range []string{"token a1b2c3d4e5f6", "token 0123456789ab", "token ffffffffffff"} {
		order := reviewOrder(reviewer, byLabel)
		if len(order) != 240 {
			t.Fatalf("%s: a sample of %d, want 120 of each outcome", reviewer, len(order))
		}
		counts := map[record.Label]int{}
		for _, id := range order {
			counts[label[id]]++
		}
		if counts[record.Pass] != 120 || counts[record.Fail] != 120 {
			t.Fatalf("%s: sample %v", reviewer, counts)
		}
		same := 0
		first := order[:100]
		for k := 0; k+1 < len(first); k++ {
			if label[first[k]] == label[first[k+1]] {
				same++
			}
		}
		// 99 bets at even odds: 2.6 standard deviations (5.0 each) either
		// side of 49.5 is where chance leaves them 99 times in 100.
		if same < 37 || same > 62 {
			t.Errorf("%s: the next outcome repeated the last %d times of 99 (betting on the %s wins too often)", reviewer, same,
				map[bool]string{true: "same", false: "other"}[same > 62])
		}
		// Stable: the same reviewer gets the same order.
		if again := reviewOrder(reviewer, byLabel); fmt.Sprint(again) != fmt.Sprint(order) {
			t.Fatalf("%s: the order changed between two calls", reviewer)
		}
	}
}
