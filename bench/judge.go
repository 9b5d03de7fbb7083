package bench

import (
	"context"
	"fmt"
	"math"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
)

// JudgeOptions configure JudgePrograms. Zero values: 8 calls at once, no
// progress.
type JudgeOptions struct {
	Concurrency int
	Progress    func(done, total int)
}

// Judged is what a judge said of a benchmark's programs.
type Judged struct {
	// Pred is each program's predicted score, in the programs' order:
	// NaN where the verdict was invalid or is missing.
	Pred []float64
	// Verdicts are by program id (programs whose request is pending or
	// failed have none).
	Verdicts map[string]judge.Verdict
	// Pending counts requests left for a batch round (offline); Failed
	// the requests that failed after their retries.
	Pending int
	Failed  []error
}

// PredictedScore is the score on 0..5 a verdict predicts: a binary judge 5
// for pass and 0 for fail, a rubric judge 5 x its share of passed checks,
// a pointwise judge 5 x its weighted score (on 0..1); NaN when invalid.
func PredictedScore(s *judge.Spec, v judge.Verdict) float64 {
	switch {
	case v.Outcome == judge.Invalid:
		return math.NaN()
	case s.Kind == judge.Binary && v.Outcome == judge.Pass:
		return 5
	case s.Kind == judge.Binary:
		return 0
	case s.Kind == judge.Rubric:
		return 5 * v.Score / float64(len(s.Checks))
	}
	return 5 * v.Score
}

// programRecord is a program as a record a judge reads: the task is the
// function's documentation, the candidate its code.
func programRecord(p *Program) *record.Record {
	return &record.Record{ID: p.ID, Task: "Complete this " + p.Lang + " function so that it does what its documentation says:\n\n" + p.Prompt,
		Candidate: p.Code, Reference: p.Reference}
}

// JudgePrograms has a binary, rubric or pointwise judge score every
// program through client. Every program's request goes out in the same
// stage: offline, all that the cache cannot answer are left pending
// together (Judged.Pending), so one batch round answers them all. The
// budget running out or ctx ending stops it with an error.
func JudgePrograms(ctx context.Context, client llm.Client, s *judge.Spec, model string, progs []*Program, opt JudgeOptions) (*Judged, error) {
	if s.Kind == judge.Pairwise {
		return nil, fmt.Errorf("judge %s is a pairwise judge: it compares two programs, and a benchmark scores one at a time", s.Name)
	}
	verdicts := make([]*judge.Verdict, len(progs))
	var progress func(int)
	if opt.Progress != nil {
		progress = func(done int) { opt.Progress(done, len(progs)) }
	}
	each, err := llm.ForEach(ctx, len(progs), opt.Concurrency, progress, func(ctx context.Context, i int) error {
		r := programRecord(progs[i])
		if s.Kind != judge.Pointwise {
			v, _, err := judge.JudgeInput(ctx, client, s, model, r.ID, judge.InputOf(r))
			if err != nil {
				return fmt.Errorf("program %s: %w", r.ID, err)
			}
			verdicts[i] = v
			return nil
		}
		req, err := s.Request(model, judge.Input{Instruction: r.Task, Candidate: r.Candidate})
		if err != nil {
			return fmt.Errorf("program %s: %w", r.ID, err)
		}
		resp, err := client.Complete(ctx, req)
		if err != nil {
			return fmt.Errorf("program %s: %w", r.ID, err)
		}
		v := s.ParseAnswer(resp)
		v.RecordID, v.Model = r.ID, model
		verdicts[i] = &v
		return nil
	})
	out := &Judged{Pred: make([]float64, len(progs)), Verdicts: map[string]judge.Verdict{}, Pending: each.Pending, Failed: each.Failed}
	for i, v := range verdicts {
		out.Pred[i] = math.NaN()
		if v != nil {
			out.Verdicts[v.RecordID] = *v
			out.Pred[i] = PredictedScore(s, *v)
		}
	}
	return out, err
}
