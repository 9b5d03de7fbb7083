package anthropic_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gavelhq/gavel/internal/golden"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/llm/anthropic"
	"github.com/gavelhq/gavel/llm/llmtest"
)

var schema = &llm.Schema{Name: "verdict", Description: "The judge's verdict.", JSON: json.RawMessage(`{"type":"object","properties":{"verdict":{"type":"string","enum":["pass","fail"]},"reasoning":{"type":"string"}},"required":["reasoning","verdict"],"additionalProperties":false}`)}

func request() *llm.Request {
	return &llm.Request{Model: "anthropic:claude-sonnet-4-5", Schema: schema,
		Messages: []llm.Message{{Role: llm.System, Content: "You judge patches."}, {Role: llm.User, Content: "Is it right?"}}}
}

func TestWireRequestAndToolAnswer(t *testing.T) {
	srv := llmtest.NewAnthropic()
	defer srv.Close()
	srv.Answer = func(*llmtest.Call) string { return `{"reasoning":"looks fine","verdict":"pass"}` }
	p, _ := anthropic.New(llm.ProviderConfig{BaseURL: srv.URL, APIKey: "sk-ant-test"})
	resp, err := p.Complete(context.Background(), "claude-sonnet-4-5", request())
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.JSON) != `{"reasoning":"looks fine","verdict":"pass"}` || resp.FinishReason != "tool_use" {
		t.Fatalf("response %+v", resp)
	}
	c := srv.Calls()[0]
	if c.Header.Get("Authorization") != "Bearer sk-ant-test" || c.Header.Get("Anthropic-Version") == "" {
		t.Fatalf("headers %v", c.Header)
	}
	var body struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		System    []struct {
			Text string `json:"text"`
		} `json:"system"`
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
		Tools []struct {
			Name        string         `json:"name"`
			InputSchema map[string]any `json:"input_schema"`
		} `json:"tools"`
		ToolChoice map[string]any `json:"tool_choice"`
	}
	if err := json.Unmarshal(c.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Model != "claude-sonnet-4-5" || body.MaxTokens != llm.DefaultMaxTokens || len(body.System) != 1 ||
		body.System[0].Text != "You judge patches." || len(body.Messages) != 1 || body.Messages[0].Role != "user" {
		t.Fatalf("body %s", c.Body)
	}
	if len(body.Tools) != 1 || body.Tools[0].Name != "verdict" || body.Tools[0].InputSchema["additionalProperties"] != false ||
		body.ToolChoice["type"] != "tool" || body.ToolChoice["name"] != "verdict" {
		t.Fatalf("tool %s", c.Body)
	}
}

func TestOverloadedIsRetryable(t *testing.T) {
	srv := llmtest.NewAnthropic()
	defer srv.Close()
	srv.FaultFor = func(*llmtest.Call) llmtest.Fault { return llmtest.Unavailable }
	srv.RetryAfter = "3"
	p, _ := anthropic.New(llm.ProviderConfig{BaseURL: srv.URL, APIKey: "k"})
	_, err := p.Complete(context.Background(), "claude-x", request())
	api, ok := err.(*llm.APIError)
	if !ok || api.Status != 529 || api.Type != "overloaded_error" || api.RetryAfter != 3*time.Second || !api.Retryable() {
		t.Fatalf("error %#v", err)
	}
	if srv.Count() != 1 {
		t.Fatalf("the SDK retried on its own: %d calls", srv.Count())
	}
}

func TestTextAnswer(t *testing.T) {
	srv := llmtest.NewAnthropic()
	defer srv.Close()
	p, _ := anthropic.New(llm.ProviderConfig{BaseURL: srv.URL, APIKey: "k"})
	r := request()
	r.Schema = nil
	resp, err := p.Complete(context.Background(), "claude-x", r)
	if err != nil || resp.Text != "echo: Is it right?" || resp.JSON != nil {
		t.Fatalf("%+v %v", resp, err)
	}
	if strings.Contains(string(srv.Calls()[0].Body), "tool") {
		t.Fatalf("a text request carried tools: %s", srv.Calls()[0].Body)
	}
}

func TestGolden(t *testing.T) {
	line, err := anthropic.Batch{}.EncodeRequest(strings.Repeat("a", 64), "claude-sonnet-4-5", request())
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "batch_request.golden", string(line)+"\n")
}
