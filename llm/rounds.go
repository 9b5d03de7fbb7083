package llm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// PendingCounter is an error that knows how many model calls it left
// pending; Rounds reads the count through it.
type PendingCounter interface {
	PendingCalls() int
}

// PendingError is a stage that stopped with n requests pending (offline):
// it wraps ErrPending.
type PendingError struct{ N int }

func (e *PendingError) Error() string { return fmt.Sprintf("%d model call(s) pending", e.N) }

// Unwrap makes the error ErrPending.
func (e *PendingError) Unwrap() error { return ErrPending }

// PendingCalls implements PendingCounter.
func (e *PendingError) PendingCalls() int { return e.N }

// Pending says whether err is a stop with requests pending, and how many
// (at least 1 when the count is unknown).
func Pending(err error) (int, bool) {
	if !errors.Is(err, ErrPending) {
		return 0, false
	}
	var pc PendingCounter
	if errors.As(err, &pc) {
		return max(pc.PendingCalls(), 1), true
	}
	return 1, true
}

// Answerer answers the requests a round left pending: it submits them to
// the providers' batch APIs and collects the results, or spreads them over
// a work queue, and returns once every one is answered or has failed.
type Answerer interface {
	Answer(ctx context.Context, round, pending int) error
}

// AnswerFunc is an Answerer of one function.
type AnswerFunc func(ctx context.Context, round, pending int) error

// Answer implements Answerer.
func (f AnswerFunc) Answer(ctx context.Context, round, pending int) error {
	return f(ctx, round, pending)
}

// Rounds runs a step (a whole command, offline: every request it cannot
// answer from the cache is left pending and the step stops at its stage's
// end); whenever the step stops with requests pending, the answerer has
// them answered and the step runs again, now further, until it ends
// otherwise. Each stage issues all its requests in one round. With a nil
// answerer the step runs once.
//
// Being a deterministic function of its responses, a step run again
// repeats nothing that was paid for: the cache answers what came before.
func Rounds(ctx context.Context, step func(ctx context.Context) error, answer Answerer) error {
	for round := 1; ; round++ {
		err := step(ctx)
		n, pending := Pending(err)
		if !pending || answer == nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := answer.Answer(ctx, round, n); err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
	}
}

// BatchAnswerer answers a round's pending requests through the providers'
// batch APIs: it submits every pending request of each provider that has
// one, waits for the batches to end, and imports their results into the
// cache. Requests that no batch API takes make it fail (they would come
// round for ever), and so does a round whose batches answered nothing.
type BatchAnswerer struct {
	Cache    Cache
	Batches  BatchStore
	Registry *Registry
	// API returns a provider's batch service.
	API func(provider string) (BatchAPI, error)
	// Prices give the answers' costs (nil: the embedded table).
	Prices *PriceTable
	// Poll is how often to ask whether a batch has ended (default a
	// minute).
	Poll time.Duration
	// Log hears what happens, one line at a time (nil: nothing).
	Log func(line string)
	// Sleep waits between polls; tests replace it. It must return early
	// with the context's error.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (b *BatchAnswerer) log(format string, args ...any) {
	if b.Log != nil {
		b.Log(fmt.Sprintf(format, args...))
	}
}

// Answer implements Answerer.
func (b *BatchAnswerer) Answer(ctx context.Context, round, pending int) error {
	b.log("batch round %d: %d requests pending", round, pending)
	providers := BatchProviders(b.Registry)
	for _, provider := range providers {
		api, err := b.API(provider)
		if err != nil {
			return err
		}
		sb, err := SubmitPending(ctx, b.Cache, b.Batches, b.Registry, api, provider)
		if err != nil {
			return err
		}
		if sb != nil {
			b.log("submitted batch %s: %d requests to %s", sb.ID, sb.Requests, provider)
		}
	}
	poll, sleep := b.Poll, b.Sleep
	if poll <= 0 {
		poll = time.Minute
	}
	if sleep == nil {
		sleep = sleepCtx
	}
	imported, failed := 0, 0
	for {
		done, running, err := CollectEnded(ctx, b.Cache, b.Batches, b.Registry, b.Prices, b.API)
		if err != nil {
			return err
		}
		for _, c := range done {
			imported += c.Import.Imported
			failed += c.Import.Failed
			b.log("batch %s %s: %d answers imported, %d failed or expired (sent again next round)", c.ID, c.Status, c.Import.Imported, c.Import.Failed)
		}
		if len(running) == 0 {
			break
		}
		for _, r := range running {
			b.log("batch %s is %s: %d of %d done; next look in %s", r.ID, r.Status, r.Succeeded+r.Failed, r.Requests, poll)
		}
		if err := sleep(ctx, poll); err != nil {
			return fmt.Errorf("stopped while batches run (they go on at the provider; 'gavel batch collect' imports them): %w", &PendingError{N: pending})
		}
	}
	if imported == 0 && failed > 0 {
		return fmt.Errorf("the round's batches answered none of %d requests (see 'gavel batch status'); stopping rather than sending them again and again", failed)
	}
	busy, err := b.Batches.KeysInOpenBatches(ctx)
	if err != nil {
		return err
	}
	left := 0
	err = b.Cache.Pending(ctx, func(e *Entry) error {
		if !slices.Contains(providers, e.Provider) && !busy[e.Key] {
			left++
		}
		return nil
	})
	if err != nil {
		return err
	}
	if left > 0 {
		return fmt.Errorf("%d pending requests are for providers without a batch API", left)
	}
	return nil
}
