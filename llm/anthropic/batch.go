package anthropic

import (
	"encoding/json"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/gavelhq/gavel/llm"
)

// Batch is the Message Batches format: request lines {"custom_id", "params"}
// and result lines {"custom_id", "result": {"type": succeeded|errored|
// canceled|expired, "message"|"error"}}.
type Batch struct{}

var _ llm.BatchFormat = Batch{}

// Name implements llm.BatchFormat.
func (Batch) Name() string { return "anthropic" }

type batchRequest struct {
	CustomID string               `json:"custom_id"`
	Params   sdk.MessageNewParams `json:"params"`
}

// EncodeRequest implements llm.BatchFormat with the same parameters a live
// call sends.
func (Batch) EncodeRequest(key, name string, req *llm.Request) ([]byte, error) {
	params, err := Params(name, req)
	if err != nil {
		return nil, err
	}
	return json.Marshal(batchRequest{CustomID: key, Params: params})
}

type batchResult struct {
	CustomID string `json:"custom_id"`
	Result   *struct {
		Type    string          `json:"type"`
		Message json.RawMessage `json:"message"`
		Error   json.RawMessage `json:"error"`
	} `json:"result"`
}

// DecodeResult implements llm.BatchFormat.
func (Batch) DecodeResult(line []byte) (*llm.BatchResult, error) {
	var r batchResult
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if r.Result == nil {
		return nil, llm.ErrNotThisFormat
	}
	out := &llm.BatchResult{Key: r.CustomID}
	switch r.Result.Type {
	case "succeeded":
		var msg sdk.Message
		if err := json.Unmarshal(r.Result.Message, &msg); err != nil {
			return nil, fmt.Errorf("result.message: %w", err)
		}
		resp, err := Convert(&msg, "")
		if err != nil {
			return nil, err
		}
		out.Response = resp
	case "errored":
		var e struct {
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		json.Unmarshal(r.Result.Error, &e)
		out.Failure = fmt.Sprintf("errored: %s %s", e.Error.Type, e.Error.Message)
	case "canceled", "expired":
		out.Failure = r.Result.Type
	default:
		return nil, fmt.Errorf("result.type %q: want succeeded, errored, canceled or expired", r.Result.Type)
	}
	return out, nil
}
