package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gavelhq/gavel/judge"
)

// Client speaks to a gavel service: what a CI job uses to gate a change and
// report its outcome.
type Client struct {
	// BaseURL is the service's address, e.g. https://gavel.example.com.
	BaseURL string
	Token   string
	HTTP    *http.Client
}

// StatusError is an error answer of the service.
type StatusError struct {
	Status     int
	Msg, Field string
	RetryAfter int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("gavel service: %d %s: %s", e.Status, http.StatusText(e.Status), e.Msg)
}

// do sends a request; a 429 or 503 that says when to retry is retried
// then, a few times (both endpoints are idempotent: the same change's
// verdict, the same outcome again).
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var raw []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		raw = b
	}
	for attempt := 1; ; attempt++ {
		err := c.once(ctx, method, path, raw, out)
		var se *StatusError
		if attempt == 5 || !errors.As(err, &se) || se.RetryAfter <= 0 || se.Status != http.StatusTooManyRequests && se.Status != http.StatusServiceUnavailable {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(min(se.RetryAfter, 30)) * time.Second):
		}
	}
}

func (c *Client) once(ctx context.Context, method, path string, raw []byte, out any) error {
	var body io.Reader
	if raw != nil {
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.BaseURL, "/")+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Minute}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var ae apiError
		if json.Unmarshal(b, &ae) != nil || ae.Msg == "" {
			ae.Msg = strings.TrimSpace(string(b))
		}
		return &StatusError{Status: resp.StatusCode, Msg: ae.Msg, Field: ae.Field, RetryAfter: ae.RetryAfter}
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("gavel service: unreadable answer: %w", err)
	}
	return nil
}

// Judge asks the service for a verdict on a change.
func (c *Client) Judge(ctx context.Context, req *JudgeRequest) (*JudgeResponse, error) {
	var out JudgeResponse
	if err := c.do(ctx, http.MethodPost, "/v1/judge", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Outcome reports what happened to a judged change.
func (c *Client) Outcome(ctx context.Context, req *OutcomeRequest) (*OutcomeResponse, error) {
	var out OutcomeResponse
	if err := c.do(ctx, http.MethodPost, "/v1/outcomes", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// NoVerdictError says a gate got no verdict: the service could not be
// reached or timed out, refused the token, failed (5xx, or 429/503 after
// its retries), or its judge's answer could not be read. A CI gate exits 4
// on it (gavel gate), apart from 1 for a change the judge failed.
type NoVerdictError struct{ Err error }

func (e *NoVerdictError) Error() string { return "no verdict: " + e.Err.Error() }
func (e *NoVerdictError) Unwrap() error { return e.Err }

// Gate asks for a verdict as a CI gate does: a pass or fail verdict is
// returned; a request the service calls wrong (400, 404, 409, 422: fix the
// call) is returned as its *StatusError; anything else that leaves the gate
// without a verdict is a *NoVerdictError.
func (c *Client) Gate(ctx context.Context, req *JudgeRequest) (*JudgeResponse, error) {
	resp, err := c.Judge(ctx, req)
	var se *StatusError
	switch {
	case err == nil:
	case errors.As(err, &se) && (se.Status == http.StatusBadRequest || se.Status == http.StatusNotFound ||
		se.Status == http.StatusConflict || se.Status == http.StatusUnprocessableEntity):
		return nil, err
	default:
		return nil, &NoVerdictError{Err: err}
	}
	if resp.Verdict != judge.Pass && resp.Verdict != judge.Fail {
		why := resp.ParseError
		if why == "" {
			why = fmt.Sprintf("verdict %q", resp.Verdict)
		}
		return resp, &NoVerdictError{Err: fmt.Errorf("the judge's answer on change %s could not be read (%s)", resp.ChangeID, why)}
	}
	return resp, nil
}
