package llm_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/llm/anthropic"
	"github.com/gavelhq/gavel/llm/llmtest"
	"github.com/gavelhq/gavel/llm/openai"
	"github.com/gavelhq/gavel/sim"
	"github.com/gavelhq/gavel/store/sqlite"
)

func registry() *llm.Registry {
	r := llm.NewRegistry()
	r.Register(openai.Info)
	r.Register(anthropic.Info)
	r.Register(sim.Info)
	return r
}

// countingCache wraps a cache and counts writes per key.
type countingCache struct {
	llm.Cache
	mu   sync.Mutex
	puts map[string]int
}

func (c *countingCache) Put(ctx context.Context, e *llm.Entry) error {
	c.mu.Lock()
	c.puts[e.Key]++
	c.mu.Unlock()
	return c.Cache.Put(ctx, e)
}

func newCache(t testing.TB) *countingCache {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "gavel.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &countingCache{Cache: db.Cache(), puts: map[string]int{}}
}

// sleeps records the waits a Service asks for without waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func options(srv *llmtest.Server, provider string, sl *sleeps) llm.Options {
	base := srv.URL + "/v1"
	if provider == "anthropic" {
		base = srv.URL
	}
	return llm.Options{
		Providers: map[string]llm.ProviderConfig{provider: {BaseURL: base, APIKey: "test-key"}},
		Sleep:     sl.sleep, Seed: 1, MaxAttempts: 6, Timeout: 5 * time.Second,
	}
}

var verdictSchema = &llm.Schema{Name: "verdict", JSON: json.RawMessage(`{
	"type": "object",
	"properties": {"verdict": {"type": "string", "enum": ["pass", "fail"]}, "reasoning": {"type": "string"}},
	"required": ["verdict", "reasoning"], "additionalProperties": false}`)}

func ask(model, text string) *llm.Request {
	return &llm.Request{Model: model, Messages: []llm.Message{{Role: llm.System, Content: "You are terse."}, {Role: llm.User, Content: text}}}
}

// faultOf deterministically faults 30% of requests on their first
// attempt (and a tenth of those on the second too), cycling through every
// fault kind, so each request is answered within three attempts.
func faultOf(attempts map[string]int, faulted map[string]bool, mu *sync.Mutex) func(c *llmtest.Call) llmtest.Fault {
	kinds := []llmtest.Fault{llmtest.RateLimited, llmtest.ServerError, llmtest.Unavailable, llmtest.Reset,
		llmtest.Malformed, llmtest.Truncated, llmtest.Slow, llmtest.SchemaViolation}
	return func(c *llmtest.Call) llmtest.Fault {
		key := c.Users[0]
		mu.Lock()
		attempts[key]++
		n := attempts[key]
		mu.Unlock()
		h := sha256.Sum256([]byte(key))
		bucket := int(h[0]) % 100
		switch {
		case c.HasAssistant: // a repair request: answer it
			return llmtest.None
		case n == 1 && bucket < 30:
			mu.Lock()
			faulted[key] = true
			mu.Unlock()
			return kinds[int(h[1])%len(kinds)]
		case n == 2 && bucket < 3:
			return llmtest.ServerError
		}
		return llmtest.None
	}
}

func TestFaultyServerEveryRequestAnsweredOnce(t *testing.T) {
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			var srv *llmtest.Server
			if provider == "openai" {
				srv = llmtest.NewOpenAI()
			} else {
				srv = llmtest.NewAnthropic()
			}
			defer srv.Close()
			var mu sync.Mutex
			attempts := map[string]int{}
			faultedKeys := map[string]bool{}
			srv.FaultFor = faultOf(attempts, faultedKeys, &mu)
			srv.SlowDelay = 2 * time.Second
			srv.Answer = func(c *llmtest.Call) string {
				b, _ := json.Marshal(map[string]string{"verdict": "pass", "reasoning": c.Users[0]})
				return string(b)
			}
			cache := newCache(t)
			sl := &sleeps{}
			opt := options(srv, provider, sl)
			opt.Timeout = 500 * time.Millisecond // the slow fault times out; the race detector's slowness does not
			opt.Concurrency = 8
			svc := llm.NewService(registry(), cache, opt)
			const n = 200
			reqs := make([]*llm.Request, n)
			for i := range reqs {
				reqs[i] = ask(provider+":judge-1", fmt.Sprintf("question %d", i))
				reqs[i].Schema = verdictSchema
			}
			var wg sync.WaitGroup
			errs := make([]error, n)
			resps := make([]*llm.Response, n)
			for i := range reqs {
				wg.Go(func() { resps[i], errs[i] = svc.Complete(context.Background(), reqs[i]) })
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				var v struct{ Verdict, Reasoning string }
				if resps[i].Invalid || json.Unmarshal(resps[i].JSON, &v) != nil || v.Reasoning != fmt.Sprintf("question %d", i) {
					t.Fatalf("request %d: answer %+v", i, resps[i])
				}
			}
			st := svc.Stats()
			// Faults injected, by request (retries caused by a slow machine
			// are not counted here).
			faulted := len(faultedKeys)
			if faulted < 40 || faulted > 80 {
				t.Fatalf("%d of %d requests were faulted; the test wants about 30%%", faulted, n)
			}
			// Every request answered exactly once in the cache.
			if len(cache.puts) != n {
				t.Fatalf("%d keys written, want %d", len(cache.puts), n)
			}
			for k, c := range cache.puts {
				if c != 1 {
					t.Fatalf("key %.12s written %d times", k, c)
				}
			}
			// Retries are bounded and account for every extra attempt. (An
			// attempt on a connection the server had just dropped may
			// never reach it, so the server can see fewer.)
			calls := srv.Count()
			if st.Attempts > n*3+st.Repairs || calls > st.Attempts || st.Retries+st.Sent+st.Repairs != st.Attempts {
				t.Fatalf("server saw %d calls; stats %+v", calls, st)
			}
			if st.Retries == 0 || st.Repairs == 0 {
				t.Fatalf("the faults did not exercise retries and repairs: %+v", st)
			}
			// Waits honour Retry-After (1 s) for rate limits.
			longest := time.Duration(0)
			for _, d := range sl.d {
				longest = max(longest, d)
			}
			if longest < time.Second {
				t.Fatalf("no wait honoured Retry-After: longest %v", longest)
			}
			// A rerun sends nothing.
			before := srv.Count()
			svc2 := llm.NewService(registry(), cache, opt)
			for i := range reqs {
				r, err := svc2.Complete(context.Background(), reqs[i])
				if err != nil || !r.Cached || string(r.JSON) != string(resps[i].JSON) {
					t.Fatalf("rerun %d: %+v %v", i, r, err)
				}
			}
			if srv.Count() != before {
				t.Fatalf("rerun sent %d requests", srv.Count()-before)
			}
		})
	}
}

func TestGivesUpAfterMaxAttempts(t *testing.T) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	srv.FaultFor = func(*llmtest.Call) llmtest.Fault { return llmtest.Unavailable }
	srv.RetryAfter = "2"
	sl := &sleeps{}
	opt := options(srv, "openai", sl)
	opt.MaxAttempts = 3
	cache := newCache(t)
	svc := llm.NewService(registry(), cache, opt)
	_, err := svc.Complete(context.Background(), ask("openai:m", "hi"))
	var api *llm.APIError
	if err == nil || !strings.Contains(err.Error(), "gave up after 3 attempts") || !errors.As(err, &api) || api.Status != 503 {
		t.Fatalf("error = %v", err)
	}
	if srv.Count() != 3 || len(sl.d) != 2 {
		t.Fatalf("%d calls, %d waits; want 3 and 2", srv.Count(), len(sl.d))
	}
	for _, d := range sl.d {
		if d < 2*time.Second {
			t.Fatalf("wait %v shorter than Retry-After 2 s", d)
		}
	}
	// Errors are never cached: the next call goes out again.
	srv.FaultFor = nil
	if _, err := svc.Complete(context.Background(), ask("openai:m", "hi")); err != nil {
		t.Fatal(err)
	}
	if srv.Count() != 4 {
		t.Fatalf("calls = %d, want 4", srv.Count())
	}
}

func TestBadRequestIsNotRetried(t *testing.T) {
	srv := llmtest.NewAnthropic()
	defer srv.Close()
	srv.FaultFor = func(*llmtest.Call) llmtest.Fault { return llmtest.BadRequest }
	svc := llm.NewService(registry(), newCache(t), options(srv, "anthropic", &sleeps{}))
	_, err := svc.Complete(context.Background(), ask("anthropic:claude-x", "hi"))
	var api *llm.APIError
	if !errors.As(err, &api) || api.Status != 400 || api.Type != "invalid_request_error" || srv.Count() != 1 {
		t.Fatalf("error %v after %d calls", err, srv.Count())
	}
}

func TestIdenticalConcurrentRequestsGoOutOnce(t *testing.T) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	srv.Latency = 100 * time.Millisecond
	svc := llm.NewService(registry(), newCache(t), options(srv, "openai", &sleeps{}))
	want, _ := llm.Key(ask("openai:m", "same"))
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			// Each answer, sent, shared or cached, names the request's key.
			resp, err := svc.Complete(context.Background(), ask("openai:m", "same"))
			if err != nil {
				t.Error(err)
			} else if resp.Key != want {
				t.Errorf("key %q, want %q", resp.Key, want)
			}
		})
	}
	wg.Wait()
	if srv.Count() != 1 {
		t.Fatalf("%d calls for 10 identical concurrent requests", srv.Count())
	}
	if resp, err := svc.Complete(context.Background(), ask("openai:m", "same")); err != nil || !resp.Cached || resp.Key != want {
		t.Fatalf("a cache hit: %+v %v", resp, err)
	}
	// A different sample index is a different request.
	r := ask("openai:m", "same")
	r.Sample = 1
	if _, err := svc.Complete(context.Background(), r); err != nil || srv.Count() != 2 {
		t.Fatalf("sample 1: %v, %d calls", err, srv.Count())
	}
}

func TestSchemaRepair(t *testing.T) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	srv.Answer = func(c *llmtest.Call) string {
		if c.HasAssistant {
			return "```json\n{\"verdict\": \"fail\", \"reasoning\": \"fixed\"}\n```"
		}
		return `{"verdict": "maybe"}`
	}
	cache := newCache(t)
	svc := llm.NewService(registry(), cache, options(srv, "openai", &sleeps{}))
	req := ask("openai:m", "judge this")
	req.Schema = verdictSchema
	resp, err := svc.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Invalid || string(resp.JSON) != `{"verdict":"fail","reasoning":"fixed"}` || resp.Attempts != 2 {
		t.Fatalf("response %+v", resp)
	}
	calls := srv.Calls()
	if len(calls) != 2 || !strings.Contains(calls[1].LastUser, "could not be used") || !strings.Contains(calls[1].LastUser, "/verdict") {
		t.Fatalf("repair request: %+v", calls[len(calls)-1].LastUser)
	}
	// The fake counts a token per word plus one: 3 for the first answer,
	// 7 for the repaired one.
	if resp.Usage.OutputTokens != 3+7 {
		t.Fatalf("usage of both calls not summed: %+v", resp.Usage)
	}

	// Still wrong after the repair: kept as an invalid answer, cached.
	srv.Answer = func(*llmtest.Call) string { return "I cannot decide." }
	req2 := ask("openai:m", "judge that")
	req2.Schema = verdictSchema
	resp, err = svc.Complete(context.Background(), req2)
	if err != nil || !resp.Invalid || resp.JSON != nil || !strings.Contains(resp.ParseError, "no JSON object") {
		t.Fatalf("invalid answer: %+v %v", resp, err)
	}
	n := srv.Count()
	resp, err = svc.Complete(context.Background(), req2)
	if err != nil || !resp.Invalid || !resp.Cached || srv.Count() != n {
		t.Fatalf("the invalid answer was not cached: %+v %v", resp, err)
	}
	if st := svc.Stats(); st.Invalid != 1 || st.Repairs != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestPerCallTimeout(t *testing.T) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	srv.Latency = time.Second
	opt := options(srv, "openai", &sleeps{})
	opt.Timeout = 50 * time.Millisecond
	opt.MaxAttempts = 2
	svc := llm.NewService(registry(), newCache(t), opt)
	_, err := svc.Complete(context.Background(), ask("openai:m", "slow"))
	if err == nil || !strings.Contains(err.Error(), "no answer within 50ms") || !strings.Contains(err.Error(), "gave up after 2") {
		t.Fatalf("error = %v", err)
	}
}

func TestCancelLeavesNothingCached(t *testing.T) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	srv.Latency = 2 * time.Second
	cache := newCache(t)
	svc := llm.NewService(registry(), cache, options(srv, "openai", &sleeps{}))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for srv.Count() == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	_, err := svc.Complete(ctx, ask("openai:m", "cancel me"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v", err)
	}
	if len(cache.puts) != 0 || srv.Count() != 1 {
		t.Fatalf("after cancel: %d writes, %d calls", len(cache.puts), srv.Count())
	}
	st, err := cache.Stats(context.Background())
	if err != nil || st.Entries != 0 || st.Pending != 0 {
		t.Fatalf("cache after cancel: %+v %v", st, err)
	}
}

func TestBudget(t *testing.T) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	opt := options(srv, "openai", &sleeps{})
	opt.Prices = &llm.PriceTable{Models: map[string]llm.Price{"openai:priced*": {Input: 1000, Output: 1000}}}
	// Worst case of a call: (chars/4 + 1 + 100) tokens at $1000 per million:
	// about $0.11; the budget allows a few.
	opt.MaxCost = 0.5
	svc := llm.NewService(registry(), newCache(t), opt)
	sent := 0
	var err error
	for i := range 100 {
		r := ask("openai:priced-1", fmt.Sprint("q", i))
		r.MaxTokens = 100
		if _, err = svc.Complete(context.Background(), r); err != nil {
			break
		}
		sent++
	}
	if !errors.Is(err, llm.ErrBudget) || sent == 0 || sent >= 100 {
		t.Fatalf("after %d calls: %v", sent, err)
	}
	if st := svc.Stats(); st.Cost > opt.MaxCost || st.Cost <= 0 {
		t.Fatalf("spent $%v of a $%v budget", st.Cost, opt.MaxCost)
	}
	// Unpriced models cannot run under a budget.
	_, err = svc.Complete(context.Background(), ask("openai:unknown", "x"))
	if !errors.Is(err, llm.ErrNoPrice) || !strings.Contains(err.Error(), "needs the model's price") {
		t.Fatalf("unpriced under budget: %v", err)
	}
}

func TestRateLimitAndConcurrency(t *testing.T) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	var mu sync.Mutex
	inFlight, peak := 0, 0
	srv.Answer = func(c *llmtest.Call) string {
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
		return "ok"
	}
	opt := options(srv, "openai", &sleeps{})
	opt.Concurrency = 3
	svc := llm.NewService(registry(), newCache(t), opt)
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Go(func() {
			if _, err := svc.Complete(context.Background(), ask("openai:m", fmt.Sprint(i))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if peak > 3 || peak < 2 {
		t.Fatalf("peak concurrency %d with a limit of 3", peak)
	}
}

func TestOfflinePendingAndBatchRoundTrip(t *testing.T) {
	for _, format := range []string{"openai", "anthropic"} {
		t.Run(format, func(t *testing.T) {
			cache := newCache(t)
			reg := registry()
			svc := llm.NewService(reg, cache, llm.Options{Offline: true})
			model := format + ":m-1"
			reqs := []*llm.Request{ask(model, "one"), ask(model, "two"), ask(model, "three")}
			reqs[2].Schema = verdictSchema
			for _, r := range reqs {
				if _, err := svc.Complete(context.Background(), r); !errors.Is(err, llm.ErrPending) {
					t.Fatalf("offline miss: %v", err)
				}
			}
			// The simulated model is local: it answers offline.
			if _, err := svc.Complete(context.Background(), ask("sim", "local")); err != nil {
				t.Fatalf("sim offline: %v", err)
			}
			if st := svc.Stats(); st.Pending != 3 {
				t.Fatalf("stats %+v", st)
			}
			var in strings.Builder
			exp, err := llm.ExportPending(context.Background(), cache, reg, format, &in)
			if err != nil || exp.Exported != 3 {
				t.Fatalf("export: %+v %v", exp, err)
			}
			// Answer all but "two", which fails in the batch.
			failKey, _ := llm.Key(reqs[1])
			var out strings.Builder
			bopt := llmtest.BatchOptions{
				Fail: func(id string) bool { return id == failKey },
				Answer: func(c *llmtest.Call) string {
					if c.HasSchema {
						return `{"verdict":"pass","reasoning":"batch"}`
					}
					return "batch: " + c.LastUser
				},
			}
			if format == "openai" {
				err = llmtest.AnswerOpenAIBatch(strings.NewReader(in.String()), &out, bopt)
			} else {
				err = llmtest.AnswerAnthropicBatch(strings.NewReader(in.String()), &out, bopt)
			}
			if err != nil {
				t.Fatal(err)
			}
			results := out.String() + `{"custom_id":"` + strings.Repeat("0", 64) + `","response":{"status_code":200,"body":{"choices":[{"message":{"content":"x"}}]}},"error":null}` + "\n"
			imp, err := llm.ImportResults(context.Background(), cache, reg, nil, "results.jsonl", readCloser(results))
			if err != nil {
				t.Fatal(err)
			}
			if imp.Imported != 2 || imp.Failed != 1 || imp.Unknown != 1 || imp.Invalid != 0 {
				t.Fatalf("import %+v", imp)
			}
			// Offline again: two answered from the cache, one still pending.
			r0, err := svc.Complete(context.Background(), reqs[0])
			if err != nil || r0.Text != "batch: one" || !r0.Cached || !r0.Batch {
				t.Fatalf("answer 0: %+v %v", r0, err)
			}
			r2, err := svc.Complete(context.Background(), reqs[2])
			if err != nil || string(r2.JSON) != `{"verdict":"pass","reasoning":"batch"}` {
				t.Fatalf("answer 2: %+v %v", r2, err)
			}
			if _, err := svc.Complete(context.Background(), reqs[1]); !errors.Is(err, llm.ErrPending) {
				t.Fatalf("failed request should stay pending: %v", err)
			}
			// Importing the same results again changes nothing.
			imp, err = llm.ImportResults(context.Background(), cache, reg, nil, "results.jsonl", readCloser(results))
			if err != nil || imp.Already != 2 || imp.Imported != 0 {
				t.Fatalf("second import %+v %v", imp, err)
			}
			// A malformed line stops the import before anything is stored.
			bad := out.String() + "{not json\n"
			if _, err := llm.ImportResults(context.Background(), cache, reg, nil, "bad.jsonl", readCloser(bad)); err == nil || !strings.Contains(err.Error(), "bad.jsonl:4") {
				t.Fatalf("malformed line: %v", err)
			}
		})
	}
}

func readCloser(s string) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(s)), nil }
}

func TestNoCacheReadsStillWrites(t *testing.T) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	cache := newCache(t)
	opt := options(srv, "openai", &sleeps{})
	opt.NoCacheReads = true
	svc := llm.NewService(registry(), cache, opt)
	for range 2 {
		if _, err := svc.Complete(context.Background(), ask("openai:m", "x")); err != nil {
			t.Fatal(err)
		}
	}
	if srv.Count() != 2 {
		t.Fatalf("--no-cache made %d calls, want 2", srv.Count())
	}
	svc2 := llm.NewService(registry(), cache, options(srv, "openai", &sleeps{}))
	if r, err := svc2.Complete(context.Background(), ask("openai:m", "x")); err != nil || !r.Cached || srv.Count() != 2 {
		t.Fatalf("the written answer was not used: %+v %v", r, err)
	}
}

func TestDollars(t *testing.T) {
	for v, want := range map[float64]string{0: "$0", 0.0001: "$0.0001", 0.012345: "$0.01235", 0.5: "$0.5", 1: "$1.00", 12.345: "$12.35"} {
		if got := llm.Dollars(v); got != want {
			t.Errorf("Dollars(%v) = %s, want %s", v, got, want)
		}
	}
}

// When the budget runs out, the calls already sent finish and are cached:
// every answer the provider billed is kept, and reruns under the same
// budget send only what was never answered (issue 13, defect 1).
func TestBudgetStopKeepsInFlightAnswers(t *testing.T) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	srv.Latency = 20 * time.Millisecond
	cache := newCache(t)
	var reqs []*llm.Request
	for i := range 60 {
		r := ask("openai:priced-1", fmt.Sprint("question ", i))
		r.MaxTokens = 100
		reqs = append(reqs, r)
	}
	for run := range 4 {
		opt := options(srv, "openai", &sleeps{})
		opt.Prices = &llm.PriceTable{Models: map[string]llm.Price{"openai:priced*": {Input: 1000, Output: 1000}}}
		// About four calls' worst case: with eight workers the budget runs
		// out while calls are in flight.
		opt.MaxCost = 0.45
		svc := llm.NewService(registry(), cache, opt)
		_, err := llm.ForEach(context.Background(), len(reqs), 8, nil, func(ctx context.Context, i int) error {
			_, err := svc.Complete(ctx, reqs[i])
			return err
		})
		if run < 3 && !errors.Is(err, llm.ErrBudget) {
			t.Fatalf("run %d: %v, want the budget to run out", run, err)
		}
		if err != nil && !strings.Contains(err.Error(), "budget $0.45") {
			t.Fatalf("run %d: the budget is not shown: %v", run, err)
		}
		st, err := cache.Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.Entries != srv.Count() {
			t.Fatalf("run %d: the provider answered %d calls, %d are cached: paid answers were lost", run, srv.Count(), st.Entries)
		}
	}
	seen := map[string]int{}
	for _, c := range srv.Calls() {
		seen[c.LastUser]++
		if seen[c.LastUser] > 1 {
			t.Fatalf("%q was sent twice across the reruns", c.LastUser)
		}
	}
	if len(seen) < 8 {
		t.Fatalf("only %d calls over four runs", len(seen))
	}
}

// The call counts add up: every request is a cache hit, sent, shared with
// an identical request in flight, pending, failed or stopped by the
// budget (issue 13, defect 5).
func TestCallCountsAddUp(t *testing.T) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	srv.Latency = 20 * time.Millisecond
	srv.FaultFor = func(c *llmtest.Call) llmtest.Fault {
		if strings.HasPrefix(c.LastUser, "bad") {
			return llmtest.BadRequest
		}
		return llmtest.None
	}
	cache := newCache(t)
	check := func(st llm.RunStats) {
		t.Helper()
		if sum := st.CacheHits + st.Sent + st.Shared + st.Pending + st.Failed + st.Stopped; sum != st.Requests {
			t.Fatalf("%d requests, but %d hits + %d sent + %d shared + %d pending + %d failed + %d stopped = %d",
				st.Requests, st.CacheHits, st.Sent, st.Shared, st.Pending, st.Failed, st.Stopped, sum)
		}
	}
	run := func(opt llm.Options) llm.RunStats {
		svc := llm.NewService(registry(), cache, opt)
		llm.ForEach(context.Background(), 40, 16, nil, func(ctx context.Context, i int) error {
			text := fmt.Sprint("q", i%10) // four identical requests each, at once
			if i%10 == 9 {
				text = "bad request"
			}
			_, err := svc.Complete(ctx, ask("openai:m", text))
			return err
		})
		return svc.Stats()
	}
	first := run(options(srv, "openai", &sleeps{}))
	check(first)
	if first.Shared == 0 || first.Sent == 0 || first.Failed == 0 {
		t.Fatalf("the run did not exercise sharing and failures: %+v", first)
	}
	again := run(options(srv, "openai", &sleeps{}))
	check(again)
	if again.CacheHits == 0 {
		t.Fatalf("rerun: %+v", again)
	}
	off := options(srv, "openai", &sleeps{})
	off.Offline = true
	svc := llm.NewService(registry(), cache, off)
	for i := range 3 {
		svc.Complete(context.Background(), ask("openai:m", fmt.Sprint("new ", i)))
	}
	check(svc.Stats())
	if svc.Stats().Pending != 3 {
		t.Fatalf("offline: %+v", svc.Stats())
	}
}

// A usage report no call can have is not believed: the answer is kept,
// its cost is not booked, and the run says so (issue 13, defect 5).
func TestAbsurdUsageIsNotCosted(t *testing.T) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	srv.FaultFor = func(*llmtest.Call) llmtest.Fault { return llmtest.AbsurdUsage }
	opt := options(srv, "openai", &sleeps{})
	opt.Prices = &llm.PriceTable{Models: map[string]llm.Price{"openai:priced*": {Input: 1, Output: 1}}}
	svc := llm.NewService(registry(), newCache(t), opt)
	resp, err := svc.Complete(context.Background(), ask("openai:priced-1", "hello"))
	if err != nil {
		t.Fatal(err)
	}
	st := svc.Stats()
	if resp.Text == "" || resp.Usage != (llm.Usage{}) || resp.Cost != 0 || st.BadUsage != 1 || st.Cost != 0 {
		t.Fatalf("response %+v, stats %+v", resp, st)
	}
}

// A call that kept failing for reasons that pass is marked transient (the
// command stops resumably); one the server refuses for good is not.
func TestTransientFailuresAreMarked(t *testing.T) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	srv.FaultFor = func(c *llmtest.Call) llmtest.Fault {
		if strings.HasPrefix(c.LastUser, "refuse") {
			return llmtest.BadRequest
		}
		return llmtest.ServerError
	}
	opt := options(srv, "openai", &sleeps{})
	opt.MaxAttempts = 2
	svc := llm.NewService(registry(), nil, opt)
	if _, err := svc.Complete(context.Background(), ask("openai:m", "flaky")); !errors.Is(err, llm.ErrTransient) {
		t.Fatalf("server errors until the attempts ran out: %v", err)
	}
	if _, err := svc.Complete(context.Background(), ask("openai:m", "refuse me")); err == nil || errors.Is(err, llm.ErrTransient) {
		t.Fatalf("a bad request: %v", err)
	}
}

// A hosted provider without a key, or a server that cannot be reached,
// fails on the first call with a message that says what to fix, without
// retrying (issue 13, item 8).
func TestPreflight(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	svc := llm.NewService(registry(), nil, llm.Options{Sleep: (&sleeps{}).sleep})
	_, err := svc.Complete(context.Background(), ask("openai:gpt-4o", "hi"))
	if err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY is not set") || svc.Stats().Attempts != 0 {
		t.Fatalf("no key: %v (%+v)", err, svc.Stats())
	}
	// A port nobody listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	svc = llm.NewService(registry(), nil, llm.Options{Sleep: (&sleeps{}).sleep,
		Providers: map[string]llm.ProviderConfig{"openai": {BaseURL: "http://" + addr + "/v1"}}})
	_, err = svc.Complete(context.Background(), ask("openai:local", "hi"))
	if err == nil || !strings.Contains(err.Error(), "cannot reach http://"+addr) || svc.Stats().Attempts != 0 {
		t.Fatalf("unreachable: %v (%+v)", err, svc.Stats())
	}
	// Retries are reported as they happen.
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	srv.FaultFor = func(c *llmtest.Call) llmtest.Fault {
		if c.N == 1 {
			return llmtest.RateLimited
		}
		return llmtest.None
	}
	var heard []llm.Retry
	opt := options(srv, "openai", &sleeps{})
	opt.OnRetry = func(r llm.Retry) { heard = append(heard, r) }
	svc = llm.NewService(registry(), nil, opt)
	if _, err := svc.Complete(context.Background(), ask("openai:m", "hi")); err != nil {
		t.Fatal(err)
	}
	if len(heard) != 1 || heard[0].Attempt != 1 || heard[0].Wait <= 0 || !strings.Contains(heard[0].Err.Error(), "429") {
		t.Fatalf("retries heard: %+v", heard)
	}
}

// A context-length refusal, as OpenAI and Anthropic word it, is
// ErrInputTooLong: sent once, never retried, and not transient (no rerun
// mends it). Another 400 is not.
func TestContextTooLongIsPermanent(t *testing.T) {
	for _, kind := range []string{"openai", "anthropic"} {
		srv := llmtest.NewOpenAI()
		if kind == "anthropic" {
			srv = llmtest.NewAnthropic()
		}
		srv.FaultFor = func(*llmtest.Call) llmtest.Fault { return llmtest.ContextTooLong }
		svc := llm.NewService(registry(), newCache(t), options(srv, kind, &sleeps{}))
		_, err := svc.Complete(context.Background(), ask(kind+":m", "a very long input"))
		if !errors.Is(err, llm.ErrInputTooLong) || errors.Is(err, llm.ErrTransient) || srv.Count() != 1 {
			t.Errorf("%s: error %v after %d calls; want ErrInputTooLong after one", kind, err, srv.Count())
		}
		srv.FaultFor = func(*llmtest.Call) llmtest.Fault { return llmtest.BadRequest }
		if _, err := svc.Complete(context.Background(), ask(kind+":m", "another input")); errors.Is(err, llm.ErrInputTooLong) {
			t.Errorf("%s: a plain bad request is taken for a context-length refusal", kind)
		}
		srv.Close()
	}
	for _, msg := range []string{"This model's maximum context length is 32768 tokens. However, you requested 40000 tokens", // vLLM
		"the request exceeds the available context size, try increasing it"} { // llama.cpp
		if e := (&llm.APIError{Status: 400, Message: msg}); !errors.Is(e, llm.ErrInputTooLong) {
			t.Errorf("%q is not taken for a context-length refusal", msg)
		}
	}
}

// Prepared requests (issue 29): the cache is read once for all of them,
// and each answer, hit or miss, is the one Complete gives, counted alike.
func TestPreparedRequestsAnswerAsComplete(t *testing.T) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "gavel.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	first := llm.NewService(registry(), db.Cache(), options(srv, "openai", &sleeps{}))
	want := map[string]*llm.Response{}
	for _, q := range []string{"a", "b"} {
		r, err := first.Complete(ctx, ask("openai:m", q))
		if err != nil {
			t.Fatal(err)
		}
		want[q] = r
	}
	svc := llm.NewService(registry(), db.Cache(), options(srv, "openai", &sleeps{}))
	reqs := []*llm.Request{ask("openai:m", "a"), ask("openai:m", "b"), ask("openai:m", "c")}
	ps, err := svc.Prepare(ctx, reqs)
	if err != nil || len(ps) != 3 {
		t.Fatalf("prepare: %v, %d", err, len(ps))
	}
	for i, q := range []string{"a", "b", "c"} {
		key, _ := llm.Key(reqs[i])
		if ps[i].Key != key {
			t.Fatalf("%s: prepared key %.12s, want %.12s", q, ps[i].Key, key)
		}
		r, err := svc.CompletePrepared(ctx, &ps[i])
		if err != nil {
			t.Fatal(err)
		}
		if r.Key != key {
			t.Fatalf("%s: answer's key %.12s", q, r.Key)
		}
		if w := want[q]; w != nil && (!r.Cached || r.Text != w.Text) {
			t.Fatalf("%s: %+v, want the cached %q", q, r, w.Text)
		}
		if q == "c" && r.Cached {
			t.Fatal("c was never asked, yet cached")
		}
	}
	st := svc.Stats()
	if st.Requests != 3 || st.CacheHits != 2 || st.Sent != 1 || srv.Count() != 3 {
		t.Fatalf("stats %+v, %d calls to the server; want 3 requests, 2 hits, 1 sent, 3 calls in all", st, srv.Count())
	}
	// The hits are counted as Complete's are.
	cs, err := db.Cache().Stats(ctx)
	if err != nil || cs.Hits != 2 {
		t.Fatalf("cache stats %+v, %v: want 2 hits", cs, err)
	}
}
