package run

import (
	"context"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/refine"
)

// StartEach is a calibration run from every start (--start-each) and the
// selection made across all of them: every version of every start, by
// the lower bound of its paired validation gain over the first start's
// prompt (the one baseline they share).
type StartEach struct {
	Candidates []StartCandidate `json:"candidates"`
	Chosen     StartCandidate   `json:"chosen"`
	// Test is the chosen version and the first start's prompt on test,
	// with the paired gain.
	Test struct {
		Chosen metrics.Figure `json:"chosen"`
		First  metrics.Figure `json:"first"`
		Gain   metrics.Figure `json:"gain"`
	} `json:"test"`
}

// StartCandidate is one version of one start's calibration.
type StartCandidate struct {
	Start     string         `json:"start"`
	Version   string         `json:"version"`
	Iteration int            `json:"iteration"`
	ValGain   metrics.Figure `json:"val_gain"`
}

// selectAcrossStarts picks among every version of every start's
// calibration (results in the starts' order). Every version's validation
// verdicts come from the cache (the calibrations judged them); the
// chosen one is judged on test.
func selectAcrossStarts(ctx context.Context, env *Env, cfg CalibrateConfig, results []*refine.Result) (*StartEach, error) {
	model, val, test := cfg.Refine.Model, cfg.Data.Val, cfg.Data.Test
	level := cfg.Refine.Selection.Level
	if level <= 0 || level >= 1 {
		level = refine.DefaultSelectLevel
	}
	boot := cfg.Refine.Boot
	first := cfg.Starts[0]
	var st stages
	firstVS, err := st.judge(ctx, env, first, model, val, cfg.Refine.Concurrency)
	if err != nil {
		return nil, err
	}
	firstVal, err := judge.Evaluate(first, model, val, firstVS, 0, boot)
	if err != nil {
		return nil, err
	}
	out := &StartEach{}
	// The first start's prompt as it is (gain 0) unless a version's lower
	// bound is above 0: the highest such bound wins.
	best, bestLo, bestSpec := 0, 0.0, first
	for i, res := range results {
		for _, v := range res.Versions {
			vs, err := st.judge(ctx, env, v.Spec, model, val, cfg.Refine.Concurrency)
			if err != nil {
				return nil, err
			}
			if vs == nil {
				continue // pending: counted below
			}
			ev, err := judge.Evaluate(v.Spec, model, val, vs, 0, boot)
			if err != nil {
				return nil, err
			}
			b := boot
			b.Level = level
			gain, err := ev.Gain(firstVal, "scott_pi", b)
			if err != nil {
				return nil, err
			}
			out.Candidates = append(out.Candidates, StartCandidate{Start: cfg.Starts[i].Name, Version: v.Hash, Iteration: v.Iteration, ValGain: gain})
			if iv := gain.CI; iv != nil && iv.Defined() && iv.Lo > bestLo {
				best, bestLo, bestSpec = len(out.Candidates)-1, iv.Lo, v.Spec
			}
		}
	}
	if err := st.err(); err != nil {
		return nil, err
	}
	out.Chosen = out.Candidates[best]
	chosenVS, err := st.judge(ctx, env, bestSpec, model, test, cfg.Refine.Concurrency)
	if err != nil {
		return nil, err
	}
	firstTest, err := st.judge(ctx, env, first, model, test, cfg.Refine.Concurrency)
	if err != nil {
		return nil, err
	}
	if err := st.err(); err != nil {
		return nil, err
	}
	ce, err := judge.Evaluate(bestSpec, model, test, chosenVS, 0, boot)
	if err != nil {
		return nil, err
	}
	fe, err := judge.Evaluate(first, model, test, firstTest, 0, boot)
	if err != nil {
		return nil, err
	}
	if out.Test.Gain, err = ce.Gain(fe, "scott_pi", boot); err != nil {
		return nil, err
	}
	out.Test.Chosen, out.Test.First = ce.Figures["scott_pi"], fe.Figures["scott_pi"]
	return out, nil
}

// startEach writes the selection across starts.
func (p *printer) startEach(s *StartEach) {
	c := s.Chosen
	p.f("across every start (--start-each): %d versions; chosen %s version %.12s (iteration %d), val gain over the first start %s %s\n",
		len(s.Candidates), c.Start, c.Version, c.Iteration, c.ValGain.Value, ciText(c.ValGain.CI))
	p.f("  test: chosen %s %s; the first start %s %s; gain (paired) %s %s\n", s.Test.Chosen.Value, ciText(s.Test.Chosen.CI),
		s.Test.First.Value, ciText(s.Test.First.CI), s.Test.Gain.Value, ciText(s.Test.Gain.CI))
}
