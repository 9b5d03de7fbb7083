// Package server is gavel's service (gavel serve): it judges changes with
// each judge's active prompt version through the model layer, hears what
// happened to them afterwards (turning each into a record that later
// calibrations use), promotes versions only through a statistical gate,
// watches drift, and runs blind human review. JSON API under /v1, pages
// under /ui, Prometheus metrics at /metrics.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-github/v93/github"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/llm"
)

// Config configures a Server. Zero values take the defaults noted.
type Config struct {
	Store  Store
	Client llm.Client
	// Stats, when set, reports the model layer's counts for /metrics.
	Stats func() llm.RunStats
	// Model judges every change (PROVIDER:NAME). Simulated marks every
	// answer as the simulated model's.
	Model     string
	Simulated bool
	// BodyLimit bounds a request body (default 1 MiB).
	BodyLimit int64
	// Rate and Burst limit each token's requests (default 20 a second,
	// bursts of 40; a negative Rate turns the limit off).
	Rate  float64
	Burst int
	// ModelTimeout bounds one judging call (default 2 minutes);
	// ReadTimeout and WriteTimeout the HTTP exchange (defaults 30 s, and
	// ModelTimeout plus 30 s).
	ModelTimeout, ReadTimeout, WriteTimeout time.Duration
	// Resamples and Seed are the bootstrap's for intervals (default 2000).
	Resamples int
	Seed      uint64
	// Log receives errors and notable events (default: text on stderr).
	Log *slog.Logger
	// GitHubWebhookSecret verifies GitHub webhook deliveries (empty: the
	// webhook endpoint is off).
	GitHubWebhookSecret []byte
	// GitHub, when set, fetches pull requests a webhook reports that the
	// service did not judge, to record them.
	GitHub *github.Client
	// MetricsToken, when set, is the bearer token /metrics asks for (for
	// a service other hosts reach); empty: /metrics is open.
	MetricsToken string
	// TokenConcurrency bounds each token's requests in flight (default 32;
	// negative: no bound).
	TokenConcurrency int
	// WebhookBodyLimit bounds a webhook payload (default 4 MiB, at most
	// GitHub's 25 MB); WebhookReaders how many payloads are read at once
	// before their signature is checked (default 4; the rest get 503 and
	// Retry-After, so unauthenticated posts cannot fill the memory).
	WebhookBodyLimit int64
	WebhookReaders   int
	// ReadConcurrency bounds the reads that may take a bootstrap (judge
	// statistics, drift, agreement) running at once (default: one fewer
	// than the cores Go uses, at least one).
	ReadConcurrency int
}

// Server is the service. It keeps no state of its own beside its store but
// rate limiters and metrics, so replicas can share one store.
type Server struct {
	cfg     Config
	mux     *http.ServeMux
	limits  *limiters
	metrics *metricSet
	reg     *prometheus.Registry
	// prompts holds prompt versions read, by hash.
	prompts sync.Map
	// hookReaders holds a slot for each webhook payload being read.
	hookReaders chan struct{}
	// reads holds a slot for each expensive read running.
	reads chan struct{}
	// live keeps each judge's live agreement until its data change.
	live deploy.LiveCache
	// storeFull is when a write last failed for a full disk (UnixNano).
	storeFull atomic.Int64
	// probe asks the store, in the background, whether it answers.
	probe *probe
}

// New makes a server.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil || cfg.Client == nil || cfg.Model == "" {
		return nil, errors.New("server: a store, a model client and a model are needed")
	}
	s, err := newServer(cfg)
	if err != nil {
		return nil, err
	}
	s.routes()
	return s, nil
}

// newServer is a server with its defaults and no routes.
func newServer(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("server: a store is needed")
	}
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = 1 << 20
	}
	if cfg.WebhookBodyLimit <= 0 {
		cfg.WebhookBodyLimit = 4 << 20
	}
	if cfg.WebhookBodyLimit > webhookLimit {
		return nil, fmt.Errorf("server: a webhook body limit of %d bytes is over GitHub's largest payload (%d)", cfg.WebhookBodyLimit, webhookLimit)
	}
	if cfg.WebhookReaders <= 0 {
		cfg.WebhookReaders = 4
	}
	if cfg.ReadConcurrency <= 0 {
		cfg.ReadConcurrency = max(1, runtime.GOMAXPROCS(0)-1)
	}
	if cfg.TokenConcurrency == 0 {
		cfg.TokenConcurrency = 32
	}
	if cfg.Rate == 0 {
		cfg.Rate = 20
	}
	if cfg.Burst <= 0 {
		cfg.Burst = max(1, int(2*cfg.Rate))
	}
	if cfg.ModelTimeout <= 0 {
		cfg.ModelTimeout = 2 * time.Minute
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = 30 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = cfg.ModelTimeout + 30*time.Second
	}
	if cfg.Resamples <= 0 {
		cfg.Resamples = 2000
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(),
		limits: &limiters{rate: rate.Limit(cfg.Rate), burst: cfg.Burst, m: map[string]*rate.Limiter{}, maxInFlight: cfg.TokenConcurrency},
		reg:    prometheus.NewRegistry(), hookReaders: make(chan struct{}, cfg.WebhookReaders),
		reads: make(chan struct{}, cfg.ReadConcurrency)}
	s.metrics = newMetrics(s.reg, cfg.Stats)
	st := cfg.Store
	s.probe = newProbe(func(ctx context.Context) error { _, err := st.Splits(ctx); return err })
	return s, nil
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.mux }

// Serve answers on a listener until ctx ends, then shuts down gracefully
// (requests in flight finish within the write timeout).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.cfg.Log.Handler(), slog.LevelWarn),
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.WriteTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// route is one endpoint: its pattern, the scope it needs ("" for any
// valid token, "-" for none) and its handler, which returns an error to
// answer.
type route struct {
	pattern string
	scope   string
	h       func(w http.ResponseWriter, r *http.Request, t *deploy.Token) error
}

func (s *Server) routes() {
	api := []route{
		{"GET /v1/health", "-", s.health},
		{"POST /v1/judge", deploy.ScopeJudge, s.judge},
		{"POST /v1/outcomes", deploy.ScopeFeedback, s.outcome},
		{"GET /v1/judges", "", s.listJudges},
		{"GET /v1/judges/{name}", "", s.showJudge},
		{"POST /v1/judges/{name}/promote", deploy.ScopeAdmin, s.promote},
		{"POST /v1/judges/{name}/rollback", deploy.ScopeAdmin, s.rollback},
		{"GET /v1/drift", "", s.drift},
		{"GET /v1/agreement", "", s.agreement},
		// Authenticated by the payload's HMAC, not a token.
		{githubHookRoute, "-", s.githubHook},
	}
	for _, rt := range api {
		s.mux.Handle(rt.pattern, s.instrument(rt.pattern, s.api(rt)))
	}
	s.mux.Handle("GET /metrics", s.instrument("GET /metrics", s.metricsHandler()))
	s.mux.Handle("/v1/", s.instrument("/v1/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errorf(http.StatusNotFound, "no endpoint %s %s", r.Method, r.URL.Path))
	})))
	s.pages()
}

// api wraps an endpoint with authentication, its scope, the per-token rate
// limit and the body limit; errors are answered as JSON.
func (s *Server) api(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var t *deploy.Token
		if rt.scope != "-" {
			secret, ok := bearer(r)
			if !ok {
				writeError(w, errorf(http.StatusUnauthorized, "missing bearer token: send Authorization: Bearer <token>"))
				return
			}
			var err error
			if t, err = deploy.Authenticate(r.Context(), s.cfg.Store, secret); err != nil {
				writeError(w, err)
				return
			}
			if !t.Allows(rt.scope) {
				writeError(w, errorf(http.StatusForbidden, "token %s has scope %s; %s needs scope %s", t.ID, t.Scope, rt.pattern, rt.scope))
				return
			}
			if d := s.limits.wait(t.ID); d > 0 {
				writeError(w, &apiError{Status: http.StatusTooManyRequests, RetryAfter: retryAfter(d),
					Msg: fmt.Sprintf("rate limit of token %s reached (%.3g requests a second): retry after %s", t.ID, s.cfg.Rate, d.Round(time.Millisecond))})
				return
			}
			// A token's requests share the machine with everyone's: at
			// most so many at once, so one client cannot take every core.
			if !s.limits.enter(t.ID) {
				writeError(w, &apiError{Status: http.StatusTooManyRequests, RetryAfter: 1,
					Msg: fmt.Sprintf("token %s has %d requests in flight, the most one token may: retry when one is answered", t.ID, s.limits.maxInFlight)})
				return
			}
			defer s.limits.leave(t.ID)
		}
		limit := s.cfg.BodyLimit
		if rt.pattern == githubHookRoute {
			limit = s.cfg.WebhookBodyLimit
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		if err := rt.h(w, r, t); err != nil {
			if deploy.StoreFull(err) {
				// Said as it is, and the health check says so too.
				s.storeFull.Store(time.Now().UnixNano())
				s.cfg.Log.Error("store full", "route", rt.pattern, "error", err)
				err = deploy.StoreFullError(err)
			}
			if clientError(err) == nil {
				err = internalError(s.cfg.Log, rt.pattern, err)
			}
			writeError(w, err)
		}
	})
}

func (s *Server) health(w http.ResponseWriter, r *http.Request, _ *deploy.Token) error {
	// The health check answers from the last background probe of the
	// store: it never waits for a connection behind the readers it is
	// there to watch.
	if err := s.probe.state(); err != nil {
		if _, ok := err.(*notAnswering); ok {
			return errorf(http.StatusServiceUnavailable, "the store does not answer: %s", err)
		}
		ie := internalError(s.cfg.Log, "health", err)
		return errorf(http.StatusServiceUnavailable, "the store does not answer: %s", strings.TrimPrefix(ie.Msg, "internal error "))
	}
	// A full disk refused a write within the last minute: degraded.
	if at := s.storeFull.Load(); at != 0 && time.Since(time.Unix(0, at)) < time.Minute {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "degraded", "model": s.cfg.Model,
			"store": "its disk is full: the last write was refused at " + time.Unix(0, at).UTC().Format(time.RFC3339)})
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "model": s.cfg.Model})
	return nil
}
