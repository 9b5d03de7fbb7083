package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gavelhq/gavel/record"

	"github.com/spf13/pflag"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/llm/anthropic"
	"github.com/gavelhq/gavel/llm/openai"
	"github.com/gavelhq/gavel/sim"
	"github.com/gavelhq/gavel/store"
)

// registry lists the model providers gavel knows.
func registry() *llm.Registry {
	r := llm.NewRegistry()
	for _, info := range []llm.ProviderInfo{openai.Info, openai.AzureInfo, anthropic.Info, anthropic.BedrockInfo, anthropic.VertexInfo} {
		r.Register(info)
	}
	r.Register(sim.Info)
	return r
}

// modelFlags are the flags of every command that calls models.
type modelFlags struct {
	// opts are the service's options the flags set (limits, retries,
	// offline, the budget); service adds the rest.
	opts      llm.Options
	model     string
	simOnReal bool
	baseURL   string
	prices    string
	dryRun    bool
	batch     bool
	batchPoll time.Duration
	// queue runs the command through the work queue, as queueMode says.
	queue     bool
	queueMode queueMode
	q         queueFlags
}

// register adds the model flags to fl, as use says (commands register them
// through withModel, which also runs them through the rounds driver).
func (m *modelFlags) register(fl *pflag.FlagSet, use modelUse) {
	m.queueMode = use.queue
	modelUsage := "model as PROVIDER:NAME: openai:NAME (any OpenAI-compatible server), anthropic:NAME, azure:DEPLOYMENT, bedrock:MODEL-ID, vertex:MODEL, or sim (the simulated model); required (env GAVEL_MODEL)"
	model := os.Getenv("GAVEL_MODEL")
	if use.modelUsage != "" {
		modelUsage = use.modelUsage
	}
	if use.optional {
		model = ""
	}
	fl.StringVar(&m.model, "model", model, modelUsage)
	fl.BoolVar(&m.simOnReal, "sim-on-real", false, "let the simulated model (sim) judge records the simulated world did not make; its outputs say so, and are no evidence about any real model")
	fl.StringVar(&m.baseURL, "base-url", "", "base URL of the model's server, e.g. http://127.0.0.1:8000/v1 for vLLM (default OPENAI_BASE_URL or ANTHROPIC_BASE_URL, else the provider's)")
	m.registerLimits(fl)
	fl.BoolVar(&m.opts.Offline, "offline", false, "send nothing: record cache misses as pending and stop (exit 3); see 'gavel batch'")
	fl.BoolVar(&m.opts.NoCacheReads, "no-cache", false, "do not read answers from the cache (they are still written)")
	fl.Float64Var(&m.opts.MaxCost, "max-cost", 0, "stop before spending more than this many US dollars (exit 3; rerun to resume)")
	fl.BoolVar(&m.batch, "batch", false, "run through the providers' batch APIs, stage by stage: each stage's requests go out as one batch (half price), and the command goes on when it has ended")
	fl.DurationVar(&m.batchPoll, "batch-poll", time.Minute, "with --batch, how often to ask whether a batch has ended")
	queueUsage := "spread the work over 'gavel worker' processes through the store's work queue (PostgreSQL): each stage's model calls become units; this command works units too"
	if use.queueUsage != "" {
		queueUsage = use.queueUsage
	}
	fl.BoolVar(&m.queue, "queue", false, queueUsage)
	m.q.register(fl)
	fl.BoolVar(&m.dryRun, "dry-run", false, "send nothing: print the calls by role and stage, how many the cache answers, the estimated tokens and the cost range (judge, eval, teach, calibrate, acr)")
}

// registerLimits adds the flags of how calls go out: limits, retries and
// prices (the worker's model flags).
func (m *modelFlags) registerLimits(fl *pflag.FlagSet) {
	fl.IntVar(&m.opts.Concurrency, "concurrency", 8, "model calls in flight per provider")
	fl.IntVar(&m.opts.RequestsPerMinute, "rpm", 0, "requests per minute per provider (0: no limit)")
	fl.IntVar(&m.opts.TokensPerMinute, "tpm", 0, "tokens per minute per provider, estimated before each call (0: no limit)")
	fl.IntVar(&m.opts.MaxAttempts, "max-attempts", 6, "HTTP calls per request, retries included")
	fl.DurationVar(&m.opts.Timeout, "timeout", 5*time.Minute, "time limit of one call")
	fl.StringVar(&m.prices, "prices", os.Getenv("GAVEL_PRICES"), "price table overriding the built-in one (JSON; env GAVEL_PRICES)")
}

// errNoModel is the usage error of a command run without a model.
var errNoModel = usagef("--model is required (or set GAVEL_MODEL): PROVIDER:NAME such as openai:gpt-4o, anthropic:claude-sonnet-4-5, " +
	"or sim for gavel's simulated world (a test double, for simulated records)")

// checkRecords refuses to let the simulated model judge records that the
// simulated world did not make, unless --sim-on-real asks for it: its
// verdicts on real data would only look like a model's.
// also are further models of the command (teacher, editor).
func (m *modelFlags) checkRecords(rs []*record.Record, also ...string) error {
	if m.simOnReal {
		return nil
	}
	for _, model := range append([]string{m.model}, also...) {
		if !isSim(model) {
			continue
		}
		for _, r := range rs {
			if !sim.IsSimulated(r) {
				return usagef("%s is gavel's simulated model, and record %q was not made by the simulated world: "+
					"its answers would be no evidence about any model. Give a real model, or --sim-on-real to try the machinery anyway", model, r.ID)
			}
		}
	}
	return nil
}

// service builds the model service over the store's cache.
func (m *modelFlags) service(db store.Store, reg *llm.Registry) (*llm.Service, error) {
	if strings.TrimSpace(m.model) == "" {
		return nil, errNoModel
	}
	if m.dryRun {
		return nil, usagef("--dry-run is not available for this command (it is for judge, eval, teach, calibrate and acr)")
	}
	provider, _, err := llm.ParseModel(m.model)
	if err != nil {
		return nil, usageError{err}
	}
	if _, err := reg.Info(provider); err != nil {
		return nil, usageError{fmt.Errorf("--model: %w", err)}
	}
	if m.opts.Concurrency < 1 || m.opts.MaxAttempts < 1 || m.opts.RequestsPerMinute < 0 || m.opts.TokensPerMinute < 0 || m.opts.MaxCost < 0 || m.opts.Timeout <= 0 {
		return nil, usagef("--concurrency, --max-attempts and --timeout must be positive; --rpm, --tpm and --max-cost not negative")
	}
	prices, err := llm.LoadPrices(m.prices)
	if err != nil {
		return nil, err
	}
	opts := m.opts
	opts.Providers, opts.Prices = map[string]llm.ProviderConfig{}, prices
	opts.OnRetry = func(r llm.Retry) {
		fmt.Fprintf(os.Stderr, "gavel: %s request %.12s: attempt %d of %d failed (%v); trying again in %s\n",
			r.Model, r.Key, r.Attempt, r.MaxAttempts, r.Err, r.Wait.Round(time.Millisecond))
	}
	if m.baseURL != "" {
		opts.Providers[provider] = llm.ProviderConfig{BaseURL: m.baseURL}
	}
	return llm.NewService(reg, db.Cache(), opts), nil
}

// modelRouter routes each model to a service built from m's settings, at
// the base URL it is routed to.
func modelRouter(db store.Store, reg *llm.Registry, m modelFlags) *llm.Router {
	return &llm.Router{New: func(model, baseURL string) (*llm.Service, error) {
		mf := m
		mf.model, mf.baseURL = model, baseURL
		return mf.service(db, reg)
	}}
}
