package server_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/llm/llmtest"
	"github.com/gavelhq/gavel/llm/openai"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/server"
	"github.com/gavelhq/gavel/sim"
	"github.com/gavelhq/gavel/store/sqlite"
)

// env is a real server on 127.0.0.1 over a fresh store, with one token of
// each scope.
type env struct {
	t   testing.TB
	db  *sqlite.DB
	svc *llm.Service
	srv *server.Server
	url string
	tok map[string]string
}

func simService(db *sqlite.DB) *llm.Service {
	reg := llm.NewRegistry()
	reg.Register(sim.Info)
	return llm.NewService(reg, db.Cache(), llm.Options{})
}

func start(t testing.TB, cfg server.Config, newService func(*sqlite.DB) *llm.Service) *env {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "gavel.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e := &env{t: t, db: db, svc: newService(db), tok: map[string]string{}}
	cfg.Store, cfg.Client, cfg.Stats = db, e.svc, e.svc.Stats
	if cfg.Model == "" {
		cfg.Model = "sim"
	}
	if cfg.Resamples == 0 {
		cfg.Resamples = 500
	}
	cfg.Seed = 1
	if e.srv, err = server.New(cfg); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.url = "http://" + ln.Addr().String()
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(sctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	for _, scope := range deploy.Scopes {
		secret, _, err := deploy.CreateToken(ctx, db, scope, scope+" test")
		if err != nil {
			t.Fatal(err)
		}
		e.tok[scope] = secret
	}
	return e
}

type answer struct {
	code   int
	header http.Header
	body   map[string]any
	raw    string
}

func (e *env) do(method, path, token, body string) answer {
	e.t.Helper()
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	return e.send(method, path, body, h)
}

// send makes a request with the given headers (and a JSON content type
// when there is a body).
func (e *env) send(method, path, body string, h http.Header) answer {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{code: resp.StatusCode, header: resp.Header, raw: string(b)}
	json.Unmarshal(b, &a.body)
	return a
}

func jsonBody(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func judgeBody(judgeName string, r *record.Record) string {
	return jsonBody(map[string]any{"judge": judgeName, "change_id": r.ID, "group": r.Group,
		"inputs": map[string]any{"task": r.Task, "candidate": r.Candidate, "reference": r.Reference, "context": r.Context}})
}

func simRecords(t testing.TB, opt sim.WorldOptions) []record.Record {
	t.Helper()
	rs, err := sim.Records(opt)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// counts are the rows of every table a request could write.
func (e *env) counts() map[string]int {
	e.t.Helper()
	raw, err := sql.Open("sqlite", e.db.Path())
	if err != nil {
		e.t.Fatal(err)
	}
	defer raw.Close()
	out := map[string]int{}
	for _, table := range []string{"changes", "change_verdicts", "records", "verdicts", "activations", "tokens", "reviews", "llm_cache", "prompt_versions", "record_outcomes", "webhook_deliveries"} {
		var n int
		if err := raw.QueryRow(`SELECT COUNT(*) FROM ` + table).Scan(&n); err != nil {
			e.t.Fatal(err)
		}
		out[table] = n
	}
	return out
}

func (e *env) record(id string) *record.Record {
	e.t.Helper()
	var out *record.Record
	err := e.db.Records(context.Background(), record.Filter{IDs: []string{id}}, func(r *record.Record) error {
		out = r
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// The loop a team runs: judge a change, later report its outcome; the
// change becomes a record with its label, and the verdict is kept.
func TestJudgeThenOutcomeBecomesARecord(t *testing.T) {
	e := start(t, server.Config{Simulated: true}, simService)
	rs := simRecords(t, sim.WorldOptions{N: 40, Seed: 5})
	r := &rs[0]
	first := e.do("POST", "/v1/judge", e.tok[deploy.ScopeJudge], judgeBody("passfail", r))
	if first.code != 200 {
		t.Fatalf("judge: %d %s", first.code, first.raw)
	}
	builtin, _ := judge.Load("passfail")
	if first.body["version"] != builtin.Version() || first.body["judge"] != "passfail" || first.body["model"] != "sim" ||
		first.body["cached"] != false || first.body["simulated"] != true || first.body["change_id"] != r.ID {
		t.Fatalf("first verdict: %s", first.raw)
	}
	verdict := first.body["verdict"]
	if verdict != "pass" && verdict != "fail" || first.body["reasoning"] == "" {
		t.Fatalf("verdict %v, reasoning %v", verdict, first.body["reasoning"])
	}
	sent := e.svc.Stats().Requests
	again := e.do("POST", "/v1/judge", e.tok[deploy.ScopeJudge], judgeBody("passfail", r))
	if again.code != 200 || again.body["cached"] != true || again.body["verdict"] != verdict || e.svc.Stats().Requests != sent {
		t.Fatalf("the same change again: %s (model requests %d -> %d)", again.raw, sent, e.svc.Stats().Requests)
	}
	// The same change id with another candidate is refused.
	other := *r
	other.Candidate += "\n+// one more line\n"
	if a := e.do("POST", "/v1/judge", e.tok[deploy.ScopeJudge], judgeBody("passfail", &other)); a.code != 409 {
		t.Fatalf("changed inputs under one id: %d %s", a.code, a.raw)
	}
	if got := e.record(r.ID); got != nil {
		t.Fatalf("a record before any outcome: %+v", got)
	}
	out := e.do("POST", "/v1/outcomes", e.tok[deploy.ScopeFeedback],
		jsonBody(map[string]any{"change_id": r.ID, "status": "abandoned", "reason": "superseded by #12", "at": "2026-11-30T10:00:00Z"}))
	if out.code != 201 || out.body["label"] != "fail" || out.body["record_id"] != r.ID || out.body["created"] != true {
		t.Fatalf("outcome: %d %s", out.code, out.raw)
	}
	got := e.record(r.ID)
	if got == nil || got.Outcome.Label != record.Fail || got.Outcome.Status != record.StatusAbandoned ||
		got.Outcome.Reason != "superseded by #12" || got.Candidate != r.Candidate || got.Task != r.Task || got.Group != r.Group ||
		!got.Outcome.At.Equal(time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("record: %+v", got)
	}
	// The same outcome again is no change; another is refused.
	if a := e.do("POST", "/v1/outcomes", e.tok[deploy.ScopeFeedback],
		jsonBody(map[string]any{"change_id": r.ID, "status": "abandoned", "reason": "superseded by #12", "at": "2026-11-30T10:00:00Z"})); a.code != 200 || a.body["created"] != false {
		t.Fatalf("same outcome again: %d %s", a.code, a.raw)
	}
	if a := e.do("POST", "/v1/outcomes", e.tok[deploy.ScopeFeedback], jsonBody(map[string]any{"change_id": r.ID, "status": "landed"})); a.code != 409 {
		t.Fatalf("another outcome: %d %s", a.code, a.raw)
	}
	// An outcome without a time, twice: the first time stands.
	r2 := &rs[1]
	if a := e.do("POST", "/v1/judge", e.tok[deploy.ScopeAdmin], judgeBody("passfail", r2)); a.code != 200 {
		t.Fatalf("admin judges: %d %s", a.code, a.raw)
	}
	for i, want := range []int{201, 200} {
		if a := e.do("POST", "/v1/outcomes", e.tok[deploy.ScopeFeedback], jsonBody(map[string]any{"change_id": r2.ID, "status": "passed"})); a.code != want {
			t.Fatalf("timeless outcome %d: %d %s", i, a.code, a.raw)
		}
	}
	if got := e.record(r2.ID); got == nil || got.Outcome.Label != record.Pass || got.Outcome.At.IsZero() {
		t.Fatalf("second record: %+v", got)
	}
	// The judge's listing shows the built-in's first use in its audit trail.
	info := e.do("GET", "/v1/judges/passfail", e.tok[deploy.ScopeReview], "")
	if info.code != 200 || info.body["active"] != builtin.Version() {
		t.Fatalf("judge info: %d %s", info.code, info.raw)
	}
	acts := info.body["activations"].([]any)
	if len(acts) != 1 || acts[0].(map[string]any)["action"] != "initial" {
		t.Fatalf("activations: %v", acts)
	}
	live := info.body["metrics"].(map[string]any)["live"].(map[string]any)
	if live["n"] != 2.0 {
		t.Fatalf("live agreement over %v outcomes, want 2", live["n"])
	}
	list := e.do("GET", "/v1/judges", e.tok[deploy.ScopeJudge], "")
	if list.code != 200 || !strings.Contains(list.raw, `"name": "rubric5"`) {
		t.Fatalf("judges: %d %s", list.code, list.raw)
	}
	if h := e.do("GET", "/v1/health", "", ""); h.code != 200 || h.body["status"] != "ok" {
		t.Fatalf("health: %d %s", h.code, h.raw)
	}
}

// Against a fake OpenAI server speaking the real wire protocol: the
// verdict is the model's answer; a failing provider is a 503 with
// Retry-After, and nothing is stored.
func TestJudgeThroughOpenAIWire(t *testing.T) {
	fake := llmtest.NewOpenAI()
	defer fake.Close()
	fake.RetryAfter = "0"
	fake.Answer = func(c *llmtest.Call) string {
		if strings.Contains(c.LastUser, "os.Exit") {
			return `{"reasoning": "The change calls os.Exit inside a library function.", "verdict": "fail"}`
		}
		return `{"reasoning": "The change does what the task asks.", "verdict": "pass"}`
	}
	e := start(t, server.Config{Model: "openai:judge-model"}, func(db *sqlite.DB) *llm.Service {
		reg := llm.NewRegistry()
		reg.Register(openai.Info)
		return llm.NewService(reg, db.Cache(), llm.Options{MaxAttempts: 2,
			Providers: map[string]llm.ProviderConfig{"openai": {BaseURL: fake.URL + "/v1", APIKey: "test-key"}}})
	})
	body := jsonBody(map[string]any{"judge": "passfail", "change_id": "acme/app#7",
		"inputs": map[string]any{"task": "Stop the worker cleanly.", "candidate": "+\tos.Exit(1)\n"}})
	a := e.do("POST", "/v1/judge", e.tok[deploy.ScopeJudge], body)
	if a.code != 200 || a.body["verdict"] != "fail" || a.body["model"] != "openai:judge-model" ||
		a.body["reasoning"] != "The change calls os.Exit inside a library function." || a.body["simulated"] != nil {
		t.Fatalf("judge: %d %s", a.code, a.raw)
	}
	calls := fake.Calls()
	if len(calls) != 1 || !calls[0].HasSchema || calls[0].Model != "judge-model" || !strings.Contains(calls[0].LastUser, "Stop the worker cleanly.") {
		t.Fatalf("calls: %+v", calls)
	}
	if a := e.do("POST", "/v1/judge", e.tok[deploy.ScopeJudge], body); a.code != 200 || a.body["cached"] != true || fake.Count() != 1 {
		t.Fatalf("again: %d %s after %d calls", a.code, a.raw, fake.Count())
	}
	before := e.counts()
	fake.FaultFor = func(*llmtest.Call) llmtest.Fault { return llmtest.ServerError }
	a = e.do("POST", "/v1/judge", e.tok[deploy.ScopeJudge], jsonBody(map[string]any{"judge": "passfail", "change_id": "acme/app#8",
		"inputs": map[string]any{"task": "t", "candidate": "+x\n"}}))
	if a.code != 503 || a.header.Get("Retry-After") == "" || !strings.Contains(a.raw, "provider") {
		t.Fatalf("failing provider: %d %s %v", a.code, a.raw, a.header)
	}
	after := e.counts()
	delete(before, "llm_cache") // the request is written as pending before it is sent
	delete(after, "llm_cache")
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("a failed judging stored something: %v -> %v", before, after)
	}
}

// Every kind of bad request gets its status and a JSON error naming the
// problem, and leaves the store as it was.
func TestBadRequestsChangeNothing(t *testing.T) {
	e := start(t, server.Config{BodyLimit: 4096, Simulated: true}, simService)
	rs := simRecords(t, sim.WorldOptions{N: 5, Seed: 2})
	judged := &rs[0]
	if a := e.do("POST", "/v1/judge", e.tok[deploy.ScopeJudge], judgeBody("passfail", judged)); a.code != 200 {
		t.Fatalf("setup: %d %s", a.code, a.raw)
	}
	revoked, tok, err := deploy.CreateToken(context.Background(), e.db, deploy.ScopeJudge, "old")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.db.RevokeToken(context.Background(), tok.ID); err != nil {
		t.Fatal(err)
	}
	good := judgeBody("passfail", &rs[1])
	forged := e.tok[deploy.ScopeJudge][:len(e.tok[deploy.ScopeJudge])-4] + "AAAA"
	cases := []struct {
		name, path, token, body string
		code                    int
		want, field             string
	}{
		{"malformed JSON", "/v1/judge", e.tok["judge"], `{"judge": "passfail",`, 400, "malformed JSON", ""},
		{"not JSON at all", "/v1/judge", e.tok["judge"], `judge=passfail`, 400, "malformed JSON", ""},
		{"two values", "/v1/judge", e.tok["judge"], good + good, 400, "more than one JSON value", ""},
		{"unknown field", "/v1/judge", e.tok["judge"], `{"judge": "passfail", "change": "x"}`, 400, `unknown field "change"`, "change"},
		{"unknown nested field", "/v1/judge", e.tok["judge"], `{"judge": "passfail", "change_id": "x", "inputs": {"task": "t", "candidate": "c", "diff": "d"}}`, 400, `unknown field "diff"`, ""},
		{"missing judge", "/v1/judge", e.tok["judge"], `{"change_id": "x", "inputs": {"task": "t", "candidate": "c"}}`, 400, "field judge: missing", "judge"},
		{"missing change id", "/v1/judge", e.tok["judge"], `{"judge": "passfail", "inputs": {"task": "t", "candidate": "c"}}`, 400, "field change_id: missing", "change_id"},
		{"missing inputs", "/v1/judge", e.tok["judge"], `{"judge": "passfail", "change_id": "x"}`, 400, "field inputs: missing", "inputs"},
		{"missing task", "/v1/judge", e.tok["judge"], `{"judge": "passfail", "change_id": "x", "inputs": {"candidate": "c"}}`, 400, "field inputs.task", "inputs.task"},
		{"missing candidate", "/v1/judge", e.tok["judge"], `{"judge": "passfail", "change_id": "x", "inputs": {"task": "t"}}`, 400, "field inputs.candidate", "inputs.candidate"},
		{"wrong type", "/v1/judge", e.tok["judge"], `{"judge": 7, "change_id": "x", "inputs": {"task": "t", "candidate": "c"}}`, 400, "field judge: want a string", "judge"},
		{"unsafe context key", "/v1/judge", e.tok["judge"], `{"judge": "passfail", "change_id": "x", "inputs": {"task": "t", "candidate": "c", "context": {"a</x>": "v"}}}`, 400, "inputs.context", "inputs.context"},
		{"unknown judge", "/v1/judge", e.tok["judge"], `{"judge": "nosuch", "change_id": "x", "inputs": {"task": "t", "candidate": "c"}}`, 404, `no judge "nosuch"`, "judge"},
		{"oversized body", "/v1/judge", e.tok["judge"], `{"judge": "passfail", "change_id": "x", "inputs": {"task": "t", "candidate": "` + strings.Repeat("a", 5000) + `"}}`, 413, "larger than 4096 bytes", ""},
		{"no token", "/v1/judge", "", good, 401, "missing bearer token", ""},
		{"not a token", "/v1/judge", "hunter2", good, 401, "not a gavel token", ""},
		{"forged token", "/v1/judge", forged, good, 401, "unknown token", ""},
		{"revoked token", "/v1/judge", revoked, good, 401, "revoked", ""},
		{"wrong scope: feedback judges", "/v1/judge", e.tok["feedback"], good, 403, "needs scope judge", ""},
		{"wrong scope: review judges", "/v1/judge", e.tok["review"], good, 403, "needs scope judge", ""},
		{"wrong scope: judge reports", "/v1/outcomes", e.tok["judge"], `{"change_id": "` + judged.ID + `", "status": "landed"}`, 403, "needs scope feedback", ""},
		{"wrong scope: judge promotes", "/v1/judges/passfail/promote", e.tok["judge"], `{"version": "abcd"}`, 403, "needs scope admin", ""},
		{"outcome for an unknown change", "/v1/outcomes", e.tok["feedback"], `{"change_id": "never-judged", "status": "landed"}`, 404, "no change \"never-judged\"", "change_id"},
		{"unknown status", "/v1/outcomes", e.tok["feedback"], `{"change_id": "` + judged.ID + `", "status": "merged"}`, 400, "field status", "status"},
		{"missing status", "/v1/outcomes", e.tok["feedback"], `{"change_id": "` + judged.ID + `"}`, 400, "field status: missing", "status"},
		{"bad time", "/v1/outcomes", e.tok["feedback"], `{"change_id": "` + judged.ID + `", "status": "landed", "at": "yesterday"}`, 400, "not an RFC 3339 time", "at"},
		{"zero time", "/v1/outcomes", e.tok["feedback"], `{"change_id": "` + judged.ID + `", "status": "landed", "at": "0001-01-01T00:00:00Z"}`, 400, "before 2000", "at"},
		{"time ahead", "/v1/outcomes", e.tok["feedback"], `{"change_id": "` + judged.ID + `", "status": "landed", "at": "2999-01-01T00:00:00Z"}`, 400, "more than a day ahead", "at"},
		{"NUL in a reason", "/v1/outcomes", e.tok["feedback"], `{"change_id": "` + judged.ID + `", "status": "abandoned", "reason": "a\u0000b"}`, 400, "NUL byte", "reason"},
		{"NUL in a change id", "/v1/judge", e.tok["judge"], `{"judge": "passfail", "change_id": "c\u0000", "inputs": {"task": "t", "candidate": "c"}}`, 400, "field change_id: holds a NUL byte", "change_id"},
		{"NUL in a group", "/v1/judge", e.tok["judge"], `{"judge": "passfail", "change_id": "x", "group": "g\u0000", "inputs": {"task": "t", "candidate": "c"}}`, 400, "field group: holds a NUL byte", "group"},
		{"NUL in a candidate", "/v1/judge", e.tok["judge"], `{"judge": "passfail", "change_id": "x", "inputs": {"task": "t", "candidate": "c\u0000"}}`, 400, "field inputs.candidate", "inputs.candidate"},
		{"invalid UTF-8 in a task", "/v1/judge", e.tok["judge"], "{\"judge\": \"passfail\", \"change_id\": \"x\", \"inputs\": {\"task\": \"t\xff\", \"candidate\": \"c\"}}", 400, "field inputs.task: is not valid UTF-8", "inputs.task"},
		{"unknown endpoint", "/v1/judgment", e.tok["judge"], good, 404, "no endpoint", ""},
	}
	before := e.counts()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := e.do("POST", c.path, c.token, c.body)
			if a.code != c.code {
				t.Fatalf("status %d, want %d: %s", a.code, c.code, a.raw)
			}
			msg, _ := a.body["error"].(string)
			if msg == "" || !strings.Contains(msg, c.want) {
				t.Fatalf("error %q, want it to say %q", a.raw, c.want)
			}
			if c.field != "" && a.body["field"] != c.field {
				t.Fatalf("field %v, want %q", a.body["field"], c.field)
			}
			if a.header.Get("Content-Type") != "application/json" {
				t.Fatalf("content type %q", a.header.Get("Content-Type"))
			}
			if c.code == 401 && a.header.Get("WWW-Authenticate") == "" {
				t.Fatal("401 without WWW-Authenticate")
			}
		})
	}
	if after := e.counts(); fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("rejected requests changed the store: %v -> %v", before, after)
	}
}

func TestRateLimitPerToken(t *testing.T) {
	e := start(t, server.Config{Rate: 0.5, Burst: 2, Simulated: true}, simService)
	var codes []int
	var limited answer
	for range 3 {
		a := e.do("GET", "/v1/judges", e.tok[deploy.ScopeJudge], "")
		codes = append(codes, a.code)
		if a.code == 429 {
			limited = a
		}
	}
	if fmt.Sprint(codes) != "[200 200 429]" {
		t.Fatalf("codes %v", codes)
	}
	if ra := limited.header.Get("Retry-After"); ra != "2" || !strings.Contains(limited.body["error"].(string), "rate limit") {
		t.Fatalf("429: Retry-After %q, %s", ra, limited.raw)
	}
	// Another token has its own budget.
	if a := e.do("GET", "/v1/judges", e.tok[deploy.ScopeFeedback], ""); a.code != 200 {
		t.Fatalf("another token: %d", a.code)
	}
}

func TestMetrics(t *testing.T) {
	e := start(t, server.Config{Simulated: true}, simService)
	rs := simRecords(t, sim.WorldOptions{N: 3, Seed: 9})
	for range 2 {
		e.do("POST", "/v1/judge", e.tok[deploy.ScopeJudge], judgeBody("passfail", &rs[0]))
	}
	e.do("POST", "/v1/judge", "", judgeBody("passfail", &rs[0]))
	resp, err := http.Get(e.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(b)
	for _, want := range []string{
		`gavel_http_requests_total{code="200",route="POST /v1/judge"} 2`,
		`gavel_http_requests_total{code="401",route="POST /v1/judge"} 1`,
		`gavel_http_request_duration_seconds_bucket{route="POST /v1/judge",le="+Inf"} 3`,
		`gavel_errors_total{class="client",route="POST /v1/judge"} 1`,
		`gavel_model_requests_total 1`,
		`gavel_model_calls_total 1`,
		`gavel_verdicts_total{cached="true",judge="passfail",verdict=`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
}

var _ = bytes.NewReader
var _ = errors.New

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// GET /v1/agreement on a hand-worked case: four reviewed changes whose
// outcomes are pass, pass, fail, fail and whose reviewers said pass,
// fail, fail, fail. Observed agreement 3/4; pooled shares pass 3/8,
// fail 5/8, so chance agreement 9/64 + 25/64 = 34/64, and Scott's pi
// (48/64 - 34/64) / (30/64) = 7/15.
func TestAgreementEndpoint(t *testing.T) {
	e := start(t, server.Config{Simulated: true}, simService)
	ctx := context.Background()
	rs := simRecords(t, sim.WorldOptions{N: 4, Seed: 1})
	statuses := []string{"landed", "passed", "abandoned", "failed"}
	humans := []record.Label{record.Pass, record.Fail, record.Fail, record.Fail}
	for i := range rs {
		if a := e.do("POST", "/v1/judge", e.tok[deploy.ScopeJudge], judgeBody("passfail", &rs[i])); a.code != 200 {
			t.Fatal(a.raw)
		}
		if a := e.do("POST", "/v1/outcomes", e.tok[deploy.ScopeFeedback], jsonBody(map[string]any{"change_id": rs[i].ID, "status": statuses[i]})); a.code != 201 {
			t.Fatal(a.raw)
		}
		if err := e.db.SaveReview(ctx, &deploy.Review{ChangeID: rs[i].ID, Reviewer: "ann", Verdict: humans[i]}); err != nil {
			t.Fatal(err)
		}
	}
	// A second reviewer disagreeing on one change makes it a tie: left out.
	if err := e.db.SaveReview(ctx, &deploy.Review{ChangeID: rs[3].ID, Reviewer: "bob", Verdict: record.Pass}); err != nil {
		t.Fatal(err)
	}
	a := e.do("GET", "/v1/agreement?judge=passfail", e.tok[deploy.ScopeReview], "")
	if a.code != 200 || a.body["reviewed_changes"] != 4.0 || a.body["ties"] != 1.0 || a.body["reviews"] != 5.0 {
		t.Fatalf("agreement: %d %s", a.code, a.raw)
	}
	pair := a.body["pairs"].([]any)[0].(map[string]any)
	if fmt.Sprint(pair["raters"]) != "[human outcome]" || pair["n"] != 3.0 {
		t.Fatalf("first pair: %v", pair)
	}
	// Without the tie: outcomes pass, pass, fail; humans pass, fail,
	// fail. Po 2/3; pass share 3/6, so Pe 1/2, and pi (2/3 - 1/2) / (1/2) = 1/3.
	if pi := pair["scott_pi"].(map[string]any)["value"].(float64); abs(pi-1.0/3) > 1e-12 {
		t.Fatalf("human vs outcome pi %v, want 1/3", pi)
	}
	if err := e.db.SaveReview(ctx, &deploy.Review{ChangeID: rs[3].ID, Reviewer: "bob", Verdict: record.Fail}); err != nil {
		t.Fatal(err)
	}
	a = e.do("GET", "/v1/agreement?judge=passfail", e.tok[deploy.ScopeReview], "")
	pair = a.body["pairs"].([]any)[0].(map[string]any)
	if pi := pair["scott_pi"].(map[string]any)["value"].(float64); pair["n"] != 4.0 || abs(pi-7.0/15) > 1e-12 {
		t.Fatalf("human vs outcome over four: n %v, pi %v, want 7/15", pair["n"], pi)
	}
	if a := e.do("GET", "/v1/agreement", e.tok[deploy.ScopeReview], ""); a.code != 400 || a.body["field"] != "judge" {
		t.Fatalf("without a judge: %d %s", a.code, a.raw)
	}
}

// Four identical outcomes at once: exactly one is created, the others
// are the same outcome again.
func TestConcurrentIdenticalOutcomes(t *testing.T) {
	e := start(t, server.Config{Simulated: true, Rate: -1}, simService)
	rs := simRecords(t, sim.WorldOptions{N: 3, Seed: 2})
	for round := range 3 {
		r := &rs[round]
		if a := e.do("POST", "/v1/judge", e.tok[deploy.ScopeJudge], judgeBody("passfail", r)); a.code != 200 {
			t.Fatalf("judge: %d %s", a.code, a.raw)
		}
		body := `{"change_id": "` + r.ID + `", "status": "landed"}`
		if round == 2 {
			body = `{"change_id": "` + r.ID + `", "status": "landed", "at": "2026-11-30T10:00:00Z"}`
		}
		codes := make(chan int, 4)
		created := make(chan bool, 4)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				a := e.do("POST", "/v1/outcomes", e.tok[deploy.ScopeFeedback], body)
				codes <- a.code
				c, _ := a.body["created"].(bool)
				created <- c
			})
		}
		wg.Wait()
		close(codes)
		close(created)
		n := 0
		for c := range created {
			if c {
				n++
			}
		}
		for c := range codes {
			if c != 200 && c != 201 {
				t.Fatalf("round %d: status %d", round, c)
			}
		}
		if n != 1 {
			t.Fatalf("round %d: %d of 4 identical outcomes answered created", round, n)
		}
	}
}

// A token may have so many requests in flight: the next gets 429 with
// Retry-After, while another token and the health check go on; and the
// client retries a 429 when told when.
func TestTokenConcurrency(t *testing.T) {
	e := start(t, server.Config{Simulated: true, Rate: -1, TokenConcurrency: 1}, simService)
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", e.url+"/v1/judge", pr)
	req.Header.Set("Authorization", "Bearer "+e.tok[deploy.ScopeJudge])
	held := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			held <- 0
			return
		}
		resp.Body.Close()
		held <- resp.StatusCode
	}()
	pw.Write([]byte(`{"judge": "passfail",`))
	body := `{"judge": "passfail", "change_id": "c-2", "inputs": {"task": "t", "candidate": "c"}}`
	var busy answer
	for range 200 {
		if busy = e.do("POST", "/v1/judge", e.tok[deploy.ScopeJudge], body); busy.code == http.StatusTooManyRequests {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if busy.code != http.StatusTooManyRequests || !strings.Contains(busy.raw, "in flight") || busy.header.Get("Retry-After") == "" {
		t.Fatalf("a second request of the token: %d %s", busy.code, busy.raw)
	}
	if a := e.do("POST", "/v1/judge", e.tok[deploy.ScopeAdmin], body); a.code != 200 {
		t.Fatalf("another token: %d %s", a.code, a.raw)
	}
	if a := e.do("GET", "/v1/health", "", ""); a.code != 200 {
		t.Fatalf("health: %d %s", a.code, a.raw)
	}
	// The client waits as told and gets its answer once the slot is free.
	done := make(chan error, 1)
	go func() {
		c := &server.Client{BaseURL: e.url, Token: e.tok[deploy.ScopeJudge]}
		_, err := c.Judge(context.Background(), &server.JudgeRequest{Judge: "passfail", ChangeID: "c-3", Inputs: &server.JudgeInputs{Task: "t", Candidate: "c"}})
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	pw.Write([]byte(` "change_id": "c-1", "inputs": {"task": "t", "candidate": "c"}}`))
	pw.Close()
	if code := <-held; code != 200 {
		t.Fatalf("the held request: %d", code)
	}
	if err := <-done; err != nil {
		t.Fatalf("the client's retried request: %v", err)
	}
}

// A judge's live agreement is computed once per change of its data: the
// same figure while nothing changes, a new one after an outcome arrives.
func TestLiveAgreementIsCached(t *testing.T) {
	e := start(t, server.Config{Simulated: true, Rate: -1}, simService)
	rs := simRecords(t, sim.WorldOptions{N: 8, Seed: 5})
	for i := range rs[:7] {
		if a := e.do("POST", "/v1/judge", e.tok[deploy.ScopeJudge], judgeBody("passfail", &rs[i])); a.code != 200 {
			t.Fatalf("judge: %s", a.raw)
		}
		if i < 6 {
			if a := e.do("POST", "/v1/outcomes", e.tok[deploy.ScopeFeedback], jsonBody(map[string]any{"change_id": rs[i].ID, "status": rs[i].Outcome.Status})); a.code != 201 {
				t.Fatalf("outcome: %s", a.raw)
			}
		}
	}
	ctx := context.Background()
	active, err := deploy.Active(ctx, e.db, "passfail")
	if err != nil || active == nil {
		t.Fatal(err)
	}
	var c deploy.LiveCache
	boot := metrics.BootstrapOptions{Resamples: 200, Seed: 1}
	first, err := c.Agreement(ctx, e.db, "passfail", active.Version, "sim", boot)
	if err != nil || first == nil || first.N != 6 {
		t.Fatalf("first: %+v %v", first, err)
	}
	if again, _ := c.Agreement(ctx, e.db, "passfail", active.Version, "sim", boot); again != first {
		t.Fatal("nothing changed, yet the agreement was computed again")
	}
	uncached, _ := deploy.LiveAgreement(ctx, e.db, "passfail", active.Version, "sim", boot)
	if fmt.Sprint(*uncached) != fmt.Sprint(*first) {
		t.Fatalf("cached %+v, computed %+v", *first, *uncached)
	}
	if a := e.do("POST", "/v1/outcomes", e.tok[deploy.ScopeFeedback], jsonBody(map[string]any{"change_id": rs[6].ID, "status": rs[6].Outcome.Status})); a.code != 201 {
		t.Fatalf("outcome: %s", a.raw)
	}
	if after, _ := c.Agreement(ctx, e.db, "passfail", active.Version, "sim", boot); after == first || after.N != 7 {
		t.Fatalf("after a new outcome: %+v", after)
	}
	// The drift report likewise, and it is the report computed afresh.
	d1, err := c.Drift(ctx, e.db, "passfail", "sim", "week", boot)
	if err != nil || d1.Overall == nil || d1.Overall.N != 7 {
		t.Fatalf("drift: %+v %v", d1, err)
	}
	if d2, _ := c.Drift(ctx, e.db, "passfail", "sim", "week", boot); d2 != d1 {
		t.Fatal("nothing changed, yet the drift report was computed again")
	}
	fresh, _ := deploy.Drift(ctx, e.db, "passfail", "sim", "week", boot)
	if a, b := fmt.Sprint(*fresh.Overall, fresh.Windows, fresh.Status), fmt.Sprint(*d1.Overall, d1.Windows, d1.Status); a != b {
		t.Fatalf("cached %s, computed %s", b, a)
	}
	if m, _ := c.Drift(ctx, e.db, "passfail", "sim", "month", boot); m == d1 || m.By != "month" {
		t.Fatalf("by month answered from the weekly report: %+v", m)
	}
	if a := e.do("POST", "/v1/judge", e.tok[deploy.ScopeJudge], judgeBody("passfail", &rs[7])); a.code != 200 {
		t.Fatalf("judge: %s", a.raw)
	}
	if d3, _ := c.Drift(ctx, e.db, "passfail", "sim", "week", boot); d3 != d1 {
		t.Fatal("a verdict without an outcome changed the drift report")
	}
	if a := e.do("POST", "/v1/outcomes", e.tok[deploy.ScopeFeedback], jsonBody(map[string]any{"change_id": rs[7].ID, "status": rs[7].Outcome.Status})); a.code != 201 {
		t.Fatalf("outcome: %s", a.raw)
	}
	if d4, _ := c.Drift(ctx, e.db, "passfail", "sim", "week", boot); d4 == d1 || d4.Overall.N != 8 {
		t.Fatalf("after a new outcome: %+v", d4)
	}
}

// With a metrics token, /metrics answers only to it.
func TestMetricsToken(t *testing.T) {
	e := start(t, server.Config{Simulated: true, Rate: -1, MetricsToken: "m3trics"}, simService)
	if a := e.do("GET", "/metrics", "", ""); a.code != http.StatusUnauthorized || a.header.Get("WWW-Authenticate") == "" {
		t.Fatalf("no token: %d %s", a.code, a.raw)
	}
	if a := e.do("GET", "/metrics", e.tok[deploy.ScopeAdmin], ""); a.code != http.StatusUnauthorized {
		t.Fatalf("an API token: %d", a.code)
	}
	if a := e.do("GET", "/metrics", "m3trics", ""); a.code != 200 || !strings.Contains(a.raw, "gavel_") {
		t.Fatalf("the metrics token: %d %.200s", a.code, a.raw)
	}
}
