package llm_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/gavelhq/gavel/llm"
)

// TestRounds: a step that needs three stages of answers runs four times,
// its answerer is told each round's pending count, and the step's own
// final error (or success) is what Rounds returns.
func TestRounds(t *testing.T) {
	ctx := context.Background()
	answered := 0
	var told []int
	step := func(context.Context) error {
		if answered < 3 {
			return fmt.Errorf("stage %d: %w", answered+1, &llm.PendingError{N: 10 * (answered + 1)})
		}
		return nil
	}
	answer := llm.AnswerFunc(func(_ context.Context, round, pending int) error {
		if round != answered+1 {
			t.Fatalf("round %d after %d answered", round, answered)
		}
		told = append(told, pending)
		answered++
		return nil
	})
	if err := llm.Rounds(ctx, step, answer); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(told) != "[10 20 30]" {
		t.Fatalf("pending told per round: %v", told)
	}

	// Without an answerer: one run, the pending stop returned as is.
	runs := 0
	err := llm.Rounds(ctx, func(context.Context) error { runs++; return &llm.PendingError{N: 4} }, nil)
	if n, ok := llm.Pending(err); !ok || n != 4 || runs != 1 {
		t.Fatalf("no answerer: %d runs, %v (%d, %v)", runs, err, n, ok)
	}

	// A failing answerer stops the rounds with its error.
	boom := errors.New("batch API down")
	err = llm.Rounds(ctx, func(context.Context) error { return llm.ErrPending },
		llm.AnswerFunc(func(context.Context, int, int) error { return boom }))
	if !errors.Is(err, boom) {
		t.Fatalf("answerer's error: %v", err)
	}

	// An error that is not a pending stop ends the rounds.
	other := errors.New("bad input")
	if err := llm.Rounds(ctx, func(context.Context) error { return other }, answer); !errors.Is(err, other) {
		t.Fatalf("other error: %v", err)
	}
	if n, ok := llm.Pending(llm.ErrPending); !ok || n != 1 {
		t.Fatalf("a bare ErrPending counts %d, %v", n, ok)
	}
}
