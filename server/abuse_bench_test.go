package server_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/server"
	"github.com/gavelhq/gavel/sim"
)

// peakRSS is this process's peak resident set (VmHWM), in MiB.
func peakRSS() float64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return float64(kb) / 1024
		}
	}
	return 0
}

// BenchmarkWebhookFlood: 32 clients at once, each posting a 24 MB body
// that claims a signature (so it is not refused unread), to the webhook;
// it reports the process's peak RSS and how the posts were answered.
//
//	go test ./server -run XXX -bench WebhookFlood -benchtime 3x
func BenchmarkWebhookFlood(b *testing.B) {
	e := start(b, server.Config{Simulated: true, Rate: -1, GitHubWebhookSecret: []byte(hookSecret)}, simService)
	body := bytes.Repeat([]byte("x"), 24<<20)
	before := peakRSS()
	codes := map[int]int{}
	var mu sync.Mutex
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		for i := range 32 {
			wg.Go(func() {
				req, _ := http.NewRequest("POST", e.url+"/v1/hooks/github", bytes.NewReader(body))
				req.ContentLength = -1 // chunked: the size is not said up front
				req.Header.Set("X-GitHub-Event", "pull_request")
				req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("flood-%d", i))
				req.Header.Set("X-Hub-Signature-256", "sha256=00")
				resp, err := http.DefaultClient.Do(req)
				code := 0
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					code = resp.StatusCode
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	b.StopTimer()
	b.ReportMetric(peakRSS(), "peak-RSS-MiB")
	b.ReportMetric(before, "RSS-before-MiB")
	for code, n := range codes {
		b.ReportMetric(float64(n)/float64(b.N), fmt.Sprintf("answered-%d/op", code))
	}
}

// BenchmarkHealthUnderReads: 16 clients read a judge's statistics (with
// 2,000 outcomes, or GAVEL_BENCH_OUTCOMES) as fast as they can while the health check is asked
// every 10 ms; it reports the health check's p50 and p99 and the reads
// served a second.
//
//	go test ./server -run XXX -bench HealthUnderReads -benchtime 10s
func BenchmarkHealthUnderReads(b *testing.B) {
	e := start(b, server.Config{Simulated: true, Rate: -1, Resamples: 2000}, simService)
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("GAVEL_BENCH_OUTCOMES")); err == nil {
		n = v // the issue measured 10.7k
	}
	rs, err := sim.Records(sim.WorldOptions{N: n, Seed: 8})
	if err != nil {
		b.Fatal(err)
	}
	for i := range rs {
		if a := e.do("POST", "/v1/judge", e.tok[deploy.ScopeJudge], judgeBody("passfail", &rs[i])); a.code != 200 {
			b.Fatalf("judge: %s", a.raw)
		}
		e.do("POST", "/v1/outcomes", e.tok[deploy.ScopeFeedback], jsonBody(map[string]any{"change_id": rs[i].ID, "status": rs[i].Outcome.Status, "at": rs[i].Outcome.At}))
	}
	stop := make(chan struct{})
	var reads sync.WaitGroup
	var mu sync.Mutex
	served := 0
	for range 16 {
		reads.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest("GET", e.url+"/v1/judges/passfail", nil)
				req.Header.Set("Authorization", "Bearer "+e.tok[deploy.ScopeReview])
				if resp, err := http.DefaultClient.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					mu.Lock()
					served++
					mu.Unlock()
				}
			}
		})
	}
	var lat []time.Duration
	t0 := time.Now()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		resp, err := http.Get(e.url + "/v1/health")
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		lat = append(lat, time.Since(start))
		time.Sleep(10 * time.Millisecond)
	}
	b.StopTimer()
	close(stop)
	reads.Wait()
	slices.Sort(lat)
	q := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.5), "health-p50-ms")
	b.ReportMetric(q(0.99), "health-p99-ms")
	b.ReportMetric(float64(served)/time.Since(t0).Seconds(), "reads/s")
}
