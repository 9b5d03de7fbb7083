package llm_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gavelhq/gavel/internal/golden"

	"github.com/gavelhq/gavel/llm"
)

func f64(v float64) *float64 { return &v }
func i64(v int64) *int64     { return &v }

func TestKey(t *testing.T) {
	base := func() *llm.Request {
		return &llm.Request{Model: "openai:gpt-4o", Messages: []llm.Message{{Role: llm.User, Content: "hi"}},
			Temperature: f64(0), MaxTokens: 100, Seed: i64(1),
			Schema: &llm.Schema{Name: "s", JSON: json.RawMessage(`{"type":"object"}`)}}
	}
	k0, err := llm.Key(base())
	if err != nil {
		t.Fatal(err)
	}
	// The key is part of every store's cache: a change to it invalidates
	// every cached answer, so it is pinned here to the hash of the canonical
	// JSON written out by hand (DESIGN.md section 4: provider, model,
	// messages, sampling parameters, schema, sample index, version).
	want := sha256.Sum256([]byte(`{"v":"gavel-llm-key/1","provider":"openai","model":"gpt-4o",` +
		`"messages":[{"role":"user","content":"hi"}],"temperature":0,"max_tokens":100,"seed":1,` +
		`"schema_name":"s","schema":{"type":"object"},"sample":0}`))
	if k0 != hex.EncodeToString(want[:]) {
		t.Fatalf("key %s, want %x", k0, want)
	}
	if len(k0) != 64 || strings.Trim(k0, "0123456789abcdef") != "" {
		t.Fatalf("key %q is not 64 hex digits", k0)
	}
	changes := map[string]func(r *llm.Request){
		"provider":    func(r *llm.Request) { r.Model = "anthropic:gpt-4o" },
		"model":       func(r *llm.Request) { r.Model = "openai:gpt-4o-mini" },
		"message":     func(r *llm.Request) { r.Messages[0].Content = "hi!" },
		"role":        func(r *llm.Request) { r.Messages[0].Role = llm.System },
		"temperature": func(r *llm.Request) { r.Temperature = f64(0.7) },
		"no temp":     func(r *llm.Request) { r.Temperature = nil },
		"max tokens":  func(r *llm.Request) { r.MaxTokens = 101 },
		"seed":        func(r *llm.Request) { r.Seed = i64(2) },
		"schema":      func(r *llm.Request) { r.Schema.JSON = json.RawMessage(`{"type":"array"}`) },
		"schema name": func(r *llm.Request) { r.Schema.Name = "t" },
		"no schema":   func(r *llm.Request) { r.Schema = nil },
		"sample":      func(r *llm.Request) { r.Sample = 1 },
	}
	seen := map[string]string{k0: "base"}
	for name, change := range changes {
		r := base()
		change(r)
		k, err := llm.Key(r)
		if err != nil {
			t.Fatal(err)
		}
		if other, dup := seen[k]; dup {
			t.Errorf("changing %s gives the same key as %s", name, other)
		}
		seen[k] = name
	}
	// Formatting of the schema does not matter.
	r := base()
	r.Schema.JSON = json.RawMessage("{\n  \"type\" : \"object\"\n}")
	if k, _ := llm.Key(r); k != k0 {
		t.Error("re-indenting the schema changed the key")
	}
	if _, err := llm.Key(&llm.Request{Model: ":x"}); err == nil {
		t.Error("a model without a provider was accepted")
	}
}

func TestPrices(t *testing.T) {
	p := llm.DefaultPrices()
	mini, ok := p.Lookup("openai:gpt-4o-mini-2024-07-18")
	if !ok || mini.Input != 0.15 {
		t.Fatalf("gpt-4o-mini: %+v %v (the longer prefix must win over gpt-4o*)", mini, ok)
	}
	if _, ok := p.Lookup("openai:my-local-llama"); ok {
		t.Fatal("an unknown model has a price")
	}
	// 1,000,000 input tokens of which 200,000 cached, 100,000 output, at
	// gpt-4o's $2.50 / $1.25 / $10: 0.8*2.5 + 0.2*1.25 + 0.1*10 = 3.25.
	c, ok := p.Cost("openai:gpt-4o", llm.Usage{InputTokens: 1_000_000, CachedTokens: 200_000, OutputTokens: 100_000}, false)
	if !ok || math.Abs(c-3.25) > 1e-9 {
		t.Fatalf("cost %v", c)
	}
	if b, _ := p.Cost("openai:gpt-4o", llm.Usage{InputTokens: 1_000_000, CachedTokens: 200_000, OutputTokens: 100_000}, true); math.Abs(b-1.625) > 1e-9 {
		t.Fatalf("batch cost %v, want half", b)
	}
	if c, ok := p.Cost("sim", llm.Usage{InputTokens: 10}, false); !ok || c != 0 {
		t.Fatalf("sim cost %v %v", c, ok)
	}
	// A user's file overrides and adds entries.
	path := filepath.Join(t.TempDir(), "prices.json")
	os.WriteFile(path, []byte(`{"version":"team-1","models":{"openai:gpt-4o*":{"input":1,"output":2},"openai:my-local-llama":{"input":0,"output":0}}}`), 0o644)
	q, err := llm.LoadPrices(path)
	if err != nil {
		t.Fatal(err)
	}
	if pr, _ := q.Lookup("openai:gpt-4o"); pr.Input != 1 {
		t.Fatalf("override not applied: %+v", pr)
	}
	if _, ok := q.Lookup("openai:my-local-llama"); !ok || !strings.HasSuffix(q.Version, "+team-1") {
		t.Fatalf("added entry or version missing: %s", q.Version)
	}
	os.WriteFile(path, []byte(`{"models":{"x":{"input":1,"outptu":2}}}`), 0o644)
	if _, err := llm.LoadPrices(path); err == nil || !strings.Contains(err.Error(), "outptu") {
		t.Fatalf("misspelt field: %v", err)
	}
}

func TestExtractJSON(t *testing.T) {
	cases := map[string]string{
		`{"a":1}`: `{"a":1}`,
		"Sure! Here it is:\n```json\n{\"a\": [1, 2]}\n```\nAnything else?": `{"a": [1, 2]}`,
		"```\n{\"b\": true}\n```":                                  `{"b": true}`,
		`The verdict is {"v": "x}y", "n": {"m": 1}} as requested.`: `{"v": "x}y", "n": {"m": 1}}`,
		`first {broken then {"ok": "yes"}`:                         `{"ok": "yes"}`,
		`  [1, 2]  `:                                               `[1, 2]`,
	}
	for in, want := range cases {
		got, err := llm.ExtractJSON(in)
		if err != nil || string(got) != want {
			t.Errorf("ExtractJSON(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "   ", "no json here", "{unclosed"} {
		if _, err := llm.ExtractJSON(bad); err == nil {
			t.Errorf("ExtractJSON(%q) found JSON", bad)
		}
	}
}

func TestValidate(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"verdict":{"enum":["pass","fail"]},"score":{"type":"integer","minimum":0,"maximum":5}},"required":["verdict","score"]}`)
	if got, err := llm.Validate(schema, "```json\n{\"verdict\": \"pass\", \"score\": 4}\n```"); err != nil || string(got) != `{"verdict":"pass","score":4}` {
		t.Fatalf("valid answer: %s %v", got, err)
	}
	_, err := llm.Validate(schema, `{"verdict": "maybe", "score": 9}`)
	if err == nil || !strings.Contains(err.Error(), "/verdict") || !strings.Contains(err.Error(), "/score") {
		t.Fatalf("invalid answer: %v", err)
	}
	if err := llm.CheckSchema(json.RawMessage(`{"type": 5}`)); err == nil {
		t.Fatal("a broken schema compiled")
	}
	// Schemas are never fetched from anywhere.
	if err := llm.CheckSchema(json.RawMessage(`{"$ref": "http://127.0.0.1:1/x.json"}`)); err == nil {
		t.Fatal("a remote $ref was accepted")
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	h := func(kv ...string) http.Header {
		hd := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			hd.Set(kv[i], kv[i+1])
		}
		return hd
	}
	cases := []struct {
		h    http.Header
		want time.Duration
	}{
		{h("Retry-After", "3"), 3 * time.Second},
		{h("Retry-After", "0.5"), 500 * time.Millisecond},
		{h("Retry-After", "Thu, 01 Jan 2026 12:00:07 GMT"), 7 * time.Second},
		{h("Retry-After", "Thu, 01 Jan 2026 11:00:00 GMT"), 0},
		{h("Retry-After", "soon"), 0},
		{h("Retry-After-Ms", "250", "Retry-After", "9"), 250 * time.Millisecond},
		{nil, 0},
	}
	for _, c := range cases {
		if got := llm.RetryAfter(c.h, now); got != c.want {
			t.Errorf("RetryAfter(%v) = %v, want %v", c.h, got, c.want)
		}
	}
}

func TestAPIErrorRetryable(t *testing.T) {
	for status, want := range map[int]bool{400: false, 401: false, 403: false, 404: false, 408: true, 409: true,
		422: false, 429: true, 500: true, 502: true, 503: true, 529: true} {
		if got := (&llm.APIError{Status: status}).Retryable(); got != want {
			t.Errorf("status %d retryable = %v", status, got)
		}
	}
	var api *llm.APIError
	if !errors.As(error(&llm.APIError{Provider: "openai", Status: 429, Message: "slow down"}), &api) {
		t.Fatal("errors.As")
	}
}

func TestRepairPromptGolden(t *testing.T) {
	got, err := llm.RenderRepair("verdict", errors.New("the answer does not match the schema: at /verdict: value must be one of 'pass', 'fail'"))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "repair_prompt.golden", got+"\n")
}

func TestRunStatsAdd(t *testing.T) {
	a := llm.RunStats{Requests: 3, CacheHits: 1, Sent: 2, Attempts: 4, Retries: 2, Repairs: 1, Invalid: 1, Pending: 5, Failed: 1,
		Usage: llm.Usage{InputTokens: 10, OutputTokens: 5, CachedTokens: 2}, Cost: 0.25, Unpriced: 1}
	b := llm.RunStats{Requests: 1, CacheHits: 1, Pending: 1, Usage: llm.Usage{InputTokens: 1, OutputTokens: 1}, Cost: 0.5, Unpriced: 2}
	want := llm.RunStats{Requests: 4, CacheHits: 2, Sent: 2, Attempts: 4, Retries: 2, Repairs: 1, Invalid: 1, Pending: 6, Failed: 1,
		Usage: llm.Usage{InputTokens: 11, OutputTokens: 6, CachedTokens: 2}, Cost: 0.75, Unpriced: 3}
	if got := a.Add(b); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestForEach(t *testing.T) {
	// Items 0..19: multiples of 5 pending, 7 and 14 failing; all others done.
	var mu sync.Mutex
	seen := map[int]bool{}
	last := 0
	res, err := llm.ForEach(context.Background(), 20, 4, func(done int) { last = done }, func(_ context.Context, i int) error {
		mu.Lock()
		seen[i] = true
		mu.Unlock()
		switch {
		case i%5 == 0:
			return fmt.Errorf("item %d: %w", i, llm.ErrPending)
		case i == 7 || i == 14:
			return fmt.Errorf("item %d failed", i)
		}
		return nil
	})
	if err != nil || res.Pending != 4 || len(res.Failed) != 2 || len(seen) != 20 || last != 20 {
		t.Fatalf("got %+v, %v; %d items seen, progress %d", res, err, len(seen), last)
	}
	// The budget running out stops the feeding: with one worker, item 3
	// is the last one called, or item 4 when it was already offered.
	calls := 0
	_, err = llm.ForEach(context.Background(), 100, 1, nil, func(_ context.Context, i int) error {
		calls++
		if i == 3 {
			return fmt.Errorf("over: %w", llm.ErrBudget)
		}
		return nil
	})
	if !errors.Is(err, llm.ErrBudget) || calls > 5 {
		t.Fatalf("budget: %v after %d calls", err, calls)
	}
}

// The spellings of a model people type become PROVIDER:NAME, or are
// refused with what to type (issue 30).
func TestNormalizeModel(t *testing.T) {
	reg := llm.NewRegistry()
	reg.Register(llm.ProviderInfo{Name: "openai"})
	reg.Register(llm.ProviderInfo{Name: "anthropic"})
	reg.Register(llm.ProviderInfo{Name: "sim", Local: true})
	reg.Register(llm.ProviderInfo{Name: "bedrock"})
	for in, want := range map[string]string{
		"bedrock/us.anthropic.claude-sonnet-4-5-v1:0": "bedrock:us.anthropic.claude-sonnet-4-5-v1:0",
		"bedrock:us.anthropic.claude-sonnet-4-5-v1:0": "bedrock:us.anthropic.claude-sonnet-4-5-v1:0",
		"openai:gpt-4o":                 "openai:gpt-4o",
		"openai/gpt-4o":                 "openai:gpt-4o",
		" anthropic/claude-sonnet-4-5 ": "anthropic:claude-sonnet-4-5",
		"openai/meta-llama/Llama-3":     "openai:meta-llama/Llama-3",
		"openai:meta-llama/Llama-3":     "openai:meta-llama/Llama-3",
		"sim":                           "sim",
		"":                              "",
	} {
		if got, err := reg.Normalize(in); err != nil || got != want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"gpt-4o":            "did you mean openai:gpt-4o?",
		"o1":                "did you mean openai:o1?",
		"chatgpt-4o-latest": "did you mean openai:chatgpt-4o-latest?",
		"claude-opus-4-1":   "did you mean anthropic:claude-opus-4-1?",
		"mistral/small":     `"mistral" is not a provider`,
		"llama3":            `unknown model provider "llama3"`,
	} {
		if _, err := reg.Normalize(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Normalize(%q): %v; want an error saying %q", in, err, want)
		}
	}
	if got, err := reg.NormalizeList("openai/a, anthropic:b"); err != nil || got != "openai:a,anthropic:b" {
		t.Errorf("NormalizeList: %q, %v", got, err)
	}
	// A simulated model's parameters follow it after commas: they stay
	// with it, a panel's next model starts at its provider.
	for in, want := range map[string]string{
		"sim:family=a,sim:family=b,teacher-error=0.05,sim:family=c,sycophant=0.6": "sim:family=a,sim:family=b,teacher-error=0.05,sim:family=c,sycophant=0.6",
		"sim:teacher-error=0.2,consistent,openai/gpt-4o":                          "sim:teacher-error=0.2,consistent,openai:gpt-4o",
		"sim,anthropic/claude-x":                                                  "sim,anthropic:claude-x",
	} {
		if got, err := reg.NormalizeList(in); err != nil || got != want {
			t.Errorf("NormalizeList(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := reg.NormalizeList("sim:consistent,gpt-4o"); err == nil || !strings.Contains(err.Error(), "did you mean openai:gpt-4o?") {
		t.Errorf("a bare name in a panel: %v", err)
	}
	if got := llm.SplitModels("sim:family=b,teacher-error=0.05,openai/x"); len(got) != 2 || got[0] != "sim:family=b,teacher-error=0.05" || got[1] != "openai/x" {
		t.Errorf("SplitModels: %q", got)
	}
}
