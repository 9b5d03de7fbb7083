// Package openai is gavel's provider for any server that speaks the OpenAI
// chat completions API (OpenAI itself, vLLM, Ollama, llama.cpp's server, LM
// Studio, LiteLLM), through the official SDK github.com/openai/openai-go/v3.
//
// Structured output uses response_format json_schema. Servers differ in
// what they accept, so the provider learns per model, from the first error
// that names a parameter, to fall back: schema instructions in the prompt
// with tolerant JSON reading instead of response_format, max_completion_tokens
// instead of max_tokens, no temperature or seed where a model refuses them.
// What it learns lasts for the process.
package openai

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"text/template"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/gavelhq/gavel/llm"
)

// Info registers the provider as "openai".
var Info = llm.ProviderInfo{
	Name:        "openai",
	Doc:         "any OpenAI-compatible chat completions server (--base-url or OPENAI_BASE_URL; OPENAI_API_KEY)",
	New:         New,
	Batch:       Batch{},
	NewBatchAPI: NewBatchAPI,
	Endpoint:    &llm.Endpoint{DefaultBaseURL: "https://api.openai.com/v1", BaseURLEnv: "OPENAI_BASE_URL", KeyEnv: "OPENAI_API_KEY"},
}

// Provider calls one OpenAI-compatible server.
type Provider struct {
	client sdk.Client
	// name is the provider's registered name in its errors ("openai" when
	// empty; "azure").
	name   string
	quirks sync.Map // model name -> *quirks
}

var _ llm.Provider = (*Provider)(nil)

// Quirks records what a model's server refused. The zero value asks for
// everything.
type Quirks struct {
	NoSchema            bool // response_format json_schema refused
	MaxCompletionTokens bool // max_tokens refused in favour of max_completion_tokens
	NoTemperature       bool
	NoSeed              bool
}

// quirks is the learnt Quirks of one model, shared by concurrent calls.
type quirks struct {
	mu sync.Mutex
	q  Quirks
}

func (q *quirks) snapshot() Quirks {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.q
}

// New makes a provider. The SDK's own retries are off: llm.Service retries.
func New(cfg llm.ProviderConfig) (llm.Provider, error) {
	return &Provider{client: sdk.NewClient(clientOptions(cfg)...)}, nil
}

func (p *Provider) quirksFor(model string) *quirks {
	q, _ := p.quirks.LoadOrStore(model, &quirks{})
	return q.(*quirks)
}

// Complete implements llm.Provider: one request, adapted to what the model's
// server is known to accept; a refusal that names a parameter teaches the
// provider and the request is sent again adapted (at most a few times).
func (p *Provider) Complete(ctx context.Context, name string, req *llm.Request) (*llm.Response, error) {
	q := p.quirksFor(name)
	for range 4 {
		sent := q.snapshot()
		params, err := Params(name, req, sent)
		if err != nil {
			return nil, llm.Fatal(err)
		}
		var seen llm.HTTPCapture
		capture := option.WithMiddleware(seen.Middleware)
		start := time.Now()
		cc, err := p.client.Chat.Completions.New(ctx, params, capture)
		if err != nil {
			apiErr := toAPIError(err, seen.Status, seen.Header)
			if apiErr != nil && p.name != "" {
				apiErr.Provider = p.name
			}
			if apiErr != nil && learn(q, sent, apiErr) {
				continue
			}
			if apiErr != nil {
				return nil, apiErr
			}
			return nil, err
		}
		resp, err := Convert(cc)
		if err != nil {
			return nil, err
		}
		resp.Latency = time.Since(start)
		return resp, nil
	}
	return nil, errors.New("openai: the server kept refusing parameters")
}

// toAPIError turns the SDK's error into an llm.APIError, using the status
// seen on the wire when the SDK could not read the error body.
func toAPIError(err error, status int, header http.Header) *llm.APIError {
	var e *sdk.Error
	if errors.As(err, &e) {
		a := &llm.APIError{Provider: "openai", Status: e.StatusCode, Type: e.Type, Code: e.Code, Param: e.Param, Message: e.Message}
		if e.Response != nil {
			a.RetryAfter = llm.RetryAfter(e.Response.Header, time.Now())
		}
		if a.Message == "" {
			a.Message = strings.TrimSpace(e.RawJSON())
		}
		return a
	}
	if status >= 400 {
		return &llm.APIError{Provider: "openai", Status: status, Message: err.Error(), RetryAfter: llm.RetryAfter(header, time.Now())}
	}
	return nil
}

// learn records what a 400-class refusal says the model does not accept,
// and reports whether the request, which was sent with the quirks sent,
// should be sent again adapted. A refusal of something the request
// carried is worth a retry even when a concurrent request has already
// taught the provider the same lesson.
func learn(q *quirks, sent Quirks, e *llm.APIError) bool {
	if e.Status != http.StatusBadRequest && e.Status != http.StatusUnprocessableEntity && e.Status != http.StatusNotImplemented {
		return false
	}
	text := strings.ToLower(e.Param + " " + e.Code + " " + e.Message)
	q.mu.Lock()
	defer q.mu.Unlock()
	k := &q.q
	switch {
	case !sent.NoSchema && (e.Param == "response_format" || strings.Contains(text, "response_format") || strings.Contains(text, "json_schema")):
		k.NoSchema = true
	case !sent.MaxCompletionTokens && (e.Param == "max_tokens" || strings.Contains(text, "max_completion_tokens")):
		k.MaxCompletionTokens = true
	case !sent.NoTemperature && (e.Param == "temperature" || strings.Contains(text, "temperature")):
		k.NoTemperature = true
	case !sent.NoSeed && e.Param == "seed":
		k.NoSeed = true
	default:
		return false
	}
	return true
}

//go:embed prompts/schema_fallback.txt
var fallbackPrompt string

var fallbackTmpl = template.Must(template.New("fallback").Parse(fallbackPrompt))

// RenderSchemaFallback renders the instruction that replaces
// response_format on servers that refuse it.
func RenderSchemaFallback(s *llm.Schema) (string, error) {
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, s.JSON, "", "  "); err != nil {
		return "", err
	}
	var b bytes.Buffer
	err := fallbackTmpl.Execute(&b, struct{ Name, Schema string }{s.Name, pretty.String()})
	return strings.TrimSpace(b.String()), err
}

// Params builds the chat completion request for a model, as adapted by what
// its server is known to refuse (the zero quirks for a batch file).
func Params(name string, req *llm.Request, q Quirks) (sdk.ChatCompletionNewParams, error) {
	if name == "" {
		return sdk.ChatCompletionNewParams{}, errors.New("openai: the model needs a name, e.g. openai:gpt-4o")
	}
	msgs := req.Messages
	if req.Schema != nil && q.NoSchema {
		instr, err := RenderSchemaFallback(req.Schema)
		if err != nil {
			return sdk.ChatCompletionNewParams{}, err
		}
		msgs = withSystemSuffix(msgs, instr)
	}
	params := sdk.ChatCompletionNewParams{Model: shared.ChatModel(name)}
	for _, m := range msgs {
		switch m.Role {
		case llm.System:
			params.Messages = append(params.Messages, sdk.SystemMessage(m.Content))
		case llm.User:
			params.Messages = append(params.Messages, sdk.UserMessage(m.Content))
		case llm.Assistant:
			params.Messages = append(params.Messages, sdk.AssistantMessage(m.Content))
		default:
			return params, fmt.Errorf("openai: unknown message role %q", m.Role)
		}
	}
	if req.Temperature != nil && !q.NoTemperature {
		params.Temperature = sdk.Float(*req.Temperature)
	}
	if req.Seed != nil && !q.NoSeed {
		params.Seed = sdk.Int(*req.Seed)
	}
	if req.MaxTokens > 0 {
		if q.MaxCompletionTokens {
			params.MaxCompletionTokens = sdk.Int(int64(req.MaxTokens))
		} else {
			params.MaxTokens = sdk.Int(int64(req.MaxTokens))
		}
	}
	if req.Schema != nil && !q.NoSchema {
		var schema any
		if err := json.Unmarshal(req.Schema.JSON, &schema); err != nil {
			return params, fmt.Errorf("openai: schema %s: %w", req.Schema.Name, err)
		}
		js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: req.Schema.Name, Schema: schema}
		if req.Schema.Description != "" {
			js.Description = sdk.String(req.Schema.Description)
		}
		params.ResponseFormat = sdk.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: js},
		}
	}
	return params, nil
}

// withSystemSuffix appends text to the first system message, or adds one.
func withSystemSuffix(msgs []llm.Message, text string) []llm.Message {
	out := append([]llm.Message(nil), msgs...)
	for i, m := range out {
		if m.Role == llm.System {
			out[i].Content = m.Content + "\n\n" + text
			return out
		}
	}
	return append([]llm.Message{{Role: llm.System, Content: text}}, out...)
}

// Convert reads a chat completion into an llm.Response. A completion with
// no choice is an error (a broken or truncated answer), which is retried.
func Convert(cc *sdk.ChatCompletion) (*llm.Response, error) {
	if cc == nil || len(cc.Choices) == 0 {
		return nil, errors.New("openai: the answer has no choices")
	}
	c := cc.Choices[0]
	text := c.Message.Content
	if text == "" && c.Message.Refusal != "" {
		text = c.Message.Refusal
	}
	return &llm.Response{
		Text:         text,
		ModelVersion: cc.Model,
		FinishReason: c.FinishReason,
		Usage: llm.Usage{
			InputTokens:  cc.Usage.PromptTokens,
			OutputTokens: cc.Usage.CompletionTokens,
			CachedTokens: cc.Usage.PromptTokensDetails.CachedTokens,
		},
	}, nil
}
