package queue

import (
	"context"
	"fmt"

	"github.com/riverqueue/river"

	"github.com/gavelhq/gavel/llm"
)

// ModelCallArgs is one unit of a model-driven command (calibrate, eval,
// judge, teach): one pending request, such as one record's verdict, found
// in the store's cache by its key.
type ModelCallArgs struct {
	Key string `json:"key"`
	// BaseURL is the server of the request's model, when the command was
	// given one.
	BaseURL string `json:"base_url,omitempty"`
}

// Kind implements river.JobArgs.
func (ModelCallArgs) Kind() string { return "gavel_model_call" }

type modelCallWorker struct {
	river.WorkerDefaults[ModelCallArgs]
	env *Env
}

func (w *modelCallWorker) Work(ctx context.Context, job *river.Job[ModelCallArgs]) error {
	e, err := w.env.Cache.Get(ctx, job.Args.Key)
	if err != nil {
		return err
	}
	switch {
	case e == nil || e.Request == nil:
		return river.JobCancel(fmt.Errorf("no request %.12s in the store", job.Args.Key))
	case e.Response != nil:
		return nil // answered already (by a batch, or by this unit before a crash)
	}
	c, err := w.env.Model(e.Model, job.Args.BaseURL)
	if err != nil {
		return river.JobCancel(err)
	}
	// The service keeps the answer in the cache, in place of the pending
	// request, and claims the key first: no other process sends it too.
	_, err = c.Complete(ctx, e.Request)
	return err
}

// EnqueueModelCalls inserts one unit per request key and returns their
// ids; baseURL gives the server of a model ("provider:name"), if any.
func EnqueueModelCalls(ctx context.Context, c *Client, pending []*llm.Entry, baseURL map[string]string) ([]int64, error) {
	var args []river.JobArgs
	for _, e := range pending {
		args = append(args, ModelCallArgs{Key: e.Key, BaseURL: baseURL[e.Model]})
	}
	return enqueue(ctx, c, args)
}

// RunPending makes one unit of every request pending in the cache, waits
// until all have ended (progress, when set, is told how many), and checks
// that each got its answer: a request still pending would come round
// again for ever. It returns how many units it enqueued.
func (r *Runner) RunPending(ctx context.Context, cache llm.Cache, baseURL map[string]string, enqueued func(n int), progress func(done, total int)) error {
	var pending []*llm.Entry
	if err := cache.Pending(ctx, func(e *llm.Entry) error {
		pending = append(pending, e)
		return nil
	}); err != nil {
		return err
	}
	if len(pending) == 0 {
		return fmt.Errorf("the command stopped with requests pending, but the store has none")
	}
	ids, err := EnqueueModelCalls(ctx, r.Client, pending, baseURL)
	if err != nil {
		return err
	}
	if enqueued != nil {
		enqueued(len(ids))
	}
	if err := r.Wait(ctx, ids, progress); err != nil {
		return err
	}
	for _, e := range pending {
		got, err := cache.Get(ctx, e.Key)
		if err != nil {
			return err
		}
		if got != nil && got.Response == nil {
			return fmt.Errorf("request %.12s (%s) is still pending after its unit completed", e.Key, e.Model)
		}
	}
	return nil
}
