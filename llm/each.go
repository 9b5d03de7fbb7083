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
// others, and is counted or collected. The budget running out (ErrBudget)
// stops feeding new items but lets the calls already sent finish, so their
// answers (which the provider bills) are cached; it is returned. ctx
// ending stops everything. progress, when set, is called after each item
// with the number done, one call at a time.
func ForEach(ctx context.Context, n, workers int, progress func(done int), fn func(ctx context.Context, i int) error) (EachResult, error) {
	if workers < 1 {
		workers = 8
	}
	var res EachResult
	var mu sync.Mutex
	done := 0
	stop := make(chan struct{})
	var stopErr error
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, max(n, 1)) {
		wg.Go(func() {
			for i := range jobs {
				select {
				case <-stop:
					continue // offered before the stop: not sent
				default:
				}
				err := fn(ctx, i)
				mu.Lock()
				switch {
				case err == nil:
				case errors.Is(err, ErrPending):
					res.Pending++
				case errors.Is(err, ErrBudget):
					if stopErr == nil {
						stopErr = err
						close(stop)
					}
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
		select {
		case jobs <- i:
		case <-stop:
			break feed
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return res, err
	}
	return res, stopErr
}
