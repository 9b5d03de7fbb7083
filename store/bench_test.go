package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/llm/llmtest"
	"github.com/gavelhq/gavel/llm/openai"
	"github.com/gavelhq/gavel/record"
)

// BenchmarkImport measures storing records in one transaction, the store's
// share of `gavel ingest`: 10,000 records of about 2 KB, on each backend.
func BenchmarkImport(b *testing.B) {
	rs := make([]*record.Record, 10_000)
	for i := range rs {
		r := &record.Record{ID: fmt.Sprint("r", i), Task: strings.Repeat("t", 1000),
			Candidate: strings.Repeat("c", 1000), Group: fmt.Sprint("g", i/3),
			Outcome: record.Outcome{Status: record.StatusPassed}}
		if err := r.Normalize(); err != nil {
			b.Fatal(err)
		}
		rs[i] = r
	}
	for _, be := range backends(b) {
		cur = be
		b.Run(be.name+"/in memory", func(b *testing.B) { benchImport(b, rs) })
		b.Run(be.name+"/staged", func(b *testing.B) {
			defer setImportLimit(setImportLimit(0))
			benchImport(b, rs)
		})
	}
}

func benchImport(b *testing.B, rs []*record.Record) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		db := MustOpenDB(b)
		b.StartTimer()
		if err := put(ctx, db, rs...); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		db.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(len(rs)), "records/op")
}

// BenchmarkCache measures the model layer over each store: a hit (key,
// cache read, hit count) and a miss against a fake provider answering at
// once (claim, call, answer stored, claim released).
func BenchmarkCache(b *testing.B) {
	ctx := context.Background()
	fake := llmtest.NewOpenAI()
	defer fake.Close()
	for _, be := range backends(b) {
		cur = be
		db := MustOpenDB(b)
		reg := llm.NewRegistry()
		reg.Register(openai.Info)
		svc := llm.NewService(reg, db.Cache(), llm.Options{
			Providers: map[string]llm.ProviderConfig{"openai": {BaseURL: fake.URL + "/v1", APIKey: "k"}}})
		req := func(i int) *llm.Request {
			return &llm.Request{Model: "openai:m", Messages: []llm.Message{{Role: llm.User, Content: fmt.Sprint("q", i)}}}
		}
		if _, err := svc.Complete(ctx, req(-1)); err != nil {
			b.Fatal(err)
		}
		// A hit's count kept in memory (now), and written with an UPDATE
		// of its own (before 2026-12-01).
		for _, through := range []bool{false, true} {
			name := map[bool]string{false: "/hit", true: "/hit_write_through"}[through]
			b.Run(be.name+name, func(b *testing.B) {
				db.WriteHitsThrough = through
				defer func() { db.WriteHitsThrough = false }()
				for b.Loop() {
					if _, err := svc.Complete(ctx, req(-1)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		n := 0
		b.Run(be.name+"/miss", func(b *testing.B) {
			for b.Loop() {
				n++
				if _, err := svc.Complete(ctx, req(n)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
