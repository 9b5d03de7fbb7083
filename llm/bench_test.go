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
// with 16 in flight. The ideal is 400 / 16 * 50 ms = 1.25 s. It takes the
// time apart: the provider alone (16 goroutines calling the SDK), the
// service over a cache in memory (its limiter, keys, schema checks), and
// the service over the SQLite store (reads, claims, answers written):
//
//	go test ./llm -run XXX -bench Concurrent400 -benchtime 5x
func BenchmarkConcurrent400(b *testing.B) {
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	srv.Latency = 50 * time.Millisecond
	run := 0
	fan := func(b *testing.B, call func(i int) error) {
		for b.Loop() {
			run++
			start := time.Now()
			var wg sync.WaitGroup
			sem := make(chan struct{}, 16)
			for i := range 400 {
				wg.Go(func() {
					sem <- struct{}{}
					defer func() { <-sem }()
					if err := call(i); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
			b.ReportMetric(time.Since(start).Seconds()/1.25, "x-ideal")
		}
	}
	b.Run("provider-only", func(b *testing.B) {
		p, _ := openai.New(llm.ProviderConfig{BaseURL: srv.URL + "/v1", APIKey: "k"})
		fan(b, func(i int) error {
			_, err := p.Complete(context.Background(), "bench", ask("openai:bench", fmt.Sprint(run, "/", i)))
			return err
		})
	})
	for _, c := range []struct {
		name  string
		cache func() llm.Cache
	}{{"service-memory-cache", func() llm.Cache { return &memCache{m: map[string]*llm.Entry{}} }}, {"service-sqlite", func() llm.Cache { return newCache(b) }}} {
		b.Run(c.name, func(b *testing.B) {
			cache := c.cache()
			opt := options(srv, "openai", &sleeps{})
			opt.Concurrency = 16
			svc := llm.NewService(registry(), cache, opt)
			fan(b, func(i int) error {
				_, err := svc.Complete(context.Background(), ask("openai:bench", fmt.Sprint(run, "/", i)))
				return err
			})
		})
	}
}

// memCache is a cache in memory, without claims.
type memCache struct {
	mu sync.Mutex
	m  map[string]*llm.Entry
}

func (c *memCache) Get(_ context.Context, key string) (*llm.Entry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[key], nil
}

func (c *memCache) Put(_ context.Context, e *llm.Entry) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[e.Key] = e
	return nil
}

func (c *memCache) RecordHit(context.Context, string) error { return nil }

func (c *memCache) AddPending(_ context.Context, e *llm.Entry) error {
	return c.Put(context.Background(), e)
}

func (c *memCache) Pending(context.Context, func(*llm.Entry) error) error { return nil }

func (c *memCache) Stats(context.Context) (*llm.CacheStats, error) { return &llm.CacheStats{}, nil }
