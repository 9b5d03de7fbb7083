package openai

import (
	"bytes"
	"context"
	"fmt"
	"io"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/gavelhq/gavel/llm"
)

// BatchAPI is OpenAI's Batch API through the official SDK: the input file
// goes up through Files (purpose batch), the batch runs against
// /v1/chat/completions within 24 hours at half price, and its output and
// error files come down through Files.
type BatchAPI struct{ client sdk.Client }

// NewBatchAPI makes a BatchAPI configured as the provider is.
func NewBatchAPI(cfg llm.ProviderConfig) (llm.BatchAPI, error) {
	return &BatchAPI{client: sdk.NewClient(clientOptions(cfg)...)}, nil
}

func state(b *sdk.Batch) *llm.BatchState {
	st := &llm.BatchState{ID: b.ID, Status: string(b.Status), Requests: int(b.RequestCounts.Total),
		Succeeded: int(b.RequestCounts.Completed), Failed: int(b.RequestCounts.Failed)}
	switch b.Status {
	case sdk.BatchStatusCompleted, sdk.BatchStatusExpired, sdk.BatchStatusFailed, sdk.BatchStatusCancelled:
		st.Ended = true
	}
	return st
}

// Submit implements llm.BatchAPI.
func (a *BatchAPI) Submit(ctx context.Context, input []byte, n int) (*llm.BatchState, error) {
	f, err := a.client.Files.New(ctx, sdk.FileNewParams{
		File:    sdk.File(bytes.NewReader(input), "gavel-batch.jsonl", "application/jsonl"),
		Purpose: sdk.FilePurposeBatch,
	})
	if err != nil {
		return nil, fmt.Errorf("upload the batch file: %w", err)
	}
	b, err := a.client.Batches.New(ctx, sdk.BatchNewParams{
		InputFileID:      f.ID,
		Endpoint:         sdk.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: sdk.BatchNewParamsCompletionWindow24h,
	})
	if err != nil {
		return nil, fmt.Errorf("create the batch from file %s: %w", f.ID, err)
	}
	return state(b), nil
}

// Status implements llm.BatchAPI.
func (a *BatchAPI) Status(ctx context.Context, id string) (*llm.BatchState, error) {
	b, err := a.client.Batches.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return state(b), nil
}

// Results implements llm.BatchAPI: the output file's lines, then the error
// file's (the requests that failed or expired).
func (a *BatchAPI) Results(ctx context.Context, id string) (io.ReadCloser, error) {
	b, err := a.client.Batches.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	var all bytes.Buffer
	for _, fid := range []string{b.OutputFileID, b.ErrorFileID} {
		if fid == "" {
			continue
		}
		resp, err := a.client.Files.Content(ctx, fid)
		if err != nil {
			return nil, fmt.Errorf("download file %s: %w", fid, err)
		}
		_, err = io.Copy(&all, resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("download file %s: %w", fid, err)
		}
		if all.Len() > 0 && all.Bytes()[all.Len()-1] != '\n' {
			all.WriteByte('\n')
		}
	}
	return io.NopCloser(&all), nil
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
