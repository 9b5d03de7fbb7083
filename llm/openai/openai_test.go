package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gavelhq/gavel/internal/golden"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/llm/llmtest"
	"github.com/gavelhq/gavel/llm/openai"
)

var schema = &llm.Schema{Name: "verdict", JSON: json.RawMessage(`{"type":"object","properties":{"verdict":{"type":"string","enum":["pass","fail"]}},"required":["verdict"],"additionalProperties":false}`)}

func request() *llm.Request {
	t, seed := 0.2, int64(7)
	return &llm.Request{Model: "openai:qwen2.5-coder", Temperature: &t, Seed: &seed, MaxTokens: 256, Schema: schema,
		Messages: []llm.Message{{Role: llm.System, Content: "You judge patches."}, {Role: llm.User, Content: "Is it right?"}}}
}

func service(t *testing.T, base string) *llm.Service {
	reg := llm.NewRegistry()
	reg.Register(openai.Info)
	return llm.NewService(reg, nil, llm.Options{
		Providers: map[string]llm.ProviderConfig{"openai": {BaseURL: base, APIKey: "sk-test"}},
		Sleep:     func(context.Context, time.Duration) error { return nil },
	})
}

func TestWireRequest(t *testing.T) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	srv.Answer = func(*llmtest.Call) string { return `{"verdict":"pass"}` }
	resp, err := service(t, srv.URL+"/v1").Complete(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.JSON) != `{"verdict":"pass"}` || resp.ModelVersion != "qwen2.5-coder-fake-2025" || resp.Usage.InputTokens == 0 {
		t.Fatalf("response %+v", resp)
	}
	c := srv.Calls()[0]
	if got := c.Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Fatalf("Authorization = %q", got)
	}
	var body map[string]any
	json.Unmarshal(c.Body, &body)
	rf, _ := body["response_format"].(map[string]any)
	js, _ := rf["json_schema"].(map[string]any)
	if body["model"] != "qwen2.5-coder" || body["temperature"] != 0.2 || body["seed"] != 7.0 || body["max_tokens"] != 256.0 ||
		rf["type"] != "json_schema" || js["name"] != "verdict" || js["schema"] == nil {
		t.Fatalf("request body %s", c.Body)
	}
	msgs := body["messages"].([]any)
	if len(msgs) != 2 || msgs[0].(map[string]any)["role"] != "system" || msgs[1].(map[string]any)["content"] != "Is it right?" {
		t.Fatalf("messages %v", msgs)
	}
}

// TestSchemaFallback: a server that refuses response_format gets the
// schema as instructions instead, its fenced answer is read, and the
// provider remembers the model's limit.
func TestSchemaFallback(t *testing.T) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	srv.RejectSchema = true
	srv.Answer = func(*llmtest.Call) string { return "Here you go:\n```json\n{\"verdict\": \"fail\"}\n```" }
	svc := service(t, srv.URL+"/v1")
	resp, err := svc.Complete(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Invalid || string(resp.JSON) != `{"verdict":"fail"}` {
		t.Fatalf("response %+v", resp)
	}
	calls := srv.Calls()
	if len(calls) != 2 || strings.Contains(string(calls[1].Body), "response_format") ||
		!strings.Contains(calls[1].System, "You judge patches.") || !strings.Contains(calls[1].System, `named "verdict"`) {
		t.Fatalf("fallback request: %d calls, second %s", len(calls), calls[len(calls)-1].Body)
	}
	r2 := request()
	r2.Messages[1].Content = "And this one?"
	if _, err := svc.Complete(context.Background(), r2); err != nil {
		t.Fatal(err)
	}
	if n := srv.Count(); n != 3 {
		t.Fatalf("the limit was not remembered: %d calls", n)
	}
}

// Requests already in flight when the first refusal teaches the fallback
// are refused too; each must be sent again with the fallback, none lost
// (issue 13, defect 2).
func TestSchemaFallbackUnderConcurrency(t *testing.T) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	srv.RejectSchema = true
	srv.Answer = func(*llmtest.Call) string { return `{"verdict": "pass"}` }
	// The first calls are held until four have arrived, so that several
	// are in flight when the first refusal teaches the fallback, however
	// slowly the machine starts goroutines.
	const held = 4
	arrived := make(chan struct{})
	var once sync.Once
	srv.FaultFor = func(c *llmtest.Call) llmtest.Fault {
		if c.N == held {
			once.Do(func() { close(arrived) })
		}
		if c.N <= held {
			select {
			case <-arrived:
			case <-time.After(10 * time.Second):
			}
		}
		return llmtest.None
	}
	svc := service(t, srv.URL+"/v1")
	const n = 40
	res, err := llm.ForEach(context.Background(), n, 16, nil, func(ctx context.Context, i int) error {
		r := request()
		r.Messages[1].Content = fmt.Sprintf("Is change %d right?", i)
		resp, err := svc.Complete(ctx, r)
		if err == nil && (resp.Invalid || string(resp.JSON) != `{"verdict":"pass"}`) {
			err = fmt.Errorf("answer %d: %+v", i, resp)
		}
		return err
	})
	if err != nil || len(res.Failed) != 0 {
		t.Fatalf("%d of %d requests failed: %v %v", len(res.Failed), n, res.Failed, err)
	}
	refused := 0
	for _, c := range srv.Calls() {
		if strings.Contains(string(c.Body), "response_format") {
			refused++
		}
	}
	if refused < 2 || srv.Count() != n+refused {
		t.Fatalf("%d calls for %d requests, %d refused: the test did not catch requests in flight", srv.Count(), n, refused)
	}
}

// TestMaxCompletionTokens: OpenAI's reasoning models refuse max_tokens
// with this error; the provider switches to max_completion_tokens.
func TestMaxCompletionTokens(t *testing.T) {
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(string(b), `"max_tokens"`) {
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}`)
			return
		}
		io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"o3","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"{\"verdict\":\"pass\"}"}}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":4}}}`)
	}))
	defer srv.Close()
	resp, err := service(t, srv.URL).Complete(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	if len(bodies) != 2 || !strings.Contains(bodies[1], `"max_completion_tokens":256`) {
		t.Fatalf("bodies %v", bodies)
	}
	if resp.Usage != (llm.Usage{InputTokens: 10, OutputTokens: 5, CachedTokens: 4}) {
		t.Fatalf("usage %+v", resp.Usage)
	}
}

func TestErrorMapping(t *testing.T) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	srv.FaultFor = func(*llmtest.Call) llmtest.Fault { return llmtest.RateLimited }
	srv.RetryAfter = "7"
	p, _ := openai.New(llm.ProviderConfig{BaseURL: srv.URL + "/v1", APIKey: "k"})
	_, err := p.Complete(context.Background(), "m", request())
	api, ok := err.(*llm.APIError)
	if !ok || api.Status != 429 || api.Type != "rate_limit_error" || api.RetryAfter != 7*time.Second || !api.Retryable() {
		t.Fatalf("error %#v", err)
	}
	if srv.Count() != 1 {
		t.Fatalf("the SDK retried on its own: %d calls", srv.Count())
	}
}

func TestNoAPIKeyForLocalServers(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	p, err := openai.New(llm.ProviderConfig{BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	r := request()
	r.Schema = nil
	resp, err := p.Complete(context.Background(), "local-model", r)
	if err != nil || resp.Text != "echo: Is it right?" {
		t.Fatalf("%+v %v", resp, err)
	}
}

func TestGolden(t *testing.T) {
	fb, err := openai.RenderSchemaFallback(schema)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "schema_fallback.golden", fb+"\n")
	line, err := openai.Batch{}.EncodeRequest("k"+strings.Repeat("0", 63), "qwen2.5-coder", request())
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "batch_request.golden", string(line)+"\n")
}
