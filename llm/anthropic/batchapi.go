package anthropic

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/gavelhq/gavel/llm"
)

// BatchAPI is Anthropic's Message Batches API through the official SDK:
// the requests go up in one create call, the batch ends within 24 hours
// at half price, and its results come down as JSONL.
type BatchAPI struct{ client sdk.Client }

// NewBatchAPI makes a BatchAPI configured as the provider is.
func NewBatchAPI(cfg llm.ProviderConfig) (llm.BatchAPI, error) {
	return &BatchAPI{client: sdk.NewClient(clientOptions(cfg)...)}, nil
}

func state(b *sdk.MessageBatch) *llm.BatchState {
	c := b.RequestCounts
	return &llm.BatchState{ID: b.ID, Status: string(b.ProcessingStatus), Ended: b.ProcessingStatus == sdk.MessageBatchProcessingStatusEnded,
		Requests:  int(c.Processing + c.Succeeded + c.Errored + c.Canceled + c.Expired),
		Succeeded: int(c.Succeeded), Failed: int(c.Errored + c.Canceled + c.Expired)}
}

// Submit implements llm.BatchAPI. The input's lines ({"custom_id",
// "params"}) are the create call's requests.
func (a *BatchAPI) Submit(ctx context.Context, input []byte, n int) (*llm.BatchState, error) {
	var reqs []json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(input))
	sc.Buffer(make([]byte, 1<<20), llm.MaxBatchLine)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			reqs = append(reqs, append(json.RawMessage(nil), sc.Bytes()...))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	body, err := json.Marshal(map[string]any{"requests": reqs})
	if err != nil {
		return nil, err
	}
	b, err := a.client.Messages.Batches.New(ctx, sdk.MessageBatchNewParams{}, option.WithRequestBody("application/json", body))
	if err != nil {
		return nil, fmt.Errorf("create the message batch: %w", err)
	}
	return state(b), nil
}

// Status implements llm.BatchAPI.
func (a *BatchAPI) Status(ctx context.Context, id string) (*llm.BatchState, error) {
	b, err := a.client.Messages.Batches.Get(ctx, id, sdk.MessageBatchGetParams{})
	if err != nil {
		return nil, err
	}
	return state(b), nil
}

// Results implements llm.BatchAPI: every request's result line, answered
// or not (errored, canceled, expired).
func (a *BatchAPI) Results(ctx context.Context, id string) (io.ReadCloser, error) {
	var raw *http.Response
	err := a.client.Get(ctx, "v1/messages/batches/"+id+"/results", nil, &raw, option.WithHeader("Accept", "application/x-jsonl"))
	if err != nil {
		return nil, fmt.Errorf("download the results of %s: %w", id, err)
	}
	return raw.Body, nil
}

// clientOptions are the SDK options of a provider's configuration. The
// SDK's own retries are off: llm.Service retries.
func clientOptions(cfg llm.ProviderConfig) []option.RequestOption {
	opts := []option.RequestOption{option.WithMaxRetries(0)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return opts
}
