package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"

	"github.com/gavelhq/gavel/llm"
)

// Batch is OpenAI's Batch API format, which vLLM's run_batch also reads and
// writes: request lines {"custom_id", "method", "url", "body"} and output
// lines {"custom_id", "response": {"status_code", "body"}, "error"}.
type Batch struct{}

var _ llm.BatchFormat = Batch{}

// Name implements llm.BatchFormat.
func (Batch) Name() string { return "openai" }

// BatchURL is the endpoint batch request lines name.
const BatchURL = "/v1/chat/completions"

type batchRequest struct {
	CustomID string                      `json:"custom_id"`
	Method   string                      `json:"method"`
	URL      string                      `json:"url"`
	Body     sdk.ChatCompletionNewParams `json:"body"`
}

// EncodeRequest implements llm.BatchFormat, with the parameters a live call
// to a server that accepts everything would send.
func (Batch) EncodeRequest(key, name string, req *llm.Request) ([]byte, error) {
	params, err := Params(name, req, Quirks{})
	if err != nil {
		return nil, err
	}
	return json.Marshal(batchRequest{CustomID: key, Method: "POST", URL: BatchURL, Body: params})
}

type batchOutput struct {
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	Error json.RawMessage `json:"error"`
}

// DecodeResult implements llm.BatchFormat.
func (Batch) DecodeResult(line []byte) (*llm.BatchResult, error) {
	var o batchOutput
	if err := json.Unmarshal(line, &o); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	hasError := len(o.Error) > 0 && string(o.Error) != "null"
	if o.Response == nil && !hasError {
		return nil, llm.ErrNotThisFormat
	}
	out := &llm.BatchResult{Key: o.CustomID}
	switch {
	case hasError:
		out.Failure = "error: " + errorText(o.Error)
	case o.Response.StatusCode != 200:
		out.Failure = fmt.Sprintf("HTTP %d: %s", o.Response.StatusCode, errorText(o.Response.Body))
	default:
		var cc sdk.ChatCompletion
		if err := json.Unmarshal(o.Response.Body, &cc); err != nil {
			return nil, fmt.Errorf("response.body: %w", err)
		}
		resp, err := Convert(&cc)
		if err != nil {
			return nil, err
		}
		out.Response = resp
	}
	return out, nil
}

// errorText finds a message in an error object ({"message"} or
// {"error": {"message"}}), else returns the JSON.
func errorText(raw json.RawMessage) string {
	var e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Error   *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil {
		switch {
		case e.Error != nil && e.Error.Message != "":
			return e.Error.Message
		case e.Message != "":
			return strings.TrimSpace(e.Code + " " + e.Message)
		}
	}
	return string(raw)
}
