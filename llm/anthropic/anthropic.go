// Package anthropic is gavel's provider for Anthropic's Messages API,
// through the official SDK github.com/anthropics/anthropic-sdk-go/v2
// (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL).
//
// Structured output is a forced tool call: the schema becomes the input
// schema of one tool the model must call, and the tool's input is the
// answer. System messages go to the top-level system parameter. The
// Messages API of this SDK version has no temperature or seed parameters;
// a request's temperature and seed still count in its cache key.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/gavelhq/gavel/llm"
)

// Info registers the provider as "anthropic".
var Info = llm.ProviderInfo{
	Name:        "anthropic",
	Doc:         "Anthropic's Messages API (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL or --base-url)",
	New:         New,
	Batch:       Batch{},
	NewBatchAPI: NewBatchAPI,
	Endpoint:    &llm.Endpoint{DefaultBaseURL: "https://api.anthropic.com", BaseURLEnv: "ANTHROPIC_BASE_URL", KeyEnv: "ANTHROPIC_API_KEY"},
}

// Provider calls the Messages API.
type Provider struct {
	client sdk.Client
	// name is the provider's registered name in its errors ("anthropic"
	// when empty; "bedrock", "vertex").
	name string
}

var _ llm.Provider = (*Provider)(nil)

// New makes a provider. The SDK's own retries are off: llm.Service retries.
func New(cfg llm.ProviderConfig) (llm.Provider, error) {
	return &Provider{client: sdk.NewClient(clientOptions(cfg)...)}, nil
}

// Complete implements llm.Provider.
func (p *Provider) Complete(ctx context.Context, name string, req *llm.Request) (*llm.Response, error) {
	params, err := Params(name, req)
	if err != nil {
		return nil, llm.Fatal(err)
	}
	var seen llm.HTTPCapture
	capture := option.WithMiddleware(seen.Middleware)
	start := time.Now()
	msg, err := p.client.Messages.New(ctx, params, capture)
	if err != nil {
		if a := toAPIError(err, seen.Status, seen.Header); a != nil {
			if p.name != "" {
				a.Provider = p.name
			}
			return nil, a
		}
		return nil, err
	}
	schemaName := ""
	if req.Schema != nil {
		schemaName = req.Schema.Name
	}
	resp, err := Convert(msg, schemaName)
	if err != nil {
		return nil, err
	}
	resp.Latency = time.Since(start)
	return resp, nil
}

func toAPIError(err error, status int, header http.Header) *llm.APIError {
	var e *sdk.Error
	if errors.As(err, &e) {
		a := &llm.APIError{Provider: "anthropic", Status: e.StatusCode, Type: string(e.Type()), Message: e.Message}
		if e.Response != nil {
			a.RetryAfter = llm.RetryAfter(e.Response.Header, time.Now())
		}
		if a.Message == "" {
			a.Message = strings.TrimSpace(e.RawJSON())
		}
		return a
	}
	if status >= 400 {
		return &llm.APIError{Provider: "anthropic", Status: status, Message: err.Error(), RetryAfter: llm.RetryAfter(header, time.Now())}
	}
	return nil
}

// Params builds the Messages API request.
func Params(name string, req *llm.Request) (sdk.MessageNewParams, error) {
	if name == "" {
		return sdk.MessageNewParams{}, errors.New("anthropic: the model needs a name, e.g. anthropic:claude-sonnet-4-5")
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = llm.DefaultMaxTokens
	}
	params := sdk.MessageNewParams{Model: sdk.Model(name), MaxTokens: int64(maxTokens)}
	for _, m := range req.Messages {
		switch m.Role {
		case llm.System:
			params.System = append(params.System, sdk.TextBlockParam{Text: m.Content})
		case llm.User:
			params.Messages = append(params.Messages, sdk.NewUserMessage(sdk.NewTextBlock(m.Content)))
		case llm.Assistant:
			params.Messages = append(params.Messages, sdk.NewAssistantMessage(sdk.NewTextBlock(m.Content)))
		default:
			return params, fmt.Errorf("anthropic: unknown message role %q", m.Role)
		}
	}
	if len(params.Messages) == 0 {
		return params, errors.New("anthropic: a request needs at least one user message")
	}
	if req.Schema != nil {
		tool, err := schemaTool(req.Schema)
		if err != nil {
			return params, err
		}
		params.Tools = []sdk.ToolUnionParam{tool}
		params.ToolChoice = sdk.ToolChoiceParamOfTool(req.Schema.Name)
	}
	return params, nil
}

// schemaTool turns a JSON Schema (an object schema) into the one tool the
// model is made to call.
func schemaTool(s *llm.Schema) (sdk.ToolUnionParam, error) {
	var obj map[string]any
	if err := json.Unmarshal(s.JSON, &obj); err != nil {
		return sdk.ToolUnionParam{}, fmt.Errorf("anthropic: schema %s: %w", s.Name, err)
	}
	if t, ok := obj["type"]; ok && t != "object" {
		return sdk.ToolUnionParam{}, fmt.Errorf("anthropic: schema %s: a tool's input must be an object, not %v", s.Name, t)
	}
	in := sdk.ToolInputSchemaParam{Properties: obj["properties"], ExtraFields: map[string]any{}}
	if req, ok := obj["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				in.Required = append(in.Required, name)
			}
		}
	}
	for k, v := range obj {
		switch k {
		case "type", "properties", "required":
		default:
			in.ExtraFields[k] = v
		}
	}
	tool := sdk.ToolUnionParamOfTool(in, s.Name)
	desc := s.Description
	if desc == "" {
		desc = "Give the answer as this tool's input."
	}
	tool.OfTool.Description = sdk.String(desc)
	return tool, nil
}

// Convert reads a message into an llm.Response: text blocks are the text;
// the input of the tool call named schemaName (of any tool call when it is
// empty) is the structured answer.
func Convert(msg *sdk.Message, schemaName string) (*llm.Response, error) {
	if msg == nil {
		return nil, errors.New("anthropic: empty answer")
	}
	resp := &llm.Response{
		ModelVersion: string(msg.Model),
		FinishReason: string(msg.StopReason),
		Usage: llm.Usage{
			InputTokens:  msg.Usage.InputTokens + msg.Usage.CacheReadInputTokens + msg.Usage.CacheCreationInputTokens,
			OutputTokens: msg.Usage.OutputTokens,
			CachedTokens: msg.Usage.CacheReadInputTokens,
		},
	}
	var text []string
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text = append(text, b.Text)
		case "tool_use":
			if (schemaName == "" || b.Name == schemaName) && len(b.Input) > 0 && resp.JSON == nil {
				resp.JSON = append(json.RawMessage(nil), b.Input...)
			}
		}
	}
	resp.Text = strings.Join(text, "")
	if resp.Text == "" && len(resp.JSON) > 0 {
		resp.Text = string(resp.JSON)
	}
	if len(msg.Content) == 0 && msg.StopReason == "" {
		return nil, errors.New("anthropic: the answer has no content")
	}
	return resp, nil
}
