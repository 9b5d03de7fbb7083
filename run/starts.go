package run

import (
	"context"
	"fmt"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/refine"
)

// Start is one starting prompt of a framing search (calibrate --start):
// the prompt as it is, before any edit, on train and on validation, and
// its paired validation gain over the first start.
type Start struct {
	Judge  string         `json:"judge"`
	Prompt string         `json:"prompt"`
	Train  metrics.Figure `json:"train"`
	Val    metrics.Figure `json:"val"`
	// ValGain is the paired gain in validation pi over the first start
	// (0 for the first itself).
	ValGain metrics.Figure `json:"val_gain"`
	// Chosen marks the start the edit loop ran from.
	Chosen bool `json:"chosen"`
}

// searchStarts judges every start on train and validation (one stage:
// offline, every pending request is counted before it stops) and picks
// the one the loop runs from: the first, unless another's paired
// validation gain over it has a lower bound above 0 (the highest such
// bound wins), as the selection of versions is made.
func searchStarts(ctx context.Context, env *Env, model string, starts []*judge.Spec, data refine.Data, concurrency int, boot metrics.BootstrapOptions) ([]Start, int, error) {
	var st stages
	type judged struct{ train, val map[string]judge.Verdict }
	vs := make([]judged, len(starts))
	for i, s := range starts {
		var err error
		if vs[i].train, err = st.judge(ctx, env, s, model, data.Train, concurrency); err != nil {
			return nil, 0, err
		}
		if vs[i].val, err = st.judge(ctx, env, s, model, data.Val, concurrency); err != nil {
			return nil, 0, err
		}
	}
	if err := st.err(); err != nil {
		return nil, 0, err
	}
	out := make([]Start, len(starts))
	var firstVal *judge.Evaluation
	best, bestLo := 0, 0.0
	for i, s := range starts {
		te, err := judge.Evaluate(s, model, data.Train, vs[i].train, 0, boot)
		if err != nil {
			return nil, 0, err
		}
		ve, err := judge.Evaluate(s, model, data.Val, vs[i].val, 0, boot)
		if err != nil {
			return nil, 0, err
		}
		out[i] = Start{Judge: s.Name, Prompt: s.Version(), Train: te.Figures["scott_pi"], Val: ve.Figures["scott_pi"]}
		if i == 0 {
			firstVal = ve
		}
		gain, err := ve.Compare(firstVal, boot)
		if err != nil {
			return nil, 0, err
		}
		out[i].ValGain = gain["scott_pi"]
		if g := out[i].ValGain; i > 0 && g.CI != nil && g.CI.Defined() && g.CI.Lo > bestLo {
			best, bestLo = i, g.CI.Lo
		}
	}
	out[best].Chosen = true
	return out, best, nil
}

// startsText writes the starts side by side.
func (p *printer) starts(ss []Start) {
	p.f("starting prompts, before any edit (the loop runs from the one marked *):\n")
	tw := p.table(true)
	fmt.Fprintln(tw, "\tstart\tprompt\ttrain pi\tval pi\tval gain over the first (paired)\t")
	for _, s := range ss {
		mark := ""
		if s.Chosen {
			mark = "*"
		}
		fmt.Fprintf(tw, "\t%s%s\t%.12s\t%s %s\t%s %s\t%s %s\t\n", s.Judge, mark, s.Prompt, s.Train.Value, ciText(s.Train.CI),
			s.Val.Value, ciText(s.Val.CI), s.ValGain.Value, ciText(s.ValGain.CI))
	}
	p.flush(tw)
}
