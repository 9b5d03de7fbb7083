package store_test

import (
	"context"
	"math"
	"testing"

	"github.com/gavelhq/gavel/llm"
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
