package run

import (
	"errors"
	"fmt"

	"github.com/gavelhq/gavel/llm"
)

// StopError is a stop at a stage boundary with model calls pending, the
// budget reached or a provider failing for reasons that pass: the command
// exits 3, and a rerun resumes.
type StopError struct {
	Err error
	// Why is "pending", "budget" or "transient"; Pending counts the model
	// calls left pending.
	Why     string
	Pending int
}

func (e StopError) Error() string { return e.Err.Error() }
func (e StopError) Unwrap() error { return e.Err }

// Is makes a stop with calls pending llm.ErrPending, for the rounds driver.
func (e StopError) Is(target error) bool { return target == llm.ErrPending && e.Why == "pending" }

// PendingCalls implements llm.PendingCounter.
func (e StopError) PendingCalls() int { return e.Pending }

// Stopped turns pending, budget and transient errors into a StopError
// with advice on what to do next; other errors are returned as they are.
func Stopped(err error, pending int) error {
	switch {
	case errors.Is(err, llm.ErrPending):
		if n, _ := llm.Pending(err); n > pending {
			pending = n
		}
		return StopError{fmt.Errorf("%d model call(s) pending (offline). Next: gavel batch export --pending --format openai|anthropic -o requests.jsonl; "+
			"run the batch; gavel batch import RESULTS.jsonl; then run this command again", max(pending, 1)), "pending", max(pending, 1)}
	case errors.Is(err, llm.ErrBudget):
		return StopError{fmt.Errorf("%w. Answers so far are cached: raise --max-cost and run again to resume", err), "budget", 0}
	case errors.Is(err, llm.ErrTransient):
		return StopError{fmt.Errorf("%w. Answers so far are cached: run again later to resume", err), "transient", 0}
	}
	return err
}
