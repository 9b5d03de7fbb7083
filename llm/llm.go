// Package llm is gavel's one road to language models. Every model call
// (judges, teacher, edit proposer, critic, generator) is a provider-neutral
// Request that goes through a Service, which adds what DESIGN.md section 4
// requires of every call: a content-addressed cache (a rerun of a finished
// command makes no call), one flight for identical concurrent requests,
// concurrency and rate limits, bounded retries with backoff that honour
// Retry-After, a per-call timeout, schema checking with one repair attempt,
// token usage and cost with a budget, and an offline mode whose misses become
// pending requests that batch files can answer.
//
// Providers (llm/openai, llm/anthropic, and the simulated model in package
// sim) make exactly one attempt per call and register by name in a Registry.
package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Role is the author of a message.
type Role string

// Message roles.
const (
	System    Role = "system"
	User      Role = "user"
	Assistant Role = "assistant"
)

// Message is one turn of a conversation.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
}

// Schema asks for a JSON answer that validates against a JSON Schema.
type Schema struct {
	// Name identifies the answer's kind (e.g. "verdict"); providers need it.
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	JSON        json.RawMessage `json:"schema"`
}

// Request is one model call. Everything in it changes the answer and so is
// part of the cache key; credentials, base URL, timeouts and retry settings
// are not here and never enter the key.
type Request struct {
	// Model is "provider:name" (e.g. "openai:gpt-4o", "anthropic:claude-sonnet-4-5")
	// or a bare provider name ("sim").
	Model       string    `json:"model"`
	Messages    []Message `json:"messages"`
	Temperature *float64  `json:"temperature,omitempty"`
	// MaxTokens bounds the answer (0: the provider's default, DefaultMaxTokens
	// where one must be given).
	MaxTokens int    `json:"max_tokens,omitempty"`
	Seed      *int64 `json:"seed,omitempty"`
	// Schema, when set, asks for structured output.
	Schema *Schema `json:"schema,omitempty"`
	// Sample distinguishes deliberate repeats of the same request (e.g. n
	// samples per instruction), which the cache must keep apart.
	Sample int `json:"sample,omitempty"`
}

// DefaultMaxTokens is used where a provider requires a bound and the request
// gives none.
const DefaultMaxTokens = 4096

// Usage counts tokens. InputTokens includes CachedTokens (prompt tokens the
// provider served from its own prompt cache).
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	CachedTokens int64 `json:"cached_tokens,omitempty"`
}

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{u.InputTokens + v.InputTokens, u.OutputTokens + v.OutputTokens, u.CachedTokens + v.CachedTokens}
}

// Response is a model's answer.
type Response struct {
	Text string `json:"text"`
	// Key is the request's cache key, when the client computed it (the
	// Service does), so a caller need not compute it again; not stored.
	Key string `json:"-"`
	// JSON is the parsed answer when the request had a schema and the answer
	// validated; otherwise nil.
	JSON json.RawMessage `json:"json,omitempty"`
	// Invalid is set when a schema was asked for and the answer (after one
	// repair attempt) did not match it; ParseError says why. An invalid
	// answer is data, never an error and never a guess.
	Invalid    bool   `json:"invalid,omitempty"`
	ParseError string `json:"parse_error,omitempty"`
	// ModelVersion is the model the provider says answered.
	ModelVersion string        `json:"model_version,omitempty"`
	FinishReason string        `json:"finish_reason,omitempty"`
	Usage        Usage         `json:"usage"`
	Latency      time.Duration `json:"latency_ns"`
	// Cost in US dollars by the price table; Priced is false when the table
	// has no price for the model.
	Cost   float64 `json:"cost_usd"`
	Priced bool    `json:"priced"`
	// Attempts is the number of HTTP calls it took (retries and the repair
	// call included).
	Attempts int `json:"attempts"`
	// Cached is true when the answer came from the cache rather than a
	// provider; it is not stored.
	Cached bool `json:"-"`
	// Batch is true when the answer came in through a batch file.
	Batch bool `json:"batch,omitempty"`
}

// Client answers requests. Service is the implementation every part of
// gavel uses.
type Client interface {
	Complete(ctx context.Context, req *Request) (*Response, error)
}

// Provider makes one attempt at a request against one backend, with no
// retries, cache or limits of its own. Name is the model name without the
// provider prefix. Errors from the backend's HTTP API are *APIError values.
type Provider interface {
	Complete(ctx context.Context, name string, req *Request) (*Response, error)
}

// ProviderConfig is what a provider needs to connect. Zero values mean the
// provider's defaults (environment variables, the official endpoint).
type ProviderConfig struct {
	BaseURL string
	APIKey  string
	// HTTPClient, when set, replaces the provider's HTTP client.
	HTTPClient *http.Client
}

// Factory makes a provider.
type Factory func(ProviderConfig) (Provider, error)

// ProviderInfo describes a provider for the registry.
type ProviderInfo struct {
	Name string
	Doc  string
	// Local providers run in-process and cost nothing (the simulated
	// model): they answer even in offline mode.
	Local bool
	New   Factory
	// Batch, when set, is the provider's batch file format; NewBatchAPI
	// its live batch service.
	Batch       BatchFormat
	NewBatchAPI func(ProviderConfig) (BatchAPI, error)
	// Endpoint, when set, lets Preflight check a hosted provider's key
	// and reachability before work starts.
	Endpoint *Endpoint
}

// Registry maps provider names to factories.
type Registry struct {
	infos map[string]ProviderInfo
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{infos: map[string]ProviderInfo{}}
}

// Register adds a provider. Registering a name twice panics: it is a
// wiring mistake.
func (r *Registry) Register(info ProviderInfo) {
	if _, dup := r.infos[info.Name]; dup {
		panic("llm: provider registered twice: " + info.Name)
	}
	r.infos[info.Name] = info
}

// Names lists the registered providers.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.infos))
	for n := range r.infos {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Info returns a registered provider's description.
func (r *Registry) Info(name string) (ProviderInfo, error) {
	info, ok := r.infos[name]
	if !ok {
		return info, fmt.Errorf("unknown model provider %q (known: %s)", name, strings.Join(r.Names(), ", "))
	}
	return info, nil
}

// Normalize writes a model the way gavel stores it, PROVIDER:NAME, from
// the forms people type: "openai:gpt-4o" as it is; Inspect's
// "openai/gpt-4o" when the part before the slash is a provider; a bare
// provider ("sim"). A bare model name is refused with the provider that
// serves it (gpt-*, o1-o4*, chatgpt-* -> openai; claude-* -> anthropic),
// and a slash name of no provider (a Hugging Face id) with the openai:
// form an OpenAI-compatible server takes. Cache keys and stored verdicts
// hold the normalized form, so both spellings share them.
func (r *Registry) Normalize(model string) (string, error) {
	m := strings.TrimSpace(model)
	if slash, colon := strings.IndexByte(m, '/'), strings.IndexByte(m, ':'); slash > 0 && colon > slash {
		// bedrock/us.anthropic.claude-...-v1:0: a model ID with a colon
		// of its own, written with the slash.
		if _, known := r.infos[m[:slash]]; known {
			return m[:slash] + ":" + m[slash+1:], nil
		}
	}
	if m == "" || strings.Contains(m, ":") {
		return m, nil
	}
	if p, name, ok := strings.Cut(m, "/"); ok {
		if _, known := r.infos[p]; known && name != "" {
			return p + ":" + name, nil
		}
		return "", fmt.Errorf("model %q: %q is not a provider (known: %s); a model of an OpenAI-compatible server (vLLM) is openai:%s",
			model, p, strings.Join(r.Names(), ", "), m)
	}
	if _, known := r.infos[m]; known {
		return m, nil
	}
	if err := noProvider(m); err != nil {
		return "", err
	}
	return "", fmt.Errorf("unknown model provider %q (known: %s); models are PROVIDER:NAME, e.g. openai:gpt-4o", m, strings.Join(r.Names(), ", "))
}

// noProvider is the error of a bare model name whose provider is plain
// from it (gpt-*, o1-o4*, chatgpt-* -> openai; claude-* -> anthropic), or
// nil.
func noProvider(m string) error {
	lower := strings.ToLower(m)
	switch {
	case strings.HasPrefix(lower, "gpt-"), strings.HasPrefix(lower, "chatgpt-"), len(lower) > 1 && lower[0] == 'o' && lower[1] >= '1' && lower[1] <= '9':
		return fmt.Errorf("model %q names no provider: did you mean openai:%s? (models are PROVIDER:NAME)", m, m)
	case strings.HasPrefix(lower, "claude-"):
		return fmt.Errorf("model %q names no provider: did you mean anthropic:%s? (models are PROVIDER:NAME)", m, m)
	}
	return nil
}

// NormalizeList normalizes a comma-separated list of models (a teacher
// panel) model by model, split as SplitModels splits it.
func (r *Registry) NormalizeList(models string) (string, error) {
	parts := SplitModels(models)
	for i, p := range parts {
		// A bare model name after a comma joins the model before it as
		// a parameter would: name it.
		for _, param := range strings.Split(p, ",")[1:] {
			if !strings.Contains(param, "=") {
				if err := noProvider(strings.TrimSpace(param)); err != nil {
					return "", err
				}
			}
		}
		var err error
		if parts[i], err = r.Normalize(p); err != nil {
			return "", err
		}
	}
	return strings.Join(parts, ","), nil
}

// SplitModels splits a comma-separated list of models. A model starts
// with its provider ("openai:", "anthropic/", "sim:") or is the bare
// "sim"; a comma followed by anything else belongs to the model before
// it, as the simulated model's parameters do
// ("sim:teacher-error=0.2,sycophant=0.8").
func SplitModels(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if len(out) == 0 || startsModel(part) {
			out = append(out, part)
			continue
		}
		out[len(out)-1] += "," + part
	}
	return out
}

// startsModel reports whether s begins with a provider name and a colon
// or slash before any '='.
func startsModel(s string) bool {
	sep := strings.IndexAny(s, ":/")
	if sep <= 0 {
		return s == "sim"
	}
	if eq := strings.IndexByte(s, '='); eq >= 0 && eq < sep {
		return false
	}
	for _, c := range s[:sep] {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// ParseModel splits "provider:name". A bare word is a provider with an
// empty model name (e.g. "sim"). "provider/name" is split the same way
// (Registry.Normalize says which spellings a command accepts).
func ParseModel(model string) (provider, name string, err error) {
	if m := strings.TrimSpace(model); strings.Contains(m, "/") && (!strings.Contains(m, ":") || strings.IndexByte(m, '/') < strings.IndexByte(m, ':')) {
		p, name, _ := strings.Cut(m, "/")
		return p, name, nil
	}
	provider, name, _ = strings.Cut(strings.TrimSpace(model), ":")
	if provider == "" {
		return "", "", fmt.Errorf("model %q: want PROVIDER:NAME, e.g. openai:gpt-4o, anthropic:claude-sonnet-4-5 or sim", model)
	}
	return provider, name, nil
}
