package acr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
)

// Config is one round's settings.
type Config struct {
	Round int
	// Generator, JudgeModel and CriticModel are models as PROVIDER:NAME.
	Generator, JudgeModel, CriticModel string
	// System is the generator's system prompt ("" for none).
	System      string
	N           int
	Temperature float64
	MaxTokens   int
	Pointwise   *judge.Spec
	Pairwise    *judge.Spec
	Weights     Weights
	ExecWeight  float64
	Ties        Side
	// Concurrency is the number of model requests in flight; Executions the
	// number of sandboxed runs at once.
	Concurrency, Executions int
	// Progress, when set, is told how far each stage is.
	Progress func(stage string, done, total int)
}

func (c *Config) norm() error {
	switch {
	case c.N < 1:
		return fmt.Errorf("n: want at least 1 sample per instruction")
	case c.Pointwise == nil || c.Pointwise.Kind != judge.Pointwise:
		return fmt.Errorf("the scoring judge must be a pointwise judge")
	case c.Pairwise == nil || c.Pairwise.Kind != judge.Pairwise:
		return fmt.Errorf("the comparing judge must be a pairwise judge")
	case c.ExecWeight < 0 || c.ExecWeight > 1:
		return fmt.Errorf("exec weight: want 0 to 1, not %g", c.ExecWeight)
	case c.Ties != Sample && c.Ties != Reference:
		return fmt.Errorf("ties: want sample or reference")
	}
	if c.Weights == nil {
		c.Weights = Weights{}
		for _, cr := range c.Pointwise.Criteria {
			c.Weights[cr.Name] = 1
		}
	}
	if c.Round < 1 {
		c.Round = 1
	}
	if c.Concurrency < 1 {
		c.Concurrency = 8
	}
	if c.Executions < 1 {
		c.Executions = 2
	}
	if c.Progress == nil {
		c.Progress = func(string, int, int) {}
	}
	return nil
}

// SampleResult is one sampled answer and what was found about it.
type SampleResult struct {
	Index        int            `json:"index"` // 1-based: the request's sample index
	Answer       string         `json:"-"`
	Code         string         `json:"-"`
	Exec         *Execution     `json:"exec,omitempty"`
	Scores       map[string]int `json:"scores,omitempty"`
	Judged       float64        `json:"judged"`
	JudgedValid  bool           `json:"judged_valid"`
	Composite    float64        `json:"composite"`
	ModelVersion string         `json:"-"`
	JudgeVersion string         `json:"-"`
}

// Item is one instruction's round.
type Item struct {
	Instruction *Instruction
	Samples     []*SampleResult
	// Best indexes Samples (-1 before scoring).
	Best      int
	RefExec   *Execution
	Judgement Judgement
	Decision  Decision
	Critique  string
	// CritiqueError is set when the critic's answer could not be read; the
	// record is then left out of the dataset (and counted).
	CritiqueError string
	// Versions are the model versions that answered, by role.
	Versions map[string]string
}

// Branch is the record's form in the dataset.
func (it *Item) Branch() string {
	switch {
	case it.Decision.Winner == Sample:
		return "single_turn"
	case it.Critique != "":
		return "critique"
	}
	return "skipped"
}

// BestSample returns the chosen sample, or nil.
func (it *Item) BestSample() *SampleResult {
	if it.Best < 0 || it.Best >= len(it.Samples) {
		return nil
	}
	return it.Samples[it.Best]
}

// Round is a round in progress: its stages run in order, each to its end,
// so that an offline run stops at a stage boundary with the whole stage's
// requests pending.
type Round struct {
	cfg    Config
	client llm.Client
	exec   Executor
	Items  []*Item
}

// NewRound prepares a round over instructions.
func NewRound(cfg Config, client llm.Client, exec Executor, ins []*Instruction) (*Round, error) {
	if err := cfg.norm(); err != nil {
		return nil, err
	}
	r := &Round{cfg: cfg, client: client, exec: exec}
	for _, in := range ins {
		it := &Item{Instruction: in, Best: -1, Versions: map[string]string{}}
		for i := range cfg.N {
			it.Samples = append(it.Samples, &SampleResult{Index: i + 1})
		}
		r.Items = append(r.Items, it)
	}
	return r, nil
}

// Config returns the round's settings (with defaults filled in).
func (r *Round) Config() Config { return r.cfg }

// Run runs every stage: generate, execute, score, compare, critique. It
// returns an error wrapping llm.ErrPending when an offline stage left
// requests pending (rerun after the batch is imported), llm.ErrBudget when
// the budget ran out, or the failures of a stage.
func (r *Round) Run(ctx context.Context) error {
	for _, stage := range []func(context.Context) error{r.Generate, r.Execute, r.Score, r.Compare, r.Critique} {
		if err := stage(ctx); err != nil {
			return err
		}
	}
	return nil
}

// stageErr is the outcome of a model stage.
func stageErr(stage string, pending int, failed []error) error {
	if len(failed) > 0 {
		return fmt.Errorf("%s: %d model call(s) failed (answers so far are cached; rerun to retry): %w", stage, len(failed), errors.Join(failed[:min(3, len(failed))]...))
	}
	if pending > 0 {
		return fmt.Errorf("%s: %d request(s): %w", stage, pending, llm.ErrPending)
	}
	return nil
}

// each runs a stage's items through llm.ForEach.
func each(ctx context.Context, n, workers int, progress func(done int), fn func(ctx context.Context, i int) error) (pending int, failed []error, err error) {
	res, err := llm.ForEach(ctx, n, workers, progress, fn)
	return res.Pending, res.Failed, err
}

type slot struct {
	it *Item
	s  *SampleResult
}

func (r *Round) slots() []slot {
	var out []slot
	for _, it := range r.Items {
		for _, s := range it.Samples {
			out = append(out, slot{it, s})
		}
	}
	return out
}

// Generate samples n answers per instruction.
func (r *Round) Generate(ctx context.Context) error {
	slots := r.slots()
	var mu sync.Mutex
	pending, failed, err := each(ctx, len(slots), r.cfg.Concurrency, func(d int) { r.cfg.Progress("generate", d, len(slots)) },
		func(ctx context.Context, i int) error {
			sl := slots[i]
			if sl.s.Answer != "" {
				return nil
			}
			req := GeneratorRequest(r.cfg.Generator, r.cfg.System, sl.it.Instruction.Instruction, r.cfg.Temperature, r.cfg.MaxTokens, sl.s.Index)
			resp, err := r.client.Complete(ctx, req)
			if err != nil {
				return fmt.Errorf("instruction %s sample %d: %w", sl.it.Instruction.ID, sl.s.Index, err)
			}
			mu.Lock()
			sl.s.Answer, sl.s.ModelVersion = resp.Text, resp.ModelVersion
			sl.s.Code = ExtractCode(resp.Text, sl.it.Instruction.Language)
			mu.Unlock()
			return nil
		})
	if err != nil {
		return err
	}
	return stageErr("generate", pending, failed)
}

// Execute runs every sample's code and each reference's. Identical code for
// one instruction runs once.
func (r *Round) Execute(ctx context.Context) error {
	type job struct {
		it   *Item
		code string
		// ref and samples get the result.
		ref     bool
		samples []*SampleResult
	}
	var jobs []*job
	for _, it := range r.Items {
		if it.Instruction.Language == "" {
			continue
		}
		byCode := map[string]*job{}
		if it.RefExec == nil {
			j := &job{it: it, code: ExtractCode(it.Instruction.Reference, it.Instruction.Language), ref: true}
			byCode[j.code] = j
			jobs = append(jobs, j)
		}
		for _, s := range it.Samples {
			if s.Exec != nil {
				continue
			}
			j := byCode[s.Code]
			if j == nil {
				j = &job{it: it, code: s.Code}
				byCode[s.Code] = j
				jobs = append(jobs, j)
			}
			j.samples = append(j.samples, s)
		}
	}
	var mu sync.Mutex
	_, failed, err := each(ctx, len(jobs), r.cfg.Executions, func(d int) { r.cfg.Progress("execute", d, len(jobs)) },
		func(ctx context.Context, i int) error {
			j := jobs[i]
			e, err := r.exec.Run(ctx, j.it.Instruction, j.code)
			if err != nil {
				return fmt.Errorf("instruction %s: running code: %w", j.it.Instruction.ID, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if j.ref {
				j.it.RefExec = e
			}
			for _, s := range j.samples {
				c := *e
				s.Exec = &c
			}
			return nil
		})
	if err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("execute: %w", errors.Join(failed...))
	}
	return nil
}

// Score has the pointwise judge grade every sample and picks each
// instruction's best by composite score.
func (r *Round) Score(ctx context.Context) error {
	slots := r.slots()
	spec := r.cfg.Pointwise
	var mu sync.Mutex
	pending, failed, err := each(ctx, len(slots), r.cfg.Concurrency, func(d int) { r.cfg.Progress("score", d, len(slots)) },
		func(ctx context.Context, i int) error {
			sl := slots[i]
			req, err := spec.Request(r.cfg.JudgeModel, judge.Input{Instruction: sl.it.Instruction.Instruction, Candidate: sl.s.Answer})
			if err != nil {
				return err
			}
			resp, err := r.client.Complete(ctx, req)
			if err != nil {
				return fmt.Errorf("instruction %s sample %d: %w", sl.it.Instruction.ID, sl.s.Index, err)
			}
			v := spec.ParseAnswer(resp)
			mu.Lock()
			defer mu.Unlock()
			sl.s.JudgeVersion = resp.ModelVersion
			sl.s.Scores = v.Scores
			sl.s.Judged, sl.s.JudgedValid = 0, false
			if v.Outcome != judge.Invalid {
				sl.s.Judged, sl.s.JudgedValid = Judged(spec, r.cfg.Weights, v.Scores)
			}
			var works *bool
			if sl.s.Exec != nil {
				w := sl.s.Exec.Works()
				works = &w
			}
			sl.s.Composite = Composite(r.cfg.ExecWeight, works, sl.s.Judged, sl.s.JudgedValid)
			return nil
		})
	if err != nil {
		return err
	}
	if err := stageErr("score", pending, failed); err != nil {
		return err
	}
	for _, it := range r.Items {
		cs := make([]float64, len(it.Samples))
		for i, s := range it.Samples {
			cs[i] = s.Composite
		}
		it.Best = Best(cs)
		if b := it.BestSample(); b != nil {
			it.Versions["generator"], it.Versions["judge"] = b.ModelVersion, b.JudgeVersion
		}
	}
	return nil
}

// PairwiseRequests are the pairwise judge's two requests comparing an
// answer with the reference: the answer shown as A, then as B.
func PairwiseRequests(spec *judge.Spec, model string, in *Instruction, answer string) (sampleFirst, referenceFirst *llm.Request, err error) {
	if sampleFirst, err = spec.Request(model, judge.Input{Instruction: in.Instruction, AnswerA: answer, AnswerB: in.Reference}); err != nil {
		return nil, nil, err
	}
	referenceFirst, err = spec.Request(model, judge.Input{Instruction: in.Instruction, AnswerA: in.Reference, AnswerB: answer})
	return sampleFirst, referenceFirst, err
}

// Judge runs the pairwise judge in both orders on an answer against the
// instruction's reference and combines the two.
func Judge(ctx context.Context, client llm.Client, spec *judge.Spec, model string, in *Instruction, answer string) (Judgement, string, error) {
	return JudgeAnswers(ctx, client, spec, model, in, answer, in.Reference)
}

// JudgeAnswers runs the pairwise judge in both orders on two answers to
// an instruction (each takes either position once) and combines the two:
// the Judgement's Sample is answer, its Reference other.
func JudgeAnswers(ctx context.Context, client llm.Client, spec *judge.Spec, model string, in *Instruction, answer, other string) (Judgement, string, error) {
	ab, err := spec.Request(model, judge.Input{Instruction: in.Instruction, AnswerA: answer, AnswerB: other})
	if err != nil {
		return Judgement{}, "", err
	}
	ba, err := spec.Request(model, judge.Input{Instruction: in.Instruction, AnswerA: other, AnswerB: answer})
	if err != nil {
		return Judgement{}, "", err
	}
	var winners [2]string
	version := ""
	var errs []error
	for i, req := range []*llm.Request{ab, ba} {
		resp, err := client.Complete(ctx, req)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		version = resp.ModelVersion
		if v := spec.ParseAnswer(resp); v.Outcome != judge.Invalid {
			winners[i] = v.Winner
		}
	}
	if len(errs) > 0 {
		return Judgement{}, version, errors.Join(errs...)
	}
	return Combine(winners[0], winners[1]), version, nil
}

// Compare judges each instruction's best sample against its reference in
// both orders and decides the winner.
func (r *Round) Compare(ctx context.Context) error {
	var mu sync.Mutex
	pending, failed, err := each(ctx, len(r.Items), r.cfg.Concurrency, func(d int) { r.cfg.Progress("compare", d, len(r.Items)) },
		func(ctx context.Context, i int) error {
			it := r.Items[i]
			best := it.BestSample()
			if best == nil {
				return nil
			}
			j, version, err := Judge(ctx, r.client, r.cfg.Pairwise, r.cfg.JudgeModel, it.Instruction, best.Answer)
			if err != nil {
				return fmt.Errorf("instruction %s: %w", it.Instruction.ID, err)
			}
			var sw, rw *bool
			if best.Exec != nil && it.RefExec != nil {
				s, ref := best.Exec.Works(), it.RefExec.Works()
				sw, rw = &s, &ref
			}
			mu.Lock()
			it.Judgement = j
			it.Decision = Decide(sw, rw, j, r.cfg.Ties)
			it.Versions["pairwise"] = version
			mu.Unlock()
			return nil
		})
	if err != nil {
		return err
	}
	return stageErr("compare", pending, failed)
}

// Critique has the critic write, for every instruction the reference won,
// why the best sample falls short of it.
func (r *Round) Critique(ctx context.Context) error {
	var todo []*Item
	for _, it := range r.Items {
		if it.Decision.Winner == Reference && it.BestSample() != nil {
			todo = append(todo, it)
		}
	}
	var mu sync.Mutex
	pending, failed, err := each(ctx, len(todo), r.cfg.Concurrency, func(d int) { r.cfg.Progress("critique", d, len(todo)) },
		func(ctx context.Context, i int) error {
			it := todo[i]
			best := it.BestSample()
			in := CriticInput{Instruction: it.Instruction.Instruction, Answer: best.Answer, Reference: it.Instruction.Reference}
			if best.Exec != nil && !best.Exec.Works() {
				in.TestResult = best.Exec.Summary()
			}
			req, err := CriticRequest(r.cfg.CriticModel, in)
			if err != nil {
				return err
			}
			resp, err := r.client.Complete(ctx, req)
			if err != nil {
				return fmt.Errorf("instruction %s: %w", it.Instruction.ID, err)
			}
			c, why := ParseCritique(resp)
			mu.Lock()
			it.Critique, it.CritiqueError = c, why
			it.Versions["critic"] = resp.ModelVersion
			mu.Unlock()
			return nil
		})
	if err != nil {
		return err
	}
	return stageErr("critique", pending, failed)
}

// Plan adds the round's model calls to p, sending nothing and running
// nothing: the generator's requests exactly (checked against the cache);
// the scores exactly when the cache holds every sample, else at most one
// per sample; the pairwise judge's two per instruction and the critic's at
// most one per instruction as bounds, since they depend on which sample
// wins. Bounds price each unseen answer at the generator's max tokens.
func (r *Round) Plan(ctx context.Context, p *llm.Plan, cache llm.Cache) error {
	c := r.cfg
	slots := r.slots()
	gen := make([]*llm.Request, len(slots))
	for i, sl := range slots {
		gen[i] = GeneratorRequest(c.Generator, c.System, sl.it.Instruction.Instruction, c.Temperature, c.MaxTokens, sl.s.Index)
	}
	if err := p.Exact(ctx, cache, "generator", "generate", gen); err != nil {
		return err
	}
	answers := make([]string, len(gen))
	known := true
	for i, req := range gen {
		key, err := llm.Key(req)
		if err != nil {
			return err
		}
		e, err := cache.Get(ctx, key)
		if err != nil {
			return err
		}
		if e == nil || e.Response == nil {
			known = false
			break
		}
		answers[i] = e.Response.Text
	}
	// An answer as long as the generator may write (about four characters
	// a token).
	maxTokens := c.MaxTokens
	if maxTokens <= 0 {
		maxTokens = llm.DefaultMaxTokens
	}
	long := strings.Repeat("x ", 2*maxTokens)
	score := make([]*llm.Request, len(slots))
	var scoreTokens int64
	for i, sl := range slots {
		answer := long
		if known {
			answer = answers[i]
		}
		req, err := c.Pointwise.Request(c.JudgeModel, judge.Input{Instruction: sl.it.Instruction.Instruction, Candidate: answer})
		if err != nil {
			return err
		}
		score[i], scoreTokens = req, scoreTokens+llm.InputTokens(req)
	}
	if known {
		if err := p.Exact(ctx, cache, "judge", "score", score); err != nil {
			return err
		}
	} else if len(score) > 0 {
		p.Bound("judge", "score", score[0], len(score), scoreTokens)
	}
	var cmpTokens, critTokens int64
	var cmpLike, critLike *llm.Request
	for _, it := range r.Items {
		ab, ba, err := PairwiseRequests(c.Pairwise, c.JudgeModel, it.Instruction, long)
		if err != nil {
			return err
		}
		cmpLike, cmpTokens = ab, cmpTokens+llm.InputTokens(ab)+llm.InputTokens(ba)
		cr, err := CriticRequest(c.CriticModel, CriticInput{Instruction: it.Instruction.Instruction, Answer: long,
			Reference: it.Instruction.Reference, TestResult: strings.Repeat("x", 2000)})
		if err != nil {
			return err
		}
		critLike, critTokens = cr, critTokens+llm.InputTokens(cr)
	}
	if len(r.Items) > 0 {
		p.Bound("judge", "compare", cmpLike, 2*len(r.Items), cmpTokens)
		p.Bound("critic", "critique", critLike, len(r.Items), critTokens)
	}
	return nil
}
