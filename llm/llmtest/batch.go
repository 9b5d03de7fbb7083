package llmtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// BatchOptions shape a fake batch run.
type BatchOptions struct {
	// Answer gives each request's reply, as for a Server (default: echo, or
	// {"answer":"ok"} for structured requests).
	Answer func(c *Call) string
	// Fail, when it returns true for a custom_id, answers that request with
	// an error instead.
	Fail func(customID string) bool
}

func (o BatchOptions) answer(c *Call) string {
	s := &Server{Answer: o.Answer}
	return s.answer(c)
}

// AnswerOpenAIBatch plays the OpenAI Batch API (or vLLM's run_batch): it
// reads request lines {"custom_id", "method", "url", "body"} and writes
// output lines {"id", "custom_id", "response": {"status_code", "request_id",
// "body"}, "error"}.
func AnswerOpenAIBatch(in io.Reader, out io.Writer, opt BatchOptions) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	bw := bufio.NewWriter(out)
	n := 0
	for sc.Scan() {
		n++
		var line struct {
			CustomID string          `json:"custom_id"`
			Method   string          `json:"method"`
			URL      string          `json:"url"`
			Body     json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return fmt.Errorf("batch input line %d: %w", n, err)
		}
		if line.Method != "POST" || line.URL != "/v1/chat/completions" {
			return fmt.Errorf("batch input line %d: want POST /v1/chat/completions, got %s %s", n, line.Method, line.URL)
		}
		var req openAIChat
		if err := json.Unmarshal(line.Body, &req); err != nil {
			return fmt.Errorf("batch input line %d: body: %w", n, err)
		}
		c := &Call{N: n, Body: line.Body, Model: req.Model, Messages: len(req.Messages)}
		for _, m := range req.Messages {
			switch m.Role {
			case "system":
				c.System += contentText(m.Content)
			case "user":
				c.LastUser = contentText(m.Content)
			}
		}
		if rf := req.ResponseFormat; rf != nil && rf.JSONSchema != nil {
			c.HasSchema, c.SchemaName = true, rf.JSONSchema.Name
		}
		o := map[string]any{"id": fmt.Sprintf("batch_req_%d", n), "custom_id": line.CustomID}
		if opt.Fail != nil && opt.Fail(line.CustomID) {
			o["response"] = map[string]any{"status_code": 500, "request_id": fmt.Sprintf("req_%d", n),
				"body": json.RawMessage(OpenAIError(500, "server_error", "The batch worker failed.", ""))}
			o["error"] = nil
		} else {
			o["response"] = map[string]any{"status_code": 200, "request_id": fmt.Sprintf("req_%d", n),
				"body": openAICompletion(c, req.Model, opt.answer(c))}
			o["error"] = nil
		}
		b, _ := json.Marshal(o)
		bw.Write(b)
		bw.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return bw.Flush()
}

// AnswerAnthropicBatch plays Anthropic's Message Batches: it reads request
// lines {"custom_id", "params"} and writes result lines {"custom_id",
// "result": {"type": "succeeded", "message"} or {"type": "errored", "error"}}.
func AnswerAnthropicBatch(in io.Reader, out io.Writer, opt BatchOptions) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	bw := bufio.NewWriter(out)
	n := 0
	for sc.Scan() {
		n++
		var line struct {
			CustomID string          `json:"custom_id"`
			Params   json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return fmt.Errorf("batch request line %d: %w", n, err)
		}
		var req anthropicMessages
		if err := json.Unmarshal(line.Params, &req); err != nil {
			return fmt.Errorf("batch request line %d: params: %w", n, err)
		}
		c := &Call{N: n, Body: line.Params, Model: req.Model, Messages: len(req.Messages)}
		for _, b := range req.System {
			c.System += b.Text
		}
		for _, m := range req.Messages {
			if m.Role == "user" {
				c.LastUser = contentText(m.Content)
			}
		}
		if tc := req.ToolChoice; tc != nil && tc.Type == "tool" {
			c.HasSchema, c.SchemaName = true, tc.Name
		}
		var result map[string]any
		if opt.Fail != nil && opt.Fail(line.CustomID) {
			result = map[string]any{"type": "errored", "error": json.RawMessage(AnthropicError("api_error", "Internal server error"))}
		} else {
			result = map[string]any{"type": "succeeded", "message": anthropicMessage(c, req.Model, opt.answer(c))}
		}
		b, _ := json.Marshal(map[string]any{"custom_id": line.CustomID, "result": result})
		bw.Write(b)
		bw.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return bw.Flush()
}
