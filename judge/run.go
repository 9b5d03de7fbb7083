package judge

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
)

// Store keeps prompt versions and verdicts. It is defined here, where it is
// used; store/sqldb implements it.
type Store interface {
	// SavePrompt stores a prompt version (a no-op when it is stored).
	SavePrompt(ctx context.Context, p *PromptVersion) error
	// SaveVerdicts stores verdicts, replacing any of the same (record,
	// prompt, model).
	SaveVerdicts(ctx context.Context, vs []Verdict) error
	// Verdicts returns the stored verdicts of a prompt and model by record.
	Verdicts(ctx context.Context, prompt, model string) (map[string]Verdict, error)
}

// ErrVersionRef is a prompt version named by too short or an ambiguous
// prefix of its hash.
var ErrVersionRef = errors.New("not a unique prompt version")

// PromptVersion is a stored prompt: the spec as it was, with its lineage.
// Calibration fills Parent, Iteration and Note.
type PromptVersion struct {
	Hash      string `json:"hash"`
	Judge     string `json:"judge"`
	Spec      *Spec  `json:"spec"`
	Parent    string `json:"parent,omitempty"`
	Iteration int    `json:"iteration"`
	Note      string `json:"note,omitempty"`
	// Edits are the accepted edits that made this version from its parent.
	Edits []string `json:"edits,omitempty"`
	// Metrics are its figures where calibration measured them (e.g.
	// train_scott_pi, val_scott_pi).
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// CreatedAt is set by the store.
	CreatedAt string `json:"created_at,omitempty"`
}

// VersionOf returns the prompt version of a spec.
func VersionOf(s *Spec) *PromptVersion {
	return &PromptVersion{Hash: s.Version(), Judge: s.Name, Spec: s}
}

// RunOptions configure Run. Zero values: 8 workers, no progress.
type RunOptions struct {
	Concurrency int
	// Sample is the requests' sample index: another index asks the same
	// question again as a request of its own (its own cache entry), for a
	// test-retest of the judge's own noise.
	Sample int
	// Progress, when set, is called after each record with the number done.
	Progress func(done, total int)
}

// RunResult is what a run produced.
type RunResult struct {
	// Verdicts are in the records' order; records whose request is pending
	// or failed have none.
	Verdicts []Verdict
	// Pending counts requests left for a batch file (offline runs).
	Pending int
	// Failed holds the errors of requests that failed after their retries.
	Failed []error
}

// Run judges records with a model through client. A pending request
// (offline) or a failed one does not stop the others; the budget running
// out does (ErrBudget), and so does cancelling ctx. It returns what was
// judged in either case.
func Run(ctx context.Context, client llm.Client, s *Spec, model string, records []*record.Record, opt RunOptions) (*RunResult, error) {
	if s.Kind != Binary && s.Kind != Rubric {
		return nil, fmt.Errorf("judge %s is a %s judge: records are judged by binary and rubric judges", s.Name, s.Kind)
	}
	version := s.Version()
	verdicts := make([]*Verdict, len(records))
	var progress func(int)
	if opt.Progress != nil {
		progress = func(done int) { opt.Progress(done, len(records)) }
	}
	one := func(ctx context.Context, i int) (*Verdict, error) {
		req, err := s.Request(model, InputOf(records[i]))
		if err != nil {
			return nil, err
		}
		req.Sample = opt.Sample
		resp, err := client.Complete(ctx, req)
		return verdictOf(s, version, model, records[i].ID, req, resp, err, nil)
	}
	if p, ok := client.(llm.Preparer); ok {
		pre := prepareAhead(ctx, p, s, model, records, opt.Sample)
		defer pre.stop()
		one = func(ctx context.Context, i int) (*Verdict, error) {
			req, err := pre.get(ctx, i)
			if err != nil {
				return nil, err
			}
			defer pre.done(i)
			resp, err := p.CompletePrepared(ctx, req)
			return verdictOf(s, version, model, records[i].ID, req.Request, resp, err, nil)
		}
	}
	each, err := llm.ForEach(ctx, len(records), opt.Concurrency, progress, func(ctx context.Context, i int) error {
		v, err := one(ctx, i)
		if err != nil {
			return fmt.Errorf("record %s: %w", records[i].ID, err)
		}
		verdicts[i] = v
		return nil
	})
	res := &RunResult{Pending: each.Pending, Failed: each.Failed}
	for _, v := range verdicts {
		if v != nil {
			res.Verdicts = append(res.Verdicts, *v)
		}
	}
	return res, err
}

// JudgeInput judges one change's input with a model through client; the
// verdict carries id as its record ID. The answer is marked cached when
// the model layer answered from its cache.
func JudgeInput(ctx context.Context, client llm.Client, s *Spec, model, id string, in Input) (*Verdict, bool, error) {
	if s.Kind != Binary && s.Kind != Rubric {
		return nil, false, fmt.Errorf("judge %s is a %s judge: changes are judged by binary and rubric judges", s.Name, s.Kind)
	}
	var cached bool
	v, err := judgeInputWith(ctx, client, s, s.Version(), model, id, in, &cached)
	return v, cached, err
}

func judgeInput(ctx context.Context, client llm.Client, s *Spec, version, model, id string, in Input) (*Verdict, error) {
	return judgeInputWith(ctx, client, s, version, model, id, in, nil)
}

func judgeInputWith(ctx context.Context, client llm.Client, s *Spec, version, model, id string, in Input, cached *bool) (*Verdict, error) {
	req, err := s.Request(model, in)
	if err != nil {
		return nil, err
	}
	resp, err := client.Complete(ctx, req)
	return verdictOf(s, version, model, id, req, resp, err, cached)
}

// verdictOf reads a verdict from a request's answer (or its error).
func verdictOf(s *Spec, version, model, id string, req *llm.Request, resp *llm.Response, err error, cached *bool) (*Verdict, error) {
	var key string
	if resp != nil {
		key = resp.Key
	}
	if key == "" {
		// A client that does not say it (the Service does).
		var kerr error
		if key, kerr = llm.Key(req); kerr != nil {
			return nil, kerr
		}
	}
	if errors.Is(err, llm.ErrInputTooLong) {
		// No rerun mends it: an unreadable verdict with its reason.
		return &Verdict{RecordID: id, Prompt: version, Model: model, Key: key, Outcome: Invalid, ParseError: llm.InputTooLong, Raw: err.Error()}, nil
	}
	if err != nil {
		return nil, err
	}
	if cached != nil {
		*cached = resp.Cached
	}
	v := s.ParseAnswer(resp)
	v.RecordID, v.Prompt, v.Model, v.Key = id, version, model, key
	return &v, nil
}

// prepared holds the requests of a run prepared ahead of the workers, in
// windows: a window's requests are rendered on every core, then prepared
// at once (their keys, and one cache read for the window), while the
// workers answer the windows before it. At most ahead windows are held.
type prepared struct {
	windows []*window
	slots   chan struct{}
	cancel  context.CancelFunc
}

type window struct {
	ready chan struct{}
	reqs  []llm.Prepared
	errs  []error // rendering errors, per record
	err   error   // preparing the window failed
	left  atomic.Int64
}

const (
	windowSize   = 256
	windowsAhead = 8
)

func prepareAhead(ctx context.Context, p llm.Preparer, s *Spec, model string, records []*record.Record, sample int) *prepared {
	ctx, cancel := context.WithCancel(ctx)
	n := (len(records) + windowSize - 1) / windowSize
	pre := &prepared{windows: make([]*window, n), slots: make(chan struct{}, windowsAhead), cancel: cancel}
	for w := range pre.windows {
		lo, hi := w*windowSize, min(len(records), (w+1)*windowSize)
		pre.windows[w] = &window{ready: make(chan struct{}), errs: make([]error, hi-lo)}
		pre.windows[w].left.Store(int64(hi - lo))
	}
	go func() {
		for w, win := range pre.windows {
			select {
			case pre.slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			lo, hi := w*windowSize, min(len(records), (w+1)*windowSize)
			reqs := make([]*llm.Request, hi-lo)
			workers := runtime.GOMAXPROCS(0)
			var wg sync.WaitGroup
			for k := range workers {
				wg.Go(func() {
					for i := lo + k; i < hi; i += workers {
						if reqs[i-lo], win.errs[i-lo] = s.Request(model, InputOf(records[i])); reqs[i-lo] != nil {
							reqs[i-lo].Sample = sample
						}
					}
				})
			}
			wg.Wait()
			var ok []*llm.Request
			var at []int
			for i, r := range reqs {
				if win.errs[i] == nil {
					ok, at = append(ok, r), append(at, i)
				}
			}
			// Keys and the cache read go on while the next window renders.
			go func() {
				ps, err := p.Prepare(ctx, ok)
				win.reqs = make([]llm.Prepared, hi-lo)
				for j, i := range at {
					if err == nil {
						win.reqs[i] = ps[j]
					}
				}
				win.err = err
				close(win.ready)
			}()
		}
	}()
	return pre
}

// get waits for record i's prepared request.
func (pre *prepared) get(ctx context.Context, i int) (*llm.Prepared, error) {
	win := pre.windows[i/windowSize]
	select {
	case <-win.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := win.errs[i%windowSize]; err != nil {
		pre.done(i)
		return nil, err
	}
	if win.err != nil {
		pre.done(i)
		return nil, win.err
	}
	return &win.reqs[i%windowSize], nil
}

// done says record i was answered; the last of a window frees its slot.
func (pre *prepared) done(i int) {
	win := pre.windows[i/windowSize]
	if win.left.Add(-1) == 0 {
		win.reqs = nil
		<-pre.slots
	}
}

func (pre *prepared) stop() { pre.cancel() }

// PlanRun adds to a dry run's plan the requests judging records would
// make, checking which the cache answers.
func PlanRun(ctx context.Context, plan *llm.Plan, cache llm.Cache, s *Spec, model string, records []*record.Record, stage string) error {
	reqs := make([]*llm.Request, 0, len(records))
	for _, r := range records {
		req, err := s.Request(model, InputOf(r))
		if err != nil {
			return fmt.Errorf("record %s: %w", r.ID, err)
		}
		reqs = append(reqs, req)
	}
	return plan.Exact(ctx, cache, "judge", stage, reqs)
}
