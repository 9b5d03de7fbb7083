package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/refine"
)

// The results below show what the store holds.

// PromptList is stored prompt versions (prompts list); marshalled, a JSON
// array.
type PromptList []*judge.PromptVersion

// WriteText writes a table of the versions.
func (l PromptList) WriteText(w io.Writer) error {
	p := &printer{w: w}
	tw := p.table(false)
	fmt.Fprintln(tw, "HASH\tJUDGE\tITER\tPARENT\tTRAIN PI\tVAL PI\tEDITS\tCREATED")
	for _, v := range l {
		metric := func(k string) string {
			if m, ok := v.Metrics[k]; ok {
				return fmt.Sprintf("%.3f", m)
			}
			return "-"
		}
		fmt.Fprintf(tw, "%.12s\t%s\t%d\t%.12s\t%s\t%s\t%d\t%s\n", v.Hash, v.Judge, v.Iteration, v.Parent, metric("train_scott_pi"), metric("val_scott_pi"), len(v.Edits), v.CreatedAt)
	}
	p.flush(tw)
	return p.err
}

// PromptResult is one stored prompt version (prompts show).
type PromptResult struct {
	ResultVersion int `json:"result_version"`
	*judge.PromptVersion
}

// WriteText writes the version's lineage, edits and prompt.
func (r *PromptResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	p.f("version %s of %s (iteration %d, parent %.12s)\n", r.Hash, r.Judge, r.Iteration, r.Parent)
	for _, e := range r.Edits {
		p.f("edit: %s\n", e)
	}
	if r.Note != "" {
		p.f("note: %s\n", r.Note)
	}
	p.f("\n%s", refine.PromptText(r.Spec))
	return p.err
}

// WriteText writes a table of the tokens.
func (r *TokensResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	tw := p.table(false)
	fmt.Fprintln(tw, "id\tscope\tname\tcreated\trevoked")
	for _, t := range r.Tokens {
		revoked := "-"
		if !t.RevokedAt.IsZero() {
			revoked = t.RevokedAt.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.ID, t.Scope, t.Name, t.CreatedAt.Format(time.RFC3339), revoked)
	}
	p.flush(tw)
	return p.err
}

// WriteText writes a table of the outcome versions.
func (r *OutcomesResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	tw := p.table(false)
	fmt.Fprintln(tw, "version\tstatus\tlabel\tat\trecorded\tby\treason")
	for _, v := range r.Outcomes {
		at := "-"
		if !v.Outcome.At.IsZero() {
			at = v.Outcome.At.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Version, v.Outcome.Status, v.Outcome.Label, at,
			v.RecordedAt.Format(time.RFC3339), v.Origin, v.Outcome.Reason)
	}
	p.flush(tw)
	return p.err
}

// CacheStatsResult is the model cache's content (cache stats).
type CacheStatsResult struct {
	ResultVersion int `json:"result_version"`
	*llm.CacheStats
}

// WriteText writes a table by model and the pending requests.
func (r *CacheStatsResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	tw := p.table(true)
	fmt.Fprintln(tw, "model\tanswers\tunreadable\tpending\thits\tinput tokens\toutput tokens\tcost $\tsaved $\t")
	for _, m := range r.ByModel {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.4f\t%.4f\t\n", m.Model, m.Entries, m.Invalid, m.Pending, m.Hits, m.InputTokens, m.OutputTokens, m.Cost, m.SavedCost)
	}
	fmt.Fprintf(tw, "total\t%d\t%d\t%d\t%d\t%d\t%d\t%.4f\t%.4f\t\n", r.Entries, r.Invalid, r.Pending, r.Hits, r.InputTokens, r.OutputTokens, r.Cost, r.SavedCost)
	p.flush(tw)
	if r.Pending > 0 {
		p.f("%d request(s) pending: gavel batch export --pending\n", r.Pending)
	}
	return p.err
}

// CacheClearResult is what `gavel cache clear` removed (or would remove).
type CacheClearResult struct {
	ResultVersion int `json:"result_version"`
	*llm.CacheCleared
}

// ClearCache clears the cache's entries that meet every condition given:
// c's, the model's (normalized by the caller) and before's (a date,
// 2026-11-30, or an RFC 3339 time).
func ClearCache(ctx context.Context, cache llm.Cache, c llm.CacheClear, model, before string) (*CacheClearResult, error) {
	cl, ok := cache.(llm.Clearer)
	if !ok {
		return nil, errors.New("this store's cache cannot be cleared")
	}
	c.Model = model
	if before != "" {
		t, err := time.Parse(time.DateOnly, before)
		if err != nil {
			if t, err = time.Parse(time.RFC3339, before); err != nil {
				return nil, deploy.FieldErrorf("before", "%q: want a date (2026-11-30) or an RFC 3339 time (2026-11-30T12:00:00Z)", before)
			}
		}
		c.Before = t
	}
	res, err := cl.Clear(ctx, c)
	if err != nil {
		return nil, err
	}
	return &CacheClearResult{ResultVersion: ResultVersion, CacheCleared: res}, nil
}

// WriteText says what went, by model.
func (r *CacheClearResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	verb := "removed"
	if r.DryRun {
		verb = "would remove (dry run)"
	}
	p.f("%s %d answer(s), %d of them unreadable, and %d pending request(s); records and verdicts are untouched\n", verb, r.Answers, r.Invalid, r.Pending)
	if len(r.ByModel) > 0 {
		tw := p.table(true)
		fmt.Fprintln(tw, "model\tanswers\tunreadable\tpending\t")
		for _, m := range r.ByModel {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t\n", m.Model, m.Answers, m.Invalid, m.Pending)
		}
		p.flush(tw)
	}
	return p.err
}

// BatchImportResult is what importing batch result files did (batch
// import).
type BatchImportResult struct {
	ResultVersion int `json:"result_version"`
	*llm.BatchImport
}

// Add counts another file's import.
func (r *BatchImportResult) Add(b *llm.BatchImport) {
	t := r.BatchImport
	t.Lines += b.Lines
	t.Imported += b.Imported
	t.Invalid += b.Invalid
	t.Failed += b.Failed
	t.Unknown += b.Unknown
	t.Already += b.Already
	t.Failures = append(t.Failures, b.Failures...)
}

// WriteText writes the counts.
func (r *BatchImportResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	tw := p.table(false)
	fmt.Fprintf(tw, "imported\t%d\t(of which %d do not fit their schema and are kept as invalid answers)\n", r.Imported, r.Invalid)
	fmt.Fprintf(tw, "failed\t%d\t(still pending: export and run them again)\n", r.Failed)
	fmt.Fprintf(tw, "unknown ids\t%d\t(no such request in this store)\n", r.Unknown)
	fmt.Fprintf(tw, "already answered\t%d\t\n", r.Already)
	p.flush(tw)
	return p.err
}

// WriteText writes a table of the batches.
func (r *BatchStatusResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	tw := p.table(false)
	fmt.Fprintln(tw, "batch\tprovider\tstatus\trequests\tsucceeded\tfailed\tsubmitted\tcollected")
	for _, b := range r.Batches {
		col := "-"
		if !b.CollectedAt.IsZero() {
			col = b.CollectedAt.Format("2006-01-02 15:04")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", b.ID, b.Provider, b.Status, b.Requests, b.Succeeded, b.Failed,
			b.SubmittedAt.Format("2006-01-02 15:04"), col)
	}
	p.flush(tw)
	return p.err
}

// LiveDriftResult is the service's drift monitor (drift --live).
type LiveDriftResult struct {
	ResultVersion int  `json:"result_version"`
	Simulated     bool `json:"simulated"`
	*deploy.DriftReport
}

// LiveDrift is the service's drift monitor read from its store.
func LiveDrift(ctx context.Context, st deploy.Store, judgeName, model, by string, resamples int, simulated bool) (*LiveDriftResult, error) {
	rep, err := deploy.Drift(ctx, st, judgeName, model, by, metrics.BootstrapOptions{Resamples: resamples, Seed: 1})
	if err != nil {
		return nil, err
	}
	return &LiveDriftResult{ResultVersion: ResultVersion, Simulated: simulated, DriftReport: rep}, nil
}

func figureLine(v metrics.Value, ci *metrics.Interval) string {
	if !v.Defined() {
		return "undefined (" + v.Undefined + ")"
	}
	if ci == nil {
		return fmt.Sprintf("%.3f", v.V)
	}
	return fmt.Sprintf("%.3f [%.3f, %.3f]", v.V, ci.Lo, ci.Hi)
}

// WriteText writes the windows, the baseline and the monitor's status.
func (r *LiveDriftResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	p.f("%sdrift of %s, active version %.12s, model %s\n", SimTag(r.Simulated), r.Judge, r.Version, r.Model)
	tw := p.table(false)
	fmt.Fprintf(tw, "%s from\toutcomes\tScott's pi [95%% interval]\n", r.By)
	for _, win := range r.Windows {
		fmt.Fprintf(tw, "%s\t%d\t%s\n", win.Start.Format("2006-01-02"), win.N, figureLine(win.Pi.Value, win.Pi.CI))
	}
	p.flush(tw)
	if r.Baseline != nil {
		p.f("baseline (test part at promotion): %s\n", figureLine(r.Baseline.Value, r.Baseline.CI))
	}
	p.f("%s\n", r.Status)
	return p.err
}

// ReviewAgreementResult is the blind reviews against the judge and the
// outcomes (agreement --reviews).
type ReviewAgreementResult struct {
	ResultVersion int  `json:"result_version"`
	Simulated     bool `json:"simulated"`
	*deploy.AgreementReport
}

// WriteText writes the counts and one line a pair.
func (r *ReviewAgreementResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	p.f("%s%d changes reviewed (%d reviews, %d split evenly and left out); judge %s, model %s\n",
		SimTag(r.Simulated), r.Reviewed, r.Reviews, r.Ties, r.Judge, r.Model)
	for _, pa := range r.Pairs {
		p.f("%s\n", pa)
	}
	return p.err
}

// DryRunResult is what a run would send (--dry-run); its field names are a
// contract.
type DryRunResult struct {
	ResultVersion int             `json:"result_version"`
	DryRun        bool            `json:"dry_run"`
	Lines         []*llm.PlanLine `json:"lines"`
	Total         llm.PlanLine    `json:"total"`
}

// NewDryRun is the plan's lines and total.
func NewDryRun(plan *llm.Plan) *DryRunResult {
	total := plan.Total()
	if plan.Lines == nil {
		plan.Lines = []*llm.PlanLine{} // a run that calls no model
	}
	return &DryRunResult{ResultVersion: ResultVersion, DryRun: true, Lines: plan.Lines, Total: total}
}

// WriteText writes a table of the calls by role and stage.
func (r *DryRunResult) WriteText(w io.Writer) error {
	p := &printer{w: w}
	tw := p.table(true)
	fmt.Fprintln(tw, "role\tstage\tmodel\tcalls\tcached\trepeats\tto send\tinput tokens\toutput tokens (max)\tcost\t")
	row := func(l *llm.PlanLine) {
		calls := fmt.Sprint(l.Calls)
		if !l.Exact {
			calls = "at most " + calls
		}
		cost := "no price"
		if l.Priced {
			cost = llm.Dollars(l.Cost.Low) + " to " + llm.Dollars(l.Cost.High)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t\n", l.Role, l.Stage, l.Model, calls, l.Cached, l.Repeats, l.ToSend,
			l.InputTokens, l.OutputTokensMax, cost)
	}
	for _, l := range r.Lines {
		row(l)
	}
	row(&r.Total)
	p.flush(tw)
	return p.err
}

// AskResult is one model call's answer (ask).
type AskResult struct {
	ResultVersion int             `json:"result_version"`
	Key           string          `json:"key"`
	Model         string          `json:"model"`
	Text          string          `json:"text"`
	JSON          json.RawMessage `json:"json,omitempty"`
	Invalid       bool            `json:"invalid"`
	ParseError    string          `json:"parse_error,omitempty"`
	Usage         llm.Usage       `json:"usage"`
	Cost          float64         `json:"cost_usd"`
	Priced        bool            `json:"priced"`
	LatencyMS     int64           `json:"latency_ms"`
	Cached        bool            `json:"cached"`
	Attempts      int             `json:"attempts"`
	ModelVersion  string          `json:"model_version,omitempty"`
}

// AskConfig is one question to a model.
type AskConfig struct {
	Model, System, Prompt string
	// Schema, when set, asks for a structured answer named SchemaName.
	Schema      []byte
	SchemaName  string
	Temperature *float64
	Seed        *int64
	MaxTokens   int
	Sample      int
}

// Ask asks the question through the client (its cache and limits).
func Ask(ctx context.Context, client llm.Client, cfg AskConfig) (*AskResult, error) {
	if strings.TrimSpace(cfg.Prompt) == "" {
		return nil, deploy.Errorf(deploy.Invalid, "the prompt is empty")
	}
	req := &llm.Request{Model: cfg.Model, MaxTokens: cfg.MaxTokens, Sample: cfg.Sample, Temperature: cfg.Temperature, Seed: cfg.Seed}
	if cfg.System != "" {
		req.Messages = append(req.Messages, llm.Message{Role: llm.System, Content: cfg.System})
	}
	req.Messages = append(req.Messages, llm.Message{Role: llm.User, Content: cfg.Prompt})
	if cfg.Schema != nil {
		if err := llm.CheckSchema(cfg.Schema); err != nil {
			return nil, deploy.FieldErrorf("schema", "%v", err)
		}
		req.Schema = &llm.Schema{Name: cfg.SchemaName, JSON: cfg.Schema}
	}
	key, err := llm.Key(req)
	if err != nil {
		return nil, deploy.Errorf(deploy.Invalid, "%v", err)
	}
	resp, err := client.Complete(ctx, req)
	if err != nil {
		return nil, err
	}
	return &AskResult{ResultVersion: ResultVersion, Key: key, Model: req.Model, Text: resp.Text, JSON: resp.JSON, Invalid: resp.Invalid,
		ParseError: resp.ParseError, Usage: resp.Usage, Cost: resp.Cost, Priced: resp.Priced,
		LatencyMS: resp.Latency.Milliseconds(), Cached: resp.Cached, Attempts: resp.Attempts, ModelVersion: resp.ModelVersion}, nil
}

// WriteText writes the answer: its JSON when it has one, else its text.
func (r *AskResult) WriteText(w io.Writer) error {
	text := r.Text
	if len(r.JSON) > 0 {
		text = string(r.JSON)
	}
	_, err := fmt.Fprintln(w, text)
	return err
}

// Usage is the call's usage, cost, latency and source in words.
func (r *AskResult) UsageText() string {
	from := "sent"
	if r.Cached {
		from = "from the cache, no call made"
	}
	cost := fmt.Sprintf("$%.6f", r.Cost)
	if !r.Priced {
		cost = "no price for this model"
	}
	s := fmt.Sprintf("%s: %d input tokens (%d cached), %d output tokens; %s; %d ms; %d attempt(s); %s",
		r.Model, r.Usage.InputTokens, r.Usage.CachedTokens, r.Usage.OutputTokens, cost, r.LatencyMS, r.Attempts, from)
	if r.Invalid {
		s += "\nthe answer does not fit the schema: " + r.ParseError
	}
	return s
}
