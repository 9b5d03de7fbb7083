// Package llmtest provides fake OpenAI and Anthropic servers for tests. They
// speak the real wire protocols (request and response bodies, error bodies,
// status codes, Retry-After headers) on 127.0.0.1, so the providers' real
// code paths, official SDKs included, are what the tests run. Faults can be
// injected per request: rate limits, server errors, slow answers,
// connection resets, malformed and truncated bodies, and answers that break
// their schema.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Fault is what a fake server does to one request instead of answering.
type Fault int

// The faults.
const (
	None            Fault = iota
	RateLimited           // 429 with Retry-After
	ServerError           // 500
	Unavailable           // 503 (529 "overloaded" for Anthropic) with Retry-After
	Slow                  // answers after SlowDelay
	Reset                 // closes the connection without an answer
	Malformed             // 200 with a body that is not JSON
	Truncated             // 200 with half a body, then the connection closes
	SchemaViolation       // 200 with an answer that ignores the schema
	BadRequest            // 400 invalid_request_error
	AbsurdUsage           // 200 with a usage report no call can have (negative input, 10^12 output tokens)
	ContextTooLong        // 400: the input exceeds the model's context window, as each provider words it
)

func (f Fault) String() string {
	return [...]string{"none", "rate-limited", "server-error", "unavailable", "slow", "reset",
		"malformed", "truncated", "schema-violation", "bad-request", "absurd-usage", "context-too-long"}[f]
}

// Call is what a fake server saw of one request.
type Call struct {
	N    int // 1-based order of arrival
	Body []byte
	// Decoded fields common to both protocols.
	Model        string
	System       string
	LastUser     string
	Users        []string // every user message, in order
	Messages     int
	HasSchema    bool
	SchemaName   string
	HasAssistant bool // a repair request carries the bad answer
	Header       http.Header
	Fault        Fault
}

// Server is a fake provider server.
type Server struct {
	*httptest.Server
	// Answer gives the reply to a call that is not faulted: text, or the JSON
	// of a structured answer. The default echoes the last user message, or
	// answers {"answer": "ok"} when a schema is asked for.
	Answer func(c *Call) string
	// FaultFor picks the fault for a call (default: none).
	FaultFor func(c *Call) Fault
	// RetryAfter is sent with 429 and 503/529 answers (default "1").
	RetryAfter string
	// SlowDelay is the delay of a Slow fault (default 200 ms); Latency is
	// added to every answer (default 0).
	SlowDelay, Latency time.Duration
	// Batches plays the provider's live batch service.
	Batches *Batches

	// RejectSchema makes an OpenAI fake refuse response_format json_schema
	// with a 400 that names the parameter, like servers without structured
	// output.
	RejectSchema bool
	// Cloud, on the Azure, Bedrock and Vertex fakes, is what they require.
	Cloud *Cloud

	mu    sync.Mutex
	calls []*Call
	n     int
	kind  string
}

// Calls returns the calls seen so far.
func (s *Server) Calls() []*Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Call(nil), s.calls...)
}

// Count returns how many calls arrived.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// NewOpenAI starts a fake OpenAI chat completions server. Its base URL for
// the SDK is URL + "/v1".
func NewOpenAI() *Server {
	s := &Server{kind: "openai", RetryAfter: "1", SlowDelay: 200 * time.Millisecond,
		Batches: &Batches{kind: "openai", files: map[string][]byte{}, batches: map[string]*fakeBatch{}}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.serveOpenAI)
	s.Batches.openAIRoutes(mux)
	s.Server = httptest.NewServer(mux)
	return s
}

// NewAnthropic starts a fake Anthropic Messages server. Its base URL for the
// SDK is URL.
func NewAnthropic() *Server {
	s := &Server{kind: "anthropic", RetryAfter: "1", SlowDelay: 200 * time.Millisecond,
		Batches: &Batches{kind: "anthropic", files: map[string][]byte{}, batches: map[string]*fakeBatch{}}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.serveAnthropic)
	s.Batches.anthropicRoutes(mux, func() string { return s.URL })
	s.Server = httptest.NewServer(mux)
	return s
}

func (s *Server) record(c *Call) {
	s.mu.Lock()
	s.n++
	c.N = s.n
	s.calls = append(s.calls, c)
	s.mu.Unlock()
	if s.FaultFor != nil {
		c.Fault = s.FaultFor(c)
	}
}

func (s *Server) answer(c *Call) string {
	if s.Answer != nil {
		return s.Answer(c)
	}
	if c.HasSchema {
		return `{"answer":"ok"}`
	}
	return "echo: " + c.LastUser
}

// fault carries out the transport-level faults; it reports whether the
// request has been dealt with.
func (s *Server) fault(w http.ResponseWriter, r *http.Request, c *Call, errBody func(status int, typ, msg string) []byte) bool {
	switch c.Fault {
	case RateLimited:
		w.Header().Set("Retry-After", s.RetryAfter)
		writeJSON(w, http.StatusTooManyRequests, errBody(429, "rate_limit_error", "Rate limit reached for requests"))
	case ServerError:
		writeJSON(w, http.StatusInternalServerError, errBody(500, "api_error", "The server had an error while processing your request."))
	case Unavailable:
		w.Header().Set("Retry-After", s.RetryAfter)
		status, typ := http.StatusServiceUnavailable, "server_error"
		if s.kind == "anthropic" {
			status, typ = 529, "overloaded_error"
		}
		writeJSON(w, status, errBody(status, typ, "The engine is currently overloaded, please try again later."))
	case BadRequest:
		writeJSON(w, http.StatusBadRequest, errBody(400, "invalid_request_error", "Invalid request."))
	case ContextTooLong:
		if s.kind == "anthropic" {
			writeJSON(w, http.StatusBadRequest, errBody(400, "invalid_request_error", "prompt is too long: 215337 tokens > 200000 maximum"))
			break
		}
		// OpenAI's body, with its code (vLLM answers the same message
		// without it).
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
			"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 215337 tokens. Please reduce the length of the messages."}})
		writeJSON(w, http.StatusBadRequest, b)
	case Reset:
		hj, ok := w.(http.Hijacker)
		if !ok {
			panic("llmtest: cannot hijack")
		}
		conn, _, err := hj.Hijack()
		if err == nil {
			conn.Close()
		}
	case Malformed:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `{"id": "broken", "choices": [ this is not JSON`)
	case Slow:
		select {
		case <-time.After(s.SlowDelay):
		case <-r.Context().Done():
			return true
		}
		return false
	default:
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// writeTruncated sends a Content-Length for the whole body but only half of
// it, then aborts the connection.
func writeTruncated(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body[:len(body)/2])
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	panic(http.ErrAbortHandler)
}

func (s *Server) delay(r *http.Request) {
	if s.Latency > 0 {
		select {
		case <-time.After(s.Latency):
		case <-r.Context().Done():
		}
	}
}

// tokens approximates a token count as the fakes report it: a word is a
// token.
func tokens(s string) int64 { return int64(len(strings.Fields(s)) + 1) }

// openAIChat is the part of a chat completions request the fake reads.
type openAIChat struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	} `json:"messages"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
	MaxTokens           *int `json:"max_tokens"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`
}

func contentText(c any) string {
	switch v := c.(type) {
	case string:
		return v
	case []any:
		var b strings.Builder
		for _, p := range v {
			if m, ok := p.(map[string]any); ok {
				if t, ok := m["text"].(string); ok {
					b.WriteString(t)
				}
			}
		}
		return b.String()
	}
	return ""
}

// OpenAIError is the body of an OpenAI error response.
func OpenAIError(status int, typ, msg, param string) []byte {
	e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if param != "" {
		e["param"] = param
		e["code"] = "unsupported_parameter"
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	return b
}

func (s *Server) serveOpenAI(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var req openAIChat
	if err := json.Unmarshal(body, &req); err != nil {
		writeJSON(w, 400, OpenAIError(400, "invalid_request_error", "We could not parse the JSON body of your request.", ""))
		return
	}
	if m := r.PathValue("model"); m != "" {
		req.Model = m // Azure: the deployment in the path answers
	}
	c := &Call{Body: body, Model: req.Model, Messages: len(req.Messages), Header: r.Header.Clone()}
	for _, m := range req.Messages {
		switch m.Role {
		case "system", "developer":
			c.System += contentText(m.Content)
		case "user":
			c.LastUser = contentText(m.Content)
			c.Users = append(c.Users, c.LastUser)
		case "assistant":
			c.HasAssistant = true
		}
	}
	if rf := req.ResponseFormat; rf != nil && rf.JSONSchema != nil {
		c.HasSchema, c.SchemaName = true, rf.JSONSchema.Name
	}
	s.record(c)
	errBody := func(status int, typ, msg string) []byte { return OpenAIError(status, typ, msg, "") }
	if s.fault(w, r, c, errBody) {
		return
	}
	if s.RejectSchema && req.ResponseFormat != nil {
		writeJSON(w, 400, OpenAIError(400, "invalid_request_error", "response_format json_schema is not supported by this server", "response_format"))
		return
	}
	s.delay(r)
	text := s.answer(c)
	if c.Fault == SchemaViolation {
		text = "I think it is fine."
	}
	resp := openAICompletion(c, req.Model, text)
	b, _ := json.Marshal(resp)
	if c.Fault == Truncated {
		writeTruncated(w, b)
	}
	w.Header().Set("x-request-id", fmt.Sprintf("req_%d", c.N))
	writeJSON(w, 200, b)
}

// AnthropicError is the body of an Anthropic error response.
func AnthropicError(typ, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
	return b
}

type anthropicMessages struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	System    []struct {
		Text string `json:"text"`
	} `json:"system"`
	Messages []struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	ToolChoice *struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tool_choice"`
}

func (s *Server) serveAnthropic(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var req anthropicMessages
	if err := json.Unmarshal(body, &req); err != nil {
		writeJSON(w, 400, AnthropicError("invalid_request_error", "invalid JSON body"))
		return
	}
	if m := r.PathValue("model"); m != "" {
		req.Model = m // Bedrock and Vertex: the model is in the path
	}
	if req.MaxTokens <= 0 {
		writeJSON(w, 400, AnthropicError("invalid_request_error", "max_tokens: Field required"))
		return
	}
	c := &Call{Body: body, Model: req.Model, Messages: len(req.Messages), Header: r.Header.Clone()}
	for _, b := range req.System {
		c.System += b.Text
	}
	for _, m := range req.Messages {
		switch m.Role {
		case "user":
			c.LastUser = contentText(m.Content)
			c.Users = append(c.Users, c.LastUser)
		case "assistant":
			c.HasAssistant = true
		}
	}
	if tc := req.ToolChoice; tc != nil && tc.Type == "tool" {
		c.HasSchema, c.SchemaName = true, tc.Name
	}
	s.record(c)
	if s.fault(w, r, c, func(_ int, typ, msg string) []byte { return AnthropicError(typ, msg) }) {
		return
	}
	s.delay(r)
	text := s.answer(c)
	resp := anthropicMessage(c, req.Model, text)
	b, _ := json.Marshal(resp)
	if c.Fault == Truncated {
		writeTruncated(w, b)
	}
	w.Header().Set("request-id", fmt.Sprintf("req_%d", c.N))
	writeJSON(w, 200, b)
}

// openAICompletion is a chat.completion body answering a call.
func openAICompletion(c *Call, model, text string) map[string]any {
	if c.Fault == AbsurdUsage {
		return map[string]any{
			"id": fmt.Sprintf("chatcmpl-%d", c.N), "object": "chat.completion", "created": time.Now().Unix(),
			"model": model + "-fake-2025",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "logprobs": nil,
				"message": map[string]any{"role": "assistant", "content": text, "refusal": nil}}},
			"usage": map[string]any{"prompt_tokens": -5, "completion_tokens": 1_000_000_000_000, "total_tokens": 1_000_000_000_000},
		}
	}
	return map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", c.N), "object": "chat.completion", "created": time.Now().Unix(),
		"model": model + "-fake-2025",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "logprobs": nil,
			"message": map[string]any{"role": "assistant", "content": text, "refusal": nil}}},
		"usage": map[string]any{"prompt_tokens": tokens(c.System + " " + c.LastUser), "completion_tokens": tokens(text),
			"total_tokens":          tokens(c.System+" "+c.LastUser) + tokens(text),
			"prompt_tokens_details": map[string]any{"cached_tokens": 0}},
	}
}

// anthropicMessage is a message body answering a call: a forced tool call
// when the call asked for one, else text.
func anthropicMessage(c *Call, model, text string) map[string]any {
	var content []any
	stop := "end_turn"
	switch {
	case c.HasSchema && c.Fault == SchemaViolation:
		content = []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": c.SchemaName, "input": map[string]any{}}}
		stop = "tool_use"
	case c.HasSchema && json.Valid([]byte(text)):
		content = []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": c.SchemaName, "input": json.RawMessage(text)}}
		stop = "tool_use"
	default:
		content = []any{map[string]any{"type": "text", "text": text}}
	}
	return map[string]any{
		"id": fmt.Sprintf("msg_%d", c.N), "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": tokens(c.System + " " + c.LastUser), "output_tokens": tokens(text),
			"cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
	}
}
