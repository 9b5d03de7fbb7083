package server_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/server"
	"github.com/gavelhq/gavel/sim"
)

// BenchmarkServeLoad: 200 concurrent clients on loopback, each judging a
// change already judged (so the verdict is stored and the model layer is
// not called) and posting its outcome (the first time a new record, later
// the same outcome again). It reports requests a second, p50 and p99
// latency, errors (must be 0) and the heap in use at the end. Run it for
// 30 s:
//
//	go test ./server -run XXX -bench ServeLoad -benchtime 30s
func BenchmarkServeLoad(b *testing.B) {
	e := start(b, server.Config{Simulated: true, Rate: -1, TokenConcurrency: -1}, simService)
	rs, err := sim.Records(sim.WorldOptions{N: 2000, Seed: 8})
	if err != nil {
		b.Fatal(err)
	}
	judgeBodies := make([][]byte, len(rs))
	outcomeBodies := make([][]byte, len(rs))
	tr := &http.Transport{MaxIdleConns: 400, MaxIdleConnsPerHost: 400}
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	post := func(path, token string, body []byte) (int, error) {
		req, _ := http.NewRequest("POST", e.url+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	for i := range rs {
		judgeBodies[i] = []byte(judgeBody("passfail", &rs[i]))
		outcomeBodies[i] = []byte(jsonBody(map[string]any{"change_id": rs[i].ID, "status": rs[i].Outcome.Status, "at": rs[i].Outcome.At}))
		if code, err := post("/v1/judge", e.tok[deploy.ScopeJudge], judgeBodies[i]); err != nil || code != 200 {
			b.Fatalf("warm-up judge %d: %d %v", i, code, err)
		}
	}
	const clients = 200
	b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	var mu sync.Mutex
	var latencies []time.Duration
	var errs, requests atomic.Int64
	var seed atomic.Uint64
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(seed.Add(1), 1))
		var mine []time.Duration
		for pb.Next() {
			i := rng.IntN(len(rs))
			for k, req := range []struct {
				path, token string
				body        []byte
			}{{"/v1/judge", e.tok[deploy.ScopeJudge], judgeBodies[i]}, {"/v1/outcomes", e.tok[deploy.ScopeFeedback], outcomeBodies[i]}} {
				t0 := time.Now()
				code, err := post(req.path, req.token, req.body)
				mine = append(mine, time.Since(t0))
				requests.Add(1)
				if err != nil || code != 200 && !(k == 1 && code == 201) {
					if errs.Add(1) <= 3 {
						fmt.Printf("error: %s: %d %v\n", req.path, code, err)
					}
				}
			}
		}
		mu.Lock()
		latencies = append(latencies, mine...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(latencies)
	q := func(p float64) float64 {
		if len(latencies) == 0 {
			return 0
		}
		return float64(latencies[min(len(latencies)-1, int(p*float64(len(latencies))))].Microseconds()) / 1000
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(requests.Load())/elapsed.Seconds(), "requests/s")
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(float64(errs.Load()), "errors")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
	if errs.Load() > 0 {
		b.Errorf("%d errors", errs.Load())
	}
}
