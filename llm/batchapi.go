package llm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"
)

// BatchAPI is a provider's live batch service: a batch file of requests
// goes up, a file of results comes down, at the provider's batch price.
type BatchAPI interface {
	// Submit uploads a batch input file (the provider's request lines) of
	// n requests and starts the batch.
	Submit(ctx context.Context, input []byte, n int) (*BatchState, error)
	// Status reports how far a batch has come.
	Status(ctx context.Context, id string) (*BatchState, error)
	// Results returns the result lines of an ended batch, in the format
	// the provider's BatchFormat reads: answers, and errors for the
	// requests it did not answer (failed, expired, cancelled).
	Results(ctx context.Context, id string) (io.ReadCloser, error)
}

// BatchState is a batch at the provider.
type BatchState struct {
	ID       string `json:"id"`
	Provider string `json:"provider"`
	// Status is the provider's word for it (validating, in_progress,
	// completed, expired, ended, ...); Ended says no more results will
	// come.
	Status    string `json:"status"`
	Ended     bool   `json:"ended"`
	Requests  int    `json:"requests"`
	Succeeded int    `json:"succeeded"`
	Failed    int    `json:"failed"`
}

// SubmittedBatch is a batch as the store keeps it.
type SubmittedBatch struct {
	BatchState
	SubmittedAt time.Time `json:"submitted_at"`
	// CollectedAt is set once its results were imported.
	CollectedAt time.Time `json:"collected_at,omitzero"`
}

// BatchStore keeps the batches submitted and the requests in each, so a
// request in a batch not yet collected is not submitted again.
type BatchStore interface {
	SaveBatch(ctx context.Context, b *SubmittedBatch, keys []string) error
	// OpenBatches lists the batches not yet collected, oldest first.
	OpenBatches(ctx context.Context) ([]SubmittedBatch, error)
	// Batches lists every batch, newest first.
	Batches(ctx context.Context) ([]SubmittedBatch, error)
	// KeysInOpenBatches are the requests of the batches not yet collected.
	KeysInOpenBatches(ctx context.Context) (map[string]bool, error)
	// CollectBatch records a batch's last state and that its results were
	// imported.
	CollectBatch(ctx context.Context, b *BatchState) error
}

// NewBatchAPI returns the live batch service of a registered provider.
func NewBatchAPI(reg *Registry, provider string, cfg ProviderConfig) (BatchAPI, error) {
	info, err := reg.Info(provider)
	if err != nil {
		return nil, err
	}
	if info.NewBatchAPI == nil {
		return nil, fmt.Errorf("provider %s has no batch API (export a batch file with 'gavel batch export' instead)", provider)
	}
	return info.NewBatchAPI(cfg)
}

// BatchProviders lists the registered providers that have a batch API.
func BatchProviders(reg *Registry) []string {
	var out []string
	for _, n := range reg.Names() {
		if reg.infos[n].NewBatchAPI != nil {
			out = append(out, n)
		}
	}
	return out
}

// SubmitPending submits the pending requests of a provider that are in no
// open batch as one batch, and records it. It returns nil when there is
// nothing to submit.
func SubmitPending(ctx context.Context, c Cache, bs BatchStore, reg *Registry, api BatchAPI, provider string) (*SubmittedBatch, error) {
	info, err := reg.Info(provider)
	if err != nil {
		return nil, err
	}
	if info.Batch == nil {
		return nil, fmt.Errorf("provider %s has no batch format", provider)
	}
	busy, err := bs.KeysInOpenBatches(ctx)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	var keys []string
	err = c.Pending(ctx, func(e *Entry) error {
		if e.Provider != provider || busy[e.Key] {
			return nil
		}
		_, name, err := ParseModel(e.Model)
		if err != nil {
			return err
		}
		line, err := info.Batch.EncodeRequest(e.Key, name, e.Request)
		if err != nil {
			return fmt.Errorf("request %.12s: %w", e.Key, err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
		keys = append(keys, e.Key)
		return nil
	})
	if err != nil || len(keys) == 0 {
		return nil, err
	}
	st, err := api.Submit(ctx, buf.Bytes(), len(keys))
	if err != nil {
		return nil, fmt.Errorf("submit %d requests to %s: %w", len(keys), provider, err)
	}
	st.Provider = provider
	b := &SubmittedBatch{BatchState: *st, SubmittedAt: time.Now().UTC()}
	// The batch is running and paid for: record it even if the caller
	// has gone.
	if err := bs.SaveBatch(context.WithoutCancel(ctx), b, keys); err != nil {
		return nil, fmt.Errorf("batch %s was submitted but could not be recorded: %w", st.ID, err)
	}
	return b, nil
}

// Collected is what collecting one ended batch did.
type Collected struct {
	BatchState
	Import *BatchImport `json:"import"`
}

// CollectEnded checks every open batch and imports the results of those
// that ended; the requests they did not answer stay pending, free to be
// submitted again. Batches still running are returned with their state.
func CollectEnded(ctx context.Context, c Cache, bs BatchStore, reg *Registry, prices *PriceTable, api func(provider string) (BatchAPI, error)) (done []Collected, running []BatchState, err error) {
	open, err := bs.OpenBatches(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, b := range open {
		a, err := api(b.Provider)
		if err != nil {
			return done, running, err
		}
		st, err := a.Status(ctx, b.ID)
		if err != nil {
			return done, running, fmt.Errorf("batch %s: %w", b.ID, err)
		}
		st.Provider = b.Provider
		if !st.Ended {
			running = append(running, *st)
			continue
		}
		imp, err := ImportResults(ctx, c, reg, prices, "batch "+b.ID, func() (io.ReadCloser, error) { return a.Results(ctx, b.ID) })
		if err != nil {
			return done, running, fmt.Errorf("batch %s: %w", b.ID, err)
		}
		if err := bs.CollectBatch(ctx, st); err != nil {
			return done, running, err
		}
		done = append(done, Collected{BatchState: *st, Import: imp})
	}
	return done, running, nil
}
