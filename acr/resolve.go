package acr

import "fmt"

// Side is who wins a comparison of the best sample with the reference.
type Side string

// The sides.
const (
	Sample    Side = "sample"
	Reference Side = "reference"
	Tie       Side = "tie"
)

// ParseTies reads --ties: which side a tie goes to.
func ParseTies(s string) (Side, error) {
	switch Side(s) {
	case Sample, Reference:
		return Side(s), nil
	}
	return "", fmt.Errorf("want sample or reference, not %q", s)
}

// Judgement is the pairwise judge's combined answer over both orders.
type Judgement struct {
	// SampleFirst and ReferenceFirst are the judge's winners ("A", "B",
	// "tie") with the sample shown as answer A, and with the reference
	// shown as answer A; "" for an invalid or missing answer.
	SampleFirst    string `json:"sample_first"`
	ReferenceFirst string `json:"reference_first"`
	Winner         Side   `json:"winner"`
	// How says how the orders combined: both_orders, one_order_and_tie,
	// order_disagreement, one_order_valid, no_valid_answer.
	How string `json:"how"`
}

// Combine resolves the two orders of a pairwise judgement:
//   - both orders pick the same side: that side;
//   - one picks a side and the other says tie: that side (a lean);
//   - they pick opposite sides: a tie. The answer followed the position,
//     not the content, which is the position bias running both orders
//     cancels;
//   - one answer is invalid: the valid one decides; both invalid: a tie.
func Combine(sampleFirst, referenceFirst string) Judgement {
	j := Judgement{SampleFirst: sampleFirst, ReferenceFirst: referenceFirst}
	a := sideOf(sampleFirst, Sample, Reference)
	b := sideOf(referenceFirst, Reference, Sample)
	switch {
	case a == "" && b == "":
		j.Winner, j.How = Tie, "no_valid_answer"
	case a == "" || b == "":
		j.Winner, j.How = a+b, "one_order_valid"
	case a == b:
		j.Winner, j.How = a, "both_orders"
	case a == Tie:
		j.Winner, j.How = b, "one_order_and_tie"
	case b == Tie:
		j.Winner, j.How = a, "one_order_and_tie"
	default:
		j.Winner, j.How = Tie, "order_disagreement"
	}
	return j
}

func sideOf(w string, a, b Side) Side {
	switch w {
	case "A":
		return a
	case "B":
		return b
	case "tie":
		return Tie
	}
	return ""
}

// Decision is who won and what decided it.
type Decision struct {
	Winner Side `json:"winner"` // sample or reference, never tie
	// DecidedBy is executor (one works and the other does not), judge, or
	// tie (neither separated them; the --ties rule chose).
	DecidedBy string `json:"decided_by"`
	// TestWinner is the executor's winner when it separates the two
	// answers, else "".
	TestWinner Side `json:"test_winner,omitempty"`
}

// Decide picks the winner of the best sample against the reference. The
// executor comes first: when exactly one of the two works (passes its
// tests, or without tests builds and loads), it wins, whatever the judge
// said. Otherwise the judge's combined answer decides, and a tie goes to
// ties (the command's default is the sample: an answer as good as the
// reference as far as the executor and the judge can tell needs no
// critique, and a critique of it would teach nothing).
func Decide(sampleWorks, referenceWorks *bool, j Judgement, ties Side) Decision {
	if sampleWorks != nil && referenceWorks != nil && *sampleWorks != *referenceWorks {
		w := Reference
		if *sampleWorks {
			w = Sample
		}
		return Decision{Winner: w, DecidedBy: "executor", TestWinner: w}
	}
	if j.Winner == Sample || j.Winner == Reference {
		return Decision{Winner: j.Winner, DecidedBy: "judge"}
	}
	return Decision{Winner: ties, DecidedBy: "tie"}
}
