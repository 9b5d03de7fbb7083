package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"os"
	"os/exec"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/llm/llmtest"
	"github.com/gavelhq/gavel/llm/openai"
)

func testCache(t *testing.T) {
	ctx := context.Background()
	c := MustOpenDB(t).Cache()
	req := &llm.Request{Model: "openai:gpt-4o", Messages: []llm.Message{{Role: llm.User, Content: "hi"}}}
	if e, err := c.Get(ctx, "k1"); e != nil || err != nil {
		t.Fatalf("empty cache: %v %v", e, err)
	}
	if err := c.AddPending(ctx, &llm.Entry{Key: "k1", Provider: "openai", Model: req.Model, Request: req}); err != nil {
		t.Fatal(err)
	}
	e, err := c.Get(ctx, "k1")
	if err != nil || e == nil || e.Response != nil || e.Request.Messages[0].Content != "hi" {
		t.Fatalf("pending entry: %+v %v", e, err)
	}
	rr := c.(llm.ResponseReader)
	for _, key := range []string{"k1", "missing"} {
		if r, err := rr.ReadResponse(ctx, key); r != nil || err != nil {
			t.Fatalf("the answer to %s, pending or missing: %+v %v", key, r, err)
		}
	}
	var pending []string
	c.Pending(ctx, func(e *llm.Entry) error { pending = append(pending, e.Key); return nil })
	if len(pending) != 1 {
		t.Fatalf("pending %v", pending)
	}
	resp := &llm.Response{Text: "hello", Usage: llm.Usage{InputTokens: 1000, OutputTokens: 500}, Cost: 0.25, Priced: true, Attempts: 2}
	if err := c.Put(ctx, &llm.Entry{Key: "k1", Provider: "openai", Model: req.Model, Request: req, Response: resp}); err != nil {
		t.Fatal(err)
	}
	e, err = c.Get(ctx, "k1")
	if err != nil || e.Response == nil || e.Response.Text != "hello" || e.Response.Attempts != 2 {
		t.Fatalf("answered entry: %+v %v", e, err)
	}
	if r, err := rr.ReadResponse(ctx, "k1"); err != nil || r == nil || !reflect.DeepEqual(r, e.Response) {
		t.Fatalf("the answer read alone: %+v %v, want %+v", r, err, e.Response)
	}
	pending = nil
	c.Pending(ctx, func(e *llm.Entry) error { pending = append(pending, e.Key); return nil })
	if len(pending) != 0 {
		t.Fatalf("answered request still pending: %v", pending)
	}
	for range 3 {
		if err := c.RecordHit(ctx, "k1"); err != nil {
			t.Fatal(err)
		}
	}
	c.AddPending(ctx, &llm.Entry{Key: "k2", Provider: "anthropic", Model: "anthropic:claude", Request: req})
	s, err := c.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Three hits on a $0.25 answer saved $0.75.
	if s.Entries != 1 || s.Pending != 1 || s.Hits != 3 || s.InputTokens != 1000 || s.OutputTokens != 500 ||
		math.Abs(s.Cost-0.25) > 1e-12 || math.Abs(s.SavedCost-0.75) > 1e-12 || len(s.ByModel) != 2 {
		t.Fatalf("stats %+v", s)
	}
	// A pending request added again after its answer does not erase it.
	c.AddPending(ctx, &llm.Entry{Key: "k1", Provider: "openai", Model: req.Model, Request: req})
	if e, _ := c.Get(ctx, "k1"); e.Response == nil {
		t.Fatal("the answer was lost")
	}
}

// A cache hit is a read: its count waits in memory, and reaches the
// store before the counts are read (Stats) and when the store closes, so a
// second process sees every hit of the first once it has closed.
func testCacheHitsAreReads(t *testing.T) {
	ctx := context.Background()
	dsn := freshStore(t)
	db, err := openStore(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	req := &llm.Request{Model: "openai:m", Messages: []llm.Message{{Role: llm.User, Content: "hi"}}}
	for _, k := range []string{"a", "b"} {
		if err := db.Cache().Put(ctx, &llm.Entry{Key: k, Provider: "openai", Model: req.Model, Request: req, Response: &llm.Response{Text: k}}); err != nil {
			t.Fatal(err)
		}
	}
	stored := func(conn *sql.DB) (n int64) {
		if err := conn.QueryRowContext(ctx, `SELECT COALESCE(SUM(c.hits + COALESCE(h.hits, 0)), 0) FROM llm_cache c LEFT JOIN llm_hits h ON h.key = c.key`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i := range 5 {
		if err := db.Cache().RecordHit(ctx, []string{"a", "b"}[i%2]); err != nil {
			t.Fatal(err)
		}
	}
	if n := stored(db.SQL()); n != 0 {
		t.Fatalf("%d hits written on the read path", n)
	}
	if err := db.Cache().RecordHit(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	other, err := openStore(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if n := stored(other.SQL()); n != 6 {
		t.Fatalf("after close, %d hits stored, want 6", n)
	}
	other.Cache().RecordHit(ctx, "b")
	s, err := other.Cache().Stats(ctx)
	if err != nil || s.Hits != 7 {
		t.Fatalf("stats: %+v %v", s, err)
	}
}

// Claims on requests: one owner at a time, renewable by its owner, taken
// over once expired, released only by its owner.
func testClaims(t *testing.T) {
	ctx := context.Background()
	cl := MustOpenDB(t).Cache().(llm.Claimer)
	later := time.Now().Add(time.Minute)
	for _, c := range []struct {
		owner string
		until time.Time
		want  bool
	}{
		{"a", later, true},
		{"b", later, false},
		{"a", later.Add(time.Second), true}, // renewal
		{"b", later, false},
	} {
		if got, err := cl.Claim(ctx, "k", c.owner, c.until); err != nil || got != c.want {
			t.Fatalf("claim by %s: %v %v, want %v", c.owner, got, err, c.want)
		}
	}
	if err := cl.Release(ctx, "k", "b"); err != nil {
		t.Fatal(err)
	}
	if got, _ := cl.Claim(ctx, "k", "b", later); got {
		t.Fatal("b released a's claim")
	}
	// a's claim lapses (it renews with a time already past): b takes it.
	if got, _ := cl.Claim(ctx, "k", "a", time.Now().Add(-time.Second)); !got {
		t.Fatal("a could not renew")
	}
	if got, _ := cl.Claim(ctx, "k", "b", later); !got {
		t.Fatal("b could not take an expired claim")
	}
	if err := cl.Release(ctx, "k", "b"); err != nil {
		t.Fatal(err)
	}
	if got, _ := cl.Claim(ctx, "k", "a", later); !got {
		t.Fatal("a could not claim a released key")
	}
}

// A claim held by a process of this machine that has died (a killed
// run) is dropped at once: the request is sent without waiting for the
// claim to expire. One held by a running process is waited for.
func testClaimsOfDeadProcesses(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	fake := llmtest.NewOpenAI()
	defer fake.Close()
	reg := llm.NewRegistry()
	reg.Register(openai.Info)
	svc := llm.NewService(reg, db.Cache(), llm.Options{
		Providers: map[string]llm.ProviderConfig{"openai": {BaseURL: fake.URL + "/v1", APIKey: "k"}}})
	host, _ := os.Hostname()
	cl := db.Cache().(llm.Claimer)
	hold := func(req *llm.Request, pid int) {
		key, err := llm.Key(req)
		if err != nil {
			t.Fatal(err)
		}
		owner := fmt.Sprintf("%s/%d/test", host, pid)
		if ok, err := cl.Claim(ctx, key, owner, time.Now().Add(time.Hour)); !ok || err != nil {
			t.Fatalf("claim: %v %v", ok, err)
		}
		if got, err := db.Cache().(llm.ClaimHolder).Holder(ctx, key); got != owner || err != nil {
			t.Fatalf("holder %q %v", got, err)
		}
	}
	// A process that ran and ended.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := &llm.Request{Model: "openai:m", Messages: []llm.Message{{Role: llm.User, Content: "dead owner"}}}
	hold(dead, gone.Process.Pid)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second) // the claim would hold for an hour
	defer cancel()
	if _, err := svc.Complete(cctx, dead); err != nil || fake.Count() != 1 {
		t.Fatalf("a dead process's claim was not dropped: %v, %d calls", err, fake.Count())
	}
	// A process that runs.
	alive := exec.Command("sleep", "30")
	if err := alive.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { alive.Process.Kill(); alive.Wait() }()
	live := &llm.Request{Model: "openai:m", Messages: []llm.Message{{Role: llm.User, Content: "live owner"}}}
	hold(live, alive.Process.Pid)
	sctx, cancel2 := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel2()
	if _, err := svc.Complete(sctx, live); err == nil || fake.Count() != 1 {
		t.Fatalf("a running process's claim was taken: %v, %d calls", err, fake.Count())
	}
}

// Two model services sharing one store, as two gavel processes on one
// database do, asked the same requests at the same time: each distinct
// request reaches the provider once, and both get its answer.
func testSharedRequestsSentOnce(t *testing.T) {
	ctx := context.Background()
	fake := llmtest.NewOpenAI()
	defer fake.Close()
	fake.Latency = 150 * time.Millisecond
	dsn := freshStore(t)
	var services []*llm.Service
	for range 2 {
		db, err := openStore(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		reg := llm.NewRegistry()
		reg.Register(openai.Info)
		services = append(services, llm.NewService(reg, db.Cache(), llm.Options{
			Providers: map[string]llm.ProviderConfig{"openai": {BaseURL: fake.URL + "/v1", APIKey: "k"}}}))
	}
	const distinct = 12
	answers := make([][]string, 2)
	var wg sync.WaitGroup
	for i, svc := range services {
		answers[i] = make([]string, distinct)
		for j := range distinct {
			wg.Go(func() {
				resp, err := svc.Complete(ctx, &llm.Request{Model: "openai:m",
					Messages: []llm.Message{{Role: llm.User, Content: fmt.Sprintf("question %d", j)}}})
				if err != nil {
					t.Error(err)
					return
				}
				answers[i][j] = resp.Text
			})
		}
	}
	wg.Wait()
	if fake.Count() != distinct {
		t.Fatalf("%d calls to the provider for %d distinct requests", fake.Count(), distinct)
	}
	for j := range distinct {
		if answers[0][j] != fmt.Sprintf("echo: question %d", j) || answers[1][j] != answers[0][j] {
			t.Fatalf("request %d: %q and %q", j, answers[0][j], answers[1][j])
		}
	}
	st := services[0].Stats().Add(services[1].Stats())
	if st.Sent != distinct || st.Shared+st.CacheHits != distinct {
		t.Fatalf("stats %+v", st)
	}
}

// A miss's answer is stored and its claim dropped in one write (issue
// 29): after the call the answer is there and no claim is left; the write
// drops only its own owner's claim, never another's.
func testAnswerReleasesItsClaim(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	fake := llmtest.NewOpenAI()
	defer fake.Close()
	reg := llm.NewRegistry()
	reg.Register(openai.Info)
	svc := llm.NewService(reg, db.Cache(), llm.Options{
		Providers: map[string]llm.ProviderConfig{"openai": {BaseURL: fake.URL + "/v1", APIKey: "k"}}})
	claims := func() (n int) {
		if err := db.SQL().QueryRowContext(ctx, `SELECT COUNT(*) FROM llm_claims`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	req := &llm.Request{Model: "openai:m", Messages: []llm.Message{{Role: llm.User, Content: "one write"}}}
	if _, err := svc.Complete(ctx, req); err != nil {
		t.Fatal(err)
	}
	key, _ := llm.Key(req)
	if e, err := db.Cache().Get(ctx, key); err != nil || e == nil || e.Response == nil {
		t.Fatalf("the answer was not stored: %+v %v", e, err)
	}
	if n := claims(); n != 0 {
		t.Fatalf("%d claims left after the answer", n)
	}
	ar := db.Cache().(llm.AnswerReleaser)
	cl := db.Cache().(llm.Claimer)
	if ok, err := cl.Claim(ctx, "other", "someone", time.Now().Add(time.Hour)); !ok || err != nil {
		t.Fatal(ok, err)
	}
	e := &llm.Entry{Key: "other", Provider: "openai", Model: "openai:m", Request: req, Response: &llm.Response{Text: "x"}}
	if err := ar.PutReleasing(ctx, e, "not-someone"); err != nil {
		t.Fatal(err)
	}
	if owner, _ := db.Cache().(llm.ClaimHolder).Holder(ctx, "other"); owner != "someone" {
		t.Fatalf("another owner's claim was dropped (holder %q)", owner)
	}
	if err := ar.PutReleasing(ctx, e, "someone"); err != nil || claims() != 0 {
		t.Fatalf("the owner's claim was kept: %v, %d claims", err, claims())
	}
}

// Clear removes the entries that meet every condition given, with their
// hit counts, in one transaction; a dry run counts the same and removes
// nothing; an answer whose text only mentions "invalid":true is readable
// and stays.
func testCacheClear(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	c := db.Cache()
	req := &llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "hi"}}}
	old := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	put := func(key, model string, resp *llm.Response, at time.Time) {
		t.Helper()
		db.Now = func() time.Time { return at }
		e := &llm.Entry{Key: key, Provider: "openai", Model: model, Request: req, Response: resp}
		var err error
		if resp == nil {
			err = c.AddPending(ctx, e)
		} else {
			err = c.Put(ctx, e)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	bad := &llm.Response{Text: "I think it is fine.", Invalid: true, ParseError: "not JSON"}
	put("a-ok", "openai:a", &llm.Response{Text: `{"verdict":"pass","note":"\"invalid\":true"}`, JSON: []byte(`{"verdict":"pass","invalid":true}`)}, now)
	put("a-bad", "openai:a", bad, now)
	put("a-bad-old", "openai:a", bad, old)
	put("b-bad", "openai:b", bad, now)
	put("b-pending", "openai:b", nil, now)
	c.RecordHit(ctx, "a-bad")
	s, err := c.Stats(ctx)
	if err != nil || s.Entries != 4 || s.Invalid != 3 || s.Pending != 1 || s.ByModel[0].Invalid != 2 || s.ByModel[1].Invalid != 1 {
		t.Fatalf("stats %+v, %v", s, err)
	}
	cl := c.(llm.Clearer)
	for _, tc := range []struct {
		clear                     llm.CacheClear
		answers, invalid, pending int
	}{
		{llm.CacheClear{Invalid: true, DryRun: true}, 3, 3, 0},
		{llm.CacheClear{Invalid: true, Model: "openai:a", Before: now.Add(-time.Hour), DryRun: true}, 1, 1, 0},
		{llm.CacheClear{Model: "openai:b", DryRun: true}, 1, 1, 1},
		{llm.CacheClear{Invalid: true, Model: "openai:a"}, 2, 2, 0},
		{llm.CacheClear{Invalid: true}, 1, 1, 0},
		{llm.CacheClear{Invalid: true}, 0, 0, 0},
	} {
		got, err := cl.Clear(ctx, tc.clear)
		if err != nil || got.Answers != tc.answers || got.Invalid != tc.invalid || got.Pending != tc.pending || got.DryRun != tc.clear.DryRun {
			t.Fatalf("Clear(%+v) = %+v, %v; want %d answers, %d invalid, %d pending", tc.clear, got, err, tc.answers, tc.invalid, tc.pending)
		}
	}
	s, err = c.Stats(ctx)
	if err != nil || s.Entries != 1 || s.Invalid != 0 || s.Pending != 1 || s.Hits != 0 {
		t.Fatalf("stats after clearing %+v, %v", s, err)
	}
	if e, _ := c.Get(ctx, "a-ok"); e == nil || e.Response == nil {
		t.Fatal("a readable answer was removed")
	}
	if got, err := cl.Clear(ctx, llm.CacheClear{}); err != nil || got.Answers != 1 || got.Pending != 1 {
		t.Fatalf("clear all: %+v, %v", got, err)
	}
}
