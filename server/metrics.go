package server

import (
	"crypto/subtle"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gavelhq/gavel/llm"
)

type metricSet struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	verdicts *prometheus.CounterVec
	outcomes *prometheus.CounterVec
	hooks    *prometheus.CounterVec
	errors   *prometheus.CounterVec
}

func newMetrics(reg *prometheus.Registry, stats func() llm.RunStats) *metricSet {
	m := &metricSet{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gavel_http_requests_total",
			Help: "HTTP requests by route and status code."}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gavel_http_request_duration_seconds",
			Help:    "HTTP request latency by route.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}}, []string{"route"}),
		verdicts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gavel_verdicts_total",
			Help: "Verdicts answered by judge and outcome (cached: answered before for the same change, version and model)."},
			[]string{"judge", "verdict", "cached"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gavel_outcomes_total",
			Help: "Outcomes received by status."}, []string{"status"}),
		hooks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gavel_webhook_deliveries_total",
			Help: "Webhook deliveries by source and result (recorded, ignored, stale, replay, unsigned, bad_signature, busy)."}, []string{"source", "result"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gavel_errors_total",
			Help: "Requests answered with an error, by route and class (client or server)."}, []string{"route", "class"}),
	}
	reg.MustRegister(m.requests, m.latency, m.verdicts, m.outcomes, m.hooks, m.errors,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	if stats != nil {
		for _, c := range []struct {
			name, help string
			f          func(llm.RunStats) int
		}{
			{"gavel_model_requests_total", "Requests to the model layer.", func(s llm.RunStats) int { return s.Requests }},
			{"gavel_model_cache_hits_total", "Model requests answered from the cache.", func(s llm.RunStats) int { return s.CacheHits }},
			{"gavel_model_calls_total", "Model requests sent to a provider.", func(s llm.RunStats) int { return s.Sent }},
			{"gavel_model_failures_total", "Model requests that failed after their retries.", func(s llm.RunStats) int { return s.Failed }},
		} {
			reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: c.name, Help: c.help},
				func() float64 { return float64(c.f(stats())) }))
		}
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "gavel_model_cost_dollars_total",
			Help: "Cost of the model calls sent, in US dollars, by the price table."},
			func() float64 { return stats().Cost }))
	}
	return m
}

func (s *Server) metricsHandler() http.Handler {
	h := promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{Registry: s.reg})
	if s.cfg.MetricsToken == "" {
		return h
	}
	want := []byte(s.cfg.MetricsToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := bearer(r)
		if !ok || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gavel metrics"`)
			writeError(w, errorf(http.StatusUnauthorized, "metrics need the metrics token: send Authorization: Bearer <--metrics-token>"))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// instrument counts a route's requests, their codes and latency.
func (s *Server) instrument(route string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		if sw.code == 0 {
			sw.code = http.StatusOK
		}
		s.metrics.requests.WithLabelValues(route, strconv.Itoa(sw.code)).Inc()
		s.metrics.latency.WithLabelValues(route).Observe(time.Since(start).Seconds())
		switch {
		case sw.code >= 500:
			s.metrics.errors.WithLabelValues(route, "server").Inc()
		case sw.code >= 400:
			s.metrics.errors.WithLabelValues(route, "client").Inc()
		}
	})
}
