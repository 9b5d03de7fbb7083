package llm_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/llm/llmtest"
	"github.com/gavelhq/gavel/llm/openai"
)

// BenchmarkCall compares a call through the Service (cache read on a hit;
// provider, schema check and cache write on a miss) with the bare provider
// call against the same zero-latency fake server, the baseline.
func BenchmarkCall(b *testing.B) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	srv.Answer = func(*llmtest.Call) string { return `{"verdict":"pass","reasoning":"ok"}` }
	mk := func(i int) *llm.Request {
		r := ask("openai:bench", fmt.Sprint("question ", i))
		r.Schema = verdictSchema
		return r
	}
	b.Run("provider-only", func(b *testing.B) {
		p, _ := openai.New(llm.ProviderConfig{BaseURL: srv.URL + "/v1", APIKey: "k"})
		i := 0
		for b.Loop() {
			i++
			if _, err := p.Complete(context.Background(), "bench", mk(i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("service-miss", func(b *testing.B) {
		svc := llm.NewService(registry(), newCache(b), options(srv, "openai", &sleeps{}))
		i := 0
		for b.Loop() {
			i++
			if _, err := svc.Complete(context.Background(), mk(i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("service-hit", func(b *testing.B) {
		svc := llm.NewService(registry(), newCache(b), options(srv, "openai", &sleeps{}))
		req := mk(0)
		if _, err := svc.Complete(context.Background(), req); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			r, err := svc.Complete(context.Background(), req)
			if err != nil || !r.Cached {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkConcurrent400 times 400 distinct calls at 50 ms server latency
// with 16 in flight. The ideal is 400 / 16 * 50 ms = 1.25 s.
func BenchmarkConcurrent400(b *testing.B) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	srv.Latency = 50 * time.Millisecond
	run := 0
	cache := newCache(b)
	opt := options(srv, "openai", &sleeps{})
	opt.Concurrency = 16
	for b.Loop() {
		run++
		svc := llm.NewService(registry(), cache, opt)
		start := time.Now()
		var wg sync.WaitGroup
		for i := range 400 {
			wg.Go(func() {
				if _, err := svc.Complete(context.Background(), ask("openai:bench", fmt.Sprint(run, "/", i))); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		b.ReportMetric(time.Since(start).Seconds()/1.25, "x-ideal")
	}
}
