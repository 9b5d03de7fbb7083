package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors.
var (
	// ErrPending is returned in offline mode for a request the cache cannot
	// answer; the request has been stored as pending.
	ErrPending = errors.New("model call pending")
	// ErrBudget is returned when a call would take spending past the
	// budget (Options.MaxCost).
	ErrBudget = errors.New("cost budget reached")
	// ErrNoPrice is returned when a budget is set and a model has no price
	// to count its calls against it.
	ErrNoPrice = errors.New("a cost budget needs the model's price")
	// ErrTransient is wrapped by the error of a call that kept failing for
	// reasons that pass (rate limits, server errors, timeouts, dropped
	// connections) until its attempts ran out: running again later can
	// succeed, so commands stop resumably rather than fail.
	ErrTransient = errors.New("the provider kept failing for reasons that pass")
	// ErrInputTooLong is a provider's refusal of a request longer than
	// the model's context window (OpenAI's context_length_exceeded,
	// Anthropic's prompt too long, vLLM's and llama.cpp's equivalents):
	// permanent, never retried, and no rerun mends it.
	ErrInputTooLong = errors.New("input_too_long")
)

// InputTooLong is the reason of an answer the provider refused for the
// input's length.
const InputTooLong = "input_too_long"

// tooLongPhrases are how servers say an input exceeds the context window.
var tooLongPhrases = []string{"context_length_exceeded", "prompt is too long", "maximum context length", "context length is",
	"exceeds the available context size", "exceed_context_size", "input is too long", "too many input tokens", "context window"}

// MaxUsageTokens bounds the token counts gavel believes from a provider:
// a usage report beyond it (or negative) is not costed.
const MaxUsageTokens = 100_000_000

// APIError is an error status from a provider's HTTP API.
type APIError struct {
	Provider string
	Status   int
	// Type, Code and Param come from the error body where the API gives
	// them; Message is its human-readable text.
	Type, Code, Param string
	Message           string
	// RetryAfter is the wait the server asked for (Retry-After or
	// retry-after-ms), or zero.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: HTTP %d", e.Provider, e.Status)
	if e.Type != "" {
		fmt.Fprintf(&b, " %s", e.Type)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	return b.String()
}

// Retryable reports whether the status is worth another attempt: request
// timeout, conflict, rate limit and server errors.
func (e *APIError) Retryable() bool {
	switch {
	case e.Status == http.StatusRequestTimeout, e.Status == http.StatusConflict,
		e.Status == http.StatusTooManyRequests, e.Status >= 500:
		return true
	}
	return false
}

// InputTooLong reports a refusal of an input longer than the model's
// context window.
func (e *APIError) InputTooLong() bool {
	if e.Status != http.StatusBadRequest && e.Status != http.StatusRequestEntityTooLarge {
		return false
	}
	text := strings.ToLower(e.Code + " " + e.Type + " " + e.Message)
	for _, p := range tooLongPhrases {
		if strings.Contains(text, p) {
			return true
		}
	}
	return false
}

// Is makes a context-length refusal ErrInputTooLong.
func (e *APIError) Is(target error) bool { return target == ErrInputTooLong && e.InputTooLong() }

// RetryAfter reads the wait a response asks for: retry-after-ms (OpenAI),
// then Retry-After in seconds or as an HTTP date.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if ms := h.Get("Retry-After-Ms"); ms != "" {
		if v, err := strconv.ParseFloat(ms, 64); err == nil && v > 0 {
			return time.Duration(v * float64(time.Millisecond))
		}
	}
	ra := strings.TrimSpace(h.Get("Retry-After"))
	if ra == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(ra, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(ra); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// retryable classifies an attempt's error. parent is the caller's context:
// when it is done, nothing is retried. Every error that is not an API
// status (connection resets, timeouts of one attempt, truncated or malformed
// bodies) is transient.
func retryable(parent context.Context, err error) bool {
	if parent.Err() != nil {
		return false
	}
	var api *APIError
	if errors.As(err, &api) {
		return api.Retryable()
	}
	var fatal *fatalError
	return !errors.As(err, &fatal)
}

// fatalError marks an error no retry can mend (a bad request built by
// gavel, an unknown provider).
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

// Fatal wraps an error so that the Service does not retry it.
func Fatal(err error) error { return &fatalError{err} }

// HTTPCapture remembers the status and headers of a provider's last HTTP
// response, through an SDK middleware, for the errors an SDK cannot read
// (a non-JSON error body from a proxy, say).
type HTTPCapture struct {
	Status int
	Header http.Header
}

// Middleware is an SDK middleware (the signature openai-go's and
// anthropic-sdk-go's option.WithMiddleware take).
func (c *HTTPCapture) Middleware(r *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(r)
	if res != nil {
		c.Status, c.Header = res.StatusCode, res.Header
	}
	return res, err
}
