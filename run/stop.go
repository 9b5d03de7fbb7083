package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/store"
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

// BatchRounds answers each round's pending model calls through the
// providers' batch APIs (--batch): it submits them, waits polling every
// poll, collects, and stops with a StopError when calls stay pending. The
// store is opened for each round; batchAPI reaches a provider's batch
// service at a base URL ("" for its default).
func BatchRounds(open func(context.Context) (store.Store, error), reg *llm.Registry, prices string, poll time.Duration,
	model, baseURL string, batchAPI func(provider, baseURL string) (llm.BatchAPI, error), log io.Writer) llm.AnswerFunc {
	return func(ctx context.Context, round, pending int) error {
		db, err := open(ctx)
		if err != nil {
			return err
		}
		defer db.Close()
		table, err := llm.LoadPrices(prices)
		if err != nil {
			return err
		}
		ba := &llm.BatchAnswerer{Cache: db.Cache(), Batches: db, Registry: reg, Prices: table, Poll: poll,
			API: func(provider string) (llm.BatchAPI, error) {
				base := ""
				if p, _, _ := llm.ParseModel(model); p == provider {
					base = baseURL
				}
				return batchAPI(provider, base)
			},
			Log: func(line string) { fmt.Fprintln(log, line) }}
		if err := ba.Answer(ctx, round, pending); err != nil {
			if _, stop := llm.Pending(err); stop {
				return StopError{Err: err, Why: "pending", Pending: pending}
			}
			return fmt.Errorf("--batch: %w", err)
		}
		return nil
	}
}
