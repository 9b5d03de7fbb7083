package queue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gavelhq/gavel/internal/pgtest"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/queue"
	"github.com/gavelhq/gavel/store"
	"github.com/gavelhq/gavel/store/sqldb"
)

// startRunner opens a fresh PostgreSQL store and starts a runner on it
// working one unit at a time.
func startRunner(tb testing.TB) (*sqldb.DB, *queue.Runner) {
	tb.Helper()
	if !pgtest.Available(tb) {
		tb.Skip("no PostgreSQL (GAVEL_TEST_POSTGRES)")
	}
	ctx := context.Background()
	s, err := store.Open(ctx, pgtest.Fresh(tb))
	if err != nil {
		tb.Fatal(err)
	}
	db := s.(*sqldb.DB)
	tb.Cleanup(func() { db.Close() })
	env := &queue.Env{Cache: db.Cache(), Model: func(string, string) (llm.Client, error) {
		return nil, fmt.Errorf("no model: every unit here is answered already")
	}}
	r, err := queue.Start(ctx, db.SQL(), db.ConnString, env, 1, queue.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(r.Stop)
	return db, r
}

// answered puts an answered request in the cache: its unit has nothing to
// send, so what a run of it measures is the queue.
func answered(tb testing.TB, db *sqldb.DB, key string) *llm.Entry {
	tb.Helper()
	req := &llm.Request{Model: "openai:m", Messages: []llm.Message{{Role: llm.User, Content: key}}}
	e := &llm.Entry{Key: key, Provider: "openai", Model: "openai:m", Request: req, Response: &llm.Response{Text: "done"}}
	if err := db.Cache().Put(context.Background(), e); err != nil {
		tb.Fatal(err)
	}
	return e
}

// TestUnitsRun: units enqueued on an idle runner all complete, and a unit
// enqueued again (same arguments) is not run twice.
func TestUnitsRun(t *testing.T) {
	db, r := startRunner(t)
	ctx := context.Background()
	var es []*llm.Entry
	for i := range 5 {
		es = append(es, answered(t, db, fmt.Sprintf("k%d", i)))
	}
	ids, err := queue.EnqueueModelCalls(ctx, r.Client, es, nil)
	if err != nil || len(ids) != 5 {
		t.Fatalf("enqueue: %v %v", ids, err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := r.Wait(wctx, ids, nil); err != nil {
		t.Fatal(err)
	}
	again, err := queue.EnqueueModelCalls(ctx, r.Client, es[:1], nil)
	if err != nil || len(again) != 1 || again[0] != ids[0] {
		t.Fatalf("the same unit again: %v %v (first %d)", again, err, ids[0])
	}
}

// BenchmarkPickup measures how long a unit waits in the queue on an idle
// runner: from its insert to its start, both times the database's. With
// River on pgx the insert is notified (LISTEN/NOTIFY), so the wait is not
// a poll interval (BENCHMARKS.md).
func BenchmarkPickup(b *testing.B) {
	db, r := startRunner(b)
	ctx := context.Background()
	var waited time.Duration
	for i := 0; b.Loop(); i++ {
		e := answered(b, db, fmt.Sprintf("bench-%d", i))
		ids, err := queue.EnqueueModelCalls(ctx, r.Client, []*llm.Entry{e}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Wait(ctx, ids, nil); err != nil {
			b.Fatal(err)
		}
		j, err := r.Client.JobGet(ctx, ids[0])
		if err != nil || j.AttemptedAt == nil {
			b.Fatalf("job %d: %v", ids[0], err)
		}
		waited += j.AttemptedAt.Sub(j.CreatedAt)
	}
	b.ReportMetric(float64(waited.Microseconds())/1000/float64(b.N), "ms-to-start/op")
}
