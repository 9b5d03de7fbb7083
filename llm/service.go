package llm

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"

	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"
)

// Options configure a Service. The zero value of each field is documented
// default behaviour.
type Options struct {
	// Providers holds connection settings per provider name.
	Providers map[string]ProviderConfig
	// NoCacheReads sends every request even when the cache has its answer;
	// answers are still written.
	NoCacheReads bool
	// Offline sends nothing: misses become pending requests (ErrPending).
	// Local providers (sim) still answer.
	Offline bool
	// Concurrency bounds calls in flight per provider (default 8).
	Concurrency int
	// RequestsPerMinute and TokensPerMinute limit each provider (0: none).
	// Tokens are estimated before the call (4 characters a token, plus the
	// answer bound).
	RequestsPerMinute int
	TokensPerMinute   int
	// MaxAttempts bounds the HTTP calls per request, retries included
	// (default 6).
	MaxAttempts int
	// Timeout bounds one attempt (default 5 minutes).
	Timeout time.Duration
	// BaseBackoff and MaxBackoff shape the exponential backoff with full
	// jitter between attempts (defaults 1 s and 60 s). A server's
	// Retry-After is honoured when it asks for longer, up to MaxWait
	// (default 5 minutes).
	BaseBackoff, MaxBackoff, MaxWait time.Duration
	// Prices gives costs (default: the embedded table).
	Prices *PriceTable
	// MaxCost, when positive, is the budget in US dollars for this
	// service's calls: a call whose worst case would pass it is not sent
	// (ErrBudget).
	MaxCost float64
	// OnRetry, when set, hears of every retry before its wait (commands
	// report them on stderr).
	OnRetry func(Retry)
	// Sleep waits between attempts; tests replace it. It must return early
	// with the context's error.
	Sleep func(ctx context.Context, d time.Duration) error
	// Seed seeds the jitter (0: random).
	Seed uint64
}

// Service is the Client every part of gavel uses: cache, single flight,
// limits, retries, schema checks, cost and budget around the providers.
type Service struct {
	reg   *Registry
	cache Cache
	opt   Options

	mu        sync.Mutex
	providers map[string]*providerState
	rng       *rand.Rand
	spent     float64 // dollars paid by this service
	reserved  float64 // worst-case dollars of calls in flight
	stats     RunStats

	group singleflight.Group
	// owner names this service in cross-process claims on requests.
	owner string
}

var _ Client = (*Service)(nil)

// Retry is one failed attempt about to be tried again.
type Retry struct {
	Model, Key           string
	Attempt, MaxAttempts int
	Err                  error
	Wait                 time.Duration
}

// RunStats counts what a Service did.
type RunStats struct {
	Requests  int `json:"requests"`   // Complete calls
	CacheHits int `json:"cache_hits"` // answered from the cache
	Sent      int `json:"sent"`       // requests answered by a provider
	Attempts  int `json:"attempts"`   // HTTP calls, retries included
	Retries   int `json:"retries"`
	Repairs   int `json:"repairs"` // answers that failed their schema and were asked again
	Invalid   int `json:"invalid"` // answers still invalid after the repair
	Pending   int `json:"pending"` // offline misses stored as pending
	Failed    int `json:"failed"`  // requests that ended in an error
	// Shared counts requests that waited for an identical request in
	// flight and took its answer (or its error); Stopped those refused by
	// the budget. Requests = CacheHits + Sent + Shared + Pending + Failed
	// + Stopped.
	Shared   int     `json:"shared"`
	Stopped  int     `json:"stopped_by_budget"`
	Usage    Usage   `json:"usage"` // tokens of sent requests
	Cost     float64 `json:"cost_usd"`
	Unpriced int     `json:"unpriced"` // answers from models without a price
	// BadUsage counts answers whose reported token usage could not be
	// believed (negative, or over MaxUsageTokens): kept, not costed.
	BadUsage int `json:"bad_usage"`
}

// Add returns the sum of two counts (e.g. of services for different roles).
func (s RunStats) Add(o RunStats) RunStats {
	return RunStats{Requests: s.Requests + o.Requests, CacheHits: s.CacheHits + o.CacheHits, Sent: s.Sent + o.Sent,
		Attempts: s.Attempts + o.Attempts, Retries: s.Retries + o.Retries, Repairs: s.Repairs + o.Repairs,
		Invalid: s.Invalid + o.Invalid, Pending: s.Pending + o.Pending, Failed: s.Failed + o.Failed,
		Shared: s.Shared + o.Shared, Stopped: s.Stopped + o.Stopped,
		Usage: s.Usage.Add(o.Usage), Cost: s.Cost + o.Cost, Unpriced: s.Unpriced + o.Unpriced, BadUsage: s.BadUsage + o.BadUsage}
}

type providerState struct {
	info     ProviderInfo
	provider Provider
	sem      chan struct{}
	rpm, tpm *rate.Limiter
	// checked runs Preflight once, before the provider's first call.
	checked  sync.Once
	checkErr error
}

// NewService returns a service over the registry's providers. cache may be
// nil (nothing is cached, and offline mode cannot work).
func NewService(reg *Registry, cache Cache, opt Options) *Service {
	if opt.Concurrency <= 0 {
		opt.Concurrency = 8
	}
	if opt.MaxAttempts <= 0 {
		opt.MaxAttempts = 6
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 5 * time.Minute
	}
	if opt.BaseBackoff <= 0 {
		opt.BaseBackoff = time.Second
	}
	if opt.MaxBackoff <= 0 {
		opt.MaxBackoff = time.Minute
	}
	if opt.MaxWait <= 0 {
		opt.MaxWait = 5 * time.Minute
	}
	if opt.Prices == nil {
		opt.Prices = DefaultPrices()
	}
	if opt.Sleep == nil {
		opt.Sleep = sleepCtx
	}
	seed := opt.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	host, _ := os.Hostname()
	return &Service{reg: reg, cache: cache, opt: opt, providers: map[string]*providerState{},
		rng: rand.New(rand.NewPCG(seed, 0x6a17)), owner: fmt.Sprintf("%s/%d/%x", host, os.Getpid(), rand.Uint64())}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Stats returns the counts so far.
func (s *Service) Stats() RunStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

func (s *Service) count(f func(*RunStats)) {
	s.mu.Lock()
	f(&s.stats)
	s.mu.Unlock()
}

func (s *Service) state(name string) (*providerState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.providers[name]; ok {
		return st, nil
	}
	info, err := s.reg.Info(name)
	if err != nil {
		return nil, err
	}
	p, err := info.New(s.opt.Providers[name])
	if err != nil {
		return nil, fmt.Errorf("provider %s: %w", name, err)
	}
	st := &providerState{info: info, provider: p, sem: make(chan struct{}, s.opt.Concurrency)}
	if n := s.opt.RequestsPerMinute; n > 0 {
		st.rpm = rate.NewLimiter(rate.Limit(float64(n)/60), max(1, n/60))
	}
	if n := s.opt.TokensPerMinute; n > 0 {
		st.tpm = rate.NewLimiter(rate.Limit(float64(n)/60), n)
	}
	s.providers[name] = st
	return st, nil
}

// Complete answers a request: from the cache when it can, else from the
// provider (once for identical concurrent requests), else, offline, by
// recording it as pending.
func (s *Service) Complete(ctx context.Context, req *Request) (*Response, error) {
	key, err := Key(req)
	if err != nil {
		s.count(func(r *RunStats) { r.Requests++; r.Failed++ })
		return nil, err
	}
	return s.completeWithKey(ctx, req, key)
}

func (s *Service) completeWithKey(ctx context.Context, req *Request, key string) (*Response, error) {
	s.count(func(r *RunStats) { r.Requests++ })
	resp, shared, err := s.completeKey(ctx, req, key)
	if resp != nil {
		resp.Key = key // every path returns a copy of its own
	}
	switch {
	case shared:
		s.count(func(r *RunStats) { r.Shared++ })
	case errors.Is(err, ErrBudget):
		s.count(func(r *RunStats) { r.Stopped++ })
	case err != nil && !errors.Is(err, ErrPending):
		s.count(func(r *RunStats) { r.Failed++ })
	}
	return resp, err
}

// Prepared is a request made ready for Service.CompletePrepared: its key
// computed and its stored answer, if the cache has one, already read.
// The request must not change after Prepare.
type Prepared struct {
	Request *Request
	Key     string
	// Err is why the request could not be prepared (its key); completing
	// it returns this error.
	Err    error
	stored *Response
}

// Preparer is a client that prepares many requests at once: keys computed
// on every core and the cache read in one query per batch, so that a
// rerun answered from the cache pays one read per batch, not per request.
// judge.Run uses it when the client offers it.
type Preparer interface {
	Client
	Prepare(ctx context.Context, reqs []*Request) ([]Prepared, error)
	CompletePrepared(ctx context.Context, p *Prepared) (*Response, error)
}

// Prepare computes the requests' keys and reads the answers the cache
// holds for them.
func (s *Service) Prepare(ctx context.Context, reqs []*Request) ([]Prepared, error) {
	ps := make([]Prepared, len(reqs))
	workers := min(runtime.GOMAXPROCS(0), max(1, len(reqs)/32))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(reqs); i += workers {
				ps[i].Request = reqs[i]
				ps[i].Key, ps[i].Err = Key(reqs[i])
			}
		})
	}
	wg.Wait()
	if s.cache == nil || s.opt.NoCacheReads {
		return ps, nil
	}
	br, ok := s.cache.(ResponsesReader)
	if !ok {
		return ps, nil // each is read when completed
	}
	keys := make([]string, 0, len(ps))
	for i := range ps {
		if ps[i].Err == nil {
			keys = append(keys, ps[i].Key)
		}
	}
	got, err := br.ReadResponses(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	for i := range ps {
		if ps[i].Err == nil {
			ps[i].stored = got[ps[i].Key]
		}
	}
	return ps, nil
}

// CompletePrepared answers a prepared request as Complete would: from the
// answer Prepare read, else as any request.
func (s *Service) CompletePrepared(ctx context.Context, p *Prepared) (*Response, error) {
	if p.Err != nil {
		s.count(func(r *RunStats) { r.Requests++; r.Failed++ })
		return nil, p.Err
	}
	if p.stored == nil {
		return s.completeWithKey(ctx, p.Request, p.Key)
	}
	s.count(func(r *RunStats) { r.Requests++ })
	if err := checkRequest(p.Request, p.Key); err != nil {
		s.count(func(r *RunStats) { r.Failed++ })
		return nil, err
	}
	if err := s.cache.RecordHit(ctx, p.Key); err != nil {
		s.count(func(r *RunStats) { r.Failed++ })
		return nil, fmt.Errorf("cache: %w", err)
	}
	s.count(func(r *RunStats) { r.CacheHits++ })
	resp := *p.stored
	resp.Cached, resp.Key = true, p.Key
	return &resp, nil
}

// checkRequest refuses a request no provider could answer.
func checkRequest(req *Request, key string) error {
	if len(req.Messages) == 0 {
		return fmt.Errorf("request %.12s: no messages", key)
	}
	if req.Schema != nil {
		if req.Schema.Name == "" {
			return fmt.Errorf("request %.12s: schema without a name", key)
		}
		if err := CheckSchema(req.Schema.JSON); err != nil {
			return fmt.Errorf("request %.12s: schema %s: %w", key, req.Schema.Name, err)
		}
	}
	return nil
}

// completeKey answers a request; shared reports that an identical request
// in flight answered it.
func (s *Service) completeKey(ctx context.Context, req *Request, key string) (*Response, bool, error) {
	if err := checkRequest(req, key); err != nil {
		return nil, false, err
	}
	if s.cache != nil && !s.opt.NoCacheReads {
		stored, err := s.stored(ctx, key)
		if err != nil {
			return nil, false, fmt.Errorf("cache: %w", err)
		}
		if stored != nil {
			if err := s.cache.RecordHit(ctx, key); err != nil {
				return nil, false, fmt.Errorf("cache: %w", err)
			}
			s.count(func(r *RunStats) { r.CacheHits++ })
			resp := *stored
			resp.Cached = true
			return &resp, false, nil
		}
	}
	leader := false
	v, err, _ := s.group.Do(key, func() (any, error) {
		leader = true
		return s.miss(ctx, key, req)
	})
	if err != nil {
		return nil, !leader, err
	}
	resp := *v.(*Response)
	return &resp, !leader, nil
}

// miss handles a request the cache could not answer.
func (s *Service) miss(ctx context.Context, key string, req *Request) (*Response, error) {
	provName, _, _ := ParseModel(req.Model)
	st, err := s.state(provName)
	if err != nil {
		return nil, err
	}
	entry := &Entry{Key: key, Provider: provName, Model: req.Model, Request: req, CreatedAt: time.Now().UTC()}
	if s.opt.Offline && !st.info.Local {
		if s.cache == nil {
			return nil, errors.New("offline mode needs the store's cache")
		}
		if err := s.cache.AddPending(ctx, entry); err != nil {
			return nil, fmt.Errorf("cache: %w", err)
		}
		s.count(func(r *RunStats) { r.Pending++ })
		return nil, fmt.Errorf("%s request %.12s: %w", req.Model, key, ErrPending)
	}
	// Before the first call, check the provider can be called at all: a
	// missing key or an unreachable server fails at once, not after
	// minutes of retries.
	st.checked.Do(func() { st.checkErr = s.Preflight(ctx, req.Model) })
	if st.checkErr != nil {
		return nil, st.checkErr
	}
	var hold *claimHold
	if cl, ok := s.cache.(Claimer); ok && !st.info.Local {
		// Another process sharing the cache may be sending the same
		// request: take the claim, or wait for its answer.
		var got *Response
		got, hold, err = s.claim(ctx, cl, key)
		if err != nil || got != nil {
			return got, err
		}
		defer hold.end()
	}
	release, err := s.reserve(req)
	if err != nil {
		return nil, err
	}
	resp, err := s.answer(ctx, st, key, req)
	release(resp)
	if err != nil {
		return nil, err
	}
	if s.cache != nil {
		entry.Response = resp
		// The answer is paid for: keep it even if the caller gave up
		// meanwhile, so a rerun does not pay again.
		if ar, ok := s.cache.(AnswerReleaser); ok && hold != nil {
			// The answer stored and the claim dropped in one write.
			hold.stop()
			if err := ar.PutReleasing(context.WithoutCancel(ctx), entry, s.owner); err != nil {
				return nil, fmt.Errorf("cache: %w", err)
			}
			hold.released = true
		} else if err := s.cache.Put(context.WithoutCancel(ctx), entry); err != nil {
			return nil, fmt.Errorf("cache: %w", err)
		}
	}
	return resp, nil
}

// ClaimTTL is how long a claim on a request lasts without renewal; the
// process holding it renews it every third of that while it sends, so a
// process that dies frees its claims within ClaimTTL.
var ClaimTTL = time.Minute

// claimPoll bounds the wait between looks for another process's answer.
const claimPoll = 2 * time.Second

// claim takes the cross-process claim on key, renewing it until done is
// called; or, while another process holds it, waits for that process's
// answer and returns it (counted as shared). If the other process dies,
// its claim is dropped at once when it ran on this machine (owners are
// host/pid/random), else it expires and this one takes it.
func (s *Service) claim(ctx context.Context, cl Claimer, key string) (resp *Response, hold *claimHold, err error) {
	wait := 50 * time.Millisecond
	for {
		ok, err := cl.Claim(ctx, key, s.owner, time.Now().Add(ClaimTTL))
		if err != nil {
			return nil, nil, fmt.Errorf("cache: claim %.12s: %w", key, err)
		}
		if ok {
			break
		}
		if h, isHolder := cl.(ClaimHolder); isHolder {
			// A claim of a process of this machine that has died is
			// dropped now: its run was killed, and no answer will come.
			if owner, err := h.Holder(ctx, key); err == nil && owner != "" && deadHere(owner) {
				if err := cl.Release(ctx, key, owner); err == nil {
					continue
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, claimPoll)
		got, err := s.stored(ctx, key)
		if err != nil {
			return nil, nil, fmt.Errorf("cache: %w", err)
		}
		if got != nil {
			s.count(func(r *RunStats) { r.Shared++ })
			r := *got
			r.Cached = true
			return &r, nil, nil
		}
	}
	// The answer may have arrived between the cache read and the claim
	// (unless the cache is not to be read: --no-cache sends again).
	if got, err := s.stored(ctx, key); err == nil && got != nil && !s.opt.NoCacheReads {
		cl.Release(context.WithoutCancel(ctx), key, s.owner)
		s.count(func(r *RunStats) { r.CacheHits++ })
		r := *got
		r.Cached = true
		return &r, nil, nil
	}
	stop := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(ClaimTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				cl.Claim(context.WithoutCancel(ctx), key, s.owner, time.Now().Add(ClaimTTL))
			}
		}
	}()
	return nil, &claimHold{stop: sync.OnceFunc(func() {
		close(stop)
		<-renewed
	}), release: func() { cl.Release(context.WithoutCancel(ctx), key, s.owner) }}, nil
}

// claimHold is a claim taken: stop ends its renewal; end stops it and
// releases it, unless the answer's write released it already.
type claimHold struct {
	stop     func()
	release  func()
	released bool
}

func (h *claimHold) end() {
	h.stop()
	if !h.released {
		h.release()
	}
}

// stored is the answer the cache holds for key, or nil: read alone where
// the cache can (a hit needs no stored request).
func (s *Service) stored(ctx context.Context, key string) (*Response, error) {
	if rr, ok := s.cache.(ResponseReader); ok {
		return rr.ReadResponse(ctx, key)
	}
	e, err := s.cache.Get(ctx, key)
	if err != nil || e == nil {
		return nil, err
	}
	return e.Response, nil
}

// answer sends a request, with retries, then checks its schema and asks
// once more when the answer does not fit.
func (s *Service) answer(ctx context.Context, st *providerState, key string, req *Request) (*Response, error) {
	_, name, _ := ParseModel(req.Model)
	resp, err := s.send(ctx, st, name, key, req)
	if err != nil {
		return nil, err
	}
	s.count(func(r *RunStats) { r.Sent++ })
	if req.Schema != nil {
		js, verr := Validate(req.Schema.JSON, answerText(resp))
		if verr != nil {
			s.count(func(r *RunStats) { r.Repairs++ })
			repair, err := repairRequest(req, answerText(resp), verr)
			if err != nil {
				return nil, err
			}
			second, err := s.send(ctx, st, name, key, repair)
			if err != nil {
				return nil, err
			}
			second.Attempts += resp.Attempts
			second.Usage = second.Usage.Add(resp.Usage)
			second.Latency += resp.Latency
			resp = second
			js, verr = Validate(req.Schema.JSON, answerText(resp))
		}
		if verr != nil {
			resp.Invalid, resp.ParseError, resp.JSON = true, verr.Error(), nil
			s.count(func(r *RunStats) { r.Invalid++ })
		} else {
			resp.JSON = js
		}
	}
	if u := resp.Usage; u.InputTokens < 0 || u.OutputTokens < 0 || u.CachedTokens < 0 ||
		u.InputTokens > MaxUsageTokens || u.OutputTokens > MaxUsageTokens || u.CachedTokens > MaxUsageTokens {
		// A usage report no call can have: keep the answer (it was paid
		// for), but believe none of its counts.
		resp.Usage = Usage{}
		s.count(func(r *RunStats) { r.BadUsage++ })
	}
	resp.Cost, resp.Priced = s.opt.Prices.Cost(req.Model, resp.Usage, false)
	s.count(func(r *RunStats) {
		r.Usage = r.Usage.Add(resp.Usage)
		r.Cost += resp.Cost
		if !resp.Priced {
			r.Unpriced++
		}
	})
	return resp, nil
}

// answerText is what schema checking reads: the structured answer when the
// provider gave one, else the text.
func answerText(r *Response) string {
	if len(r.JSON) > 0 {
		return string(r.JSON)
	}
	return r.Text
}

//go:embed prompts/repair.txt
var repairPrompt string

var repairTmpl = template.Must(template.New("repair").Parse(repairPrompt))

// RenderRepair renders the message that asks a model to fix an answer that
// failed its schema.
func RenderRepair(schemaName string, problem error) (string, error) {
	var b bytes.Buffer
	err := repairTmpl.Execute(&b, struct{ SchemaName, Error string }{schemaName, problem.Error()})
	return strings.TrimSpace(b.String()), err
}

func repairRequest(req *Request, bad string, problem error) (*Request, error) {
	msg, err := RenderRepair(req.Schema.Name, problem)
	if err != nil {
		return nil, err
	}
	r := *req
	r.Messages = append(append([]Message(nil), req.Messages...),
		Message{Role: Assistant, Content: bad}, Message{Role: User, Content: msg})
	return &r, nil
}

// send makes up to MaxAttempts calls, backing off between them.
func (s *Service) send(ctx context.Context, st *providerState, name, key string, req *Request) (*Response, error) {
	var last error
	for attempt := 1; attempt <= s.opt.MaxAttempts; attempt++ {
		resp, err := s.attempt(ctx, st, name, req)
		s.count(func(r *RunStats) { r.Attempts++ })
		if err == nil {
			resp.Attempts = attempt
			return resp, nil
		}
		last = err
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !retryable(ctx, err) || attempt == s.opt.MaxAttempts {
			break
		}
		s.count(func(r *RunStats) { r.Retries++ })
		wait := s.backoff(attempt, err)
		if s.opt.OnRetry != nil {
			s.opt.OnRetry(Retry{Model: req.Model, Key: key, Attempt: attempt, MaxAttempts: s.opt.MaxAttempts, Err: err, Wait: wait})
		}
		if err := s.opt.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
	n := s.opt.MaxAttempts
	if !retryable(ctx, last) {
		return nil, fmt.Errorf("%s request %.12s: %w", req.Model, key, last)
	}
	return nil, fmt.Errorf("%s request %.12s: gave up after %d attempts (%w): %w", req.Model, key, n, ErrTransient, last)
}

// backoff is exponential with full jitter, but never shorter than what
// the server asked for.
func (s *Service) backoff(attempt int, err error) time.Duration {
	ceil := float64(s.opt.BaseBackoff) * math.Pow(2, float64(attempt-1))
	ceil = math.Min(ceil, float64(s.opt.MaxBackoff))
	s.mu.Lock()
	d := time.Duration(s.rng.Float64() * ceil)
	s.mu.Unlock()
	var api *APIError
	if errors.As(err, &api) && api.RetryAfter > d {
		d = api.RetryAfter
	}
	return min(d, s.opt.MaxWait)
}

// attempt makes one call within the provider's limits and the per-call
// timeout.
func (s *Service) attempt(ctx context.Context, st *providerState, name string, req *Request) (*Response, error) {
	select {
	case st.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-st.sem }()
	if st.rpm != nil {
		if err := st.rpm.Wait(ctx); err != nil {
			return nil, err
		}
	}
	if st.tpm != nil {
		if err := st.tpm.WaitN(ctx, min(estimateTokens(req), st.tpm.Burst())); err != nil {
			return nil, err
		}
	}
	actx, cancel := context.WithTimeout(ctx, s.opt.Timeout)
	defer cancel()
	start := time.Now()
	resp, err := st.provider.Complete(actx, name, req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, fmt.Errorf("no answer within %v: %w", s.opt.Timeout, err)
		}
		return nil, err
	}
	if resp.Latency == 0 {
		resp.Latency = time.Since(start)
	}
	return resp, nil
}

// estimateTokens is a worst-case guess of a request's tokens: its
// characters over four, plus the answer bound.
func estimateTokens(req *Request) int {
	chars := 0
	for _, m := range req.Messages {
		chars += len(m.Content)
	}
	if req.Schema != nil {
		chars += len(req.Schema.JSON)
	}
	out := req.MaxTokens
	if out <= 0 {
		out = DefaultMaxTokens
	}
	return chars/4 + 1 + out
}

// Dollars formats an amount of money with the digits it needs: cents
// from a dollar up, else four significant digits ($0.0001, $0.01234), so
// a small budget never prints as $0.00.
func Dollars(v float64) string {
	switch {
	case v == 0:
		return "$0"
	case math.Abs(v) >= 1:
		return fmt.Sprintf("$%.2f", v)
	}
	d := int(-math.Floor(math.Log10(math.Abs(v)))) + 3
	t := strings.TrimRight(strconv.FormatFloat(v, 'f', d, 64), "0")
	return "$" + strings.TrimSuffix(t, ".")
}

// reserve holds the worst-case cost of a call against the budget. The
// returned function releases it and books the actual cost.
func (s *Service) reserve(req *Request) (func(*Response), error) {
	if s.opt.MaxCost <= 0 {
		return func(*Response) {}, nil
	}
	p, ok := s.opt.Prices.Lookup(req.Model)
	if !ok {
		return nil, Fatal(fmt.Errorf("%w: %s has none; add it to the price table", ErrNoPrice, req.Model))
	}
	in := float64(estimateTokens(req) - max(req.MaxTokens, 0))
	out := float64(req.MaxTokens)
	if out <= 0 {
		out = DefaultMaxTokens
	}
	// A schema repair can double the call.
	worst := (in*p.Input + out*p.Output) / 1e6
	if req.Schema != nil {
		worst *= 2
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spent+s.reserved+worst > s.opt.MaxCost {
		return nil, fmt.Errorf("%w: %s spent, %s in flight, and the next call may cost up to %s (budget %s)",
			ErrBudget, Dollars(s.spent), Dollars(s.reserved), Dollars(worst), Dollars(s.opt.MaxCost))
	}
	s.reserved += worst
	return func(r *Response) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.reserved -= worst
		if r != nil {
			s.spent += r.Cost
		}
	}, nil
}
