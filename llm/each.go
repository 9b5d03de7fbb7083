package llm

import (
	"context"
	"errors"
	"sync"
)

// EachResult is what ForEach saw of the calls it made.
type EachResult struct {
	// Pending counts items whose request was left pending (offline).
	Pending int
	// Failed holds the errors of items that failed otherwise.
	Failed []error
}

// ForEach calls fn for the items 0..n-1 on up to workers goroutines (8
// when workers < 1), the way every model-driven stage runs its requests:
// an item whose request is pending (ErrPending) or fails does not stop the
// others, and is counted or collected; the budget running out (ErrBudget)
// or ctx ending stops feeding new items, and is returned. progress, when
// set, is called after each item with the number done, one call at a time.
func ForEach(ctx context.Context, n, workers int, progress func(done int), fn func(ctx context.Context, i int) error) (EachResult, error) {
	if workers < 1 {
		workers = 8
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var res EachResult
	var mu sync.Mutex
	done := 0
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, max(n, 1)) {
		wg.Go(func() {
			for i := range jobs {
				err := fn(ctx, i)
				mu.Lock()
				switch {
				case err == nil:
				case errors.Is(err, ErrPending):
					res.Pending++
				case errors.Is(err, ErrBudget):
					cancel(err)
				case ctx.Err() != nil:
				default:
					res.Failed = append(res.Failed, err)
				}
				done++
				if progress != nil {
					progress(done)
				}
				mu.Unlock()
			}
		})
	}
feed:
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	return res, context.Cause(ctx)
}
