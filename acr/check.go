package acr

import (
	"context"
	"fmt"
	"sync"

	"github.com/gavelhq/gavel/metrics"
)

// CheckOptions configure the judge check.
type CheckOptions struct {
	// AllSamples compares every sample the tests separate from the
	// reference, not only each instruction's best (which needs the
	// pointwise scores).
	AllSamples bool
	// MinAgreement and MaxSelfPreference are the flags' thresholds
	// (defaults 0.85 and 0.55).
	MinAgreement, MaxSelfPreference float64
	Bootstrap                       metrics.BootstrapOptions
}

// Comparison is one answer the tests separate from the reference, with the
// judge's verdict on the two.
type Comparison struct {
	ID         string    `json:"id"`
	Sample     int       `json:"sample"`
	TestWinner Side      `json:"test_winner"`
	Judge      Judgement `json:"judge"`
	Agree      bool      `json:"agree"`
}

// CheckResult is how far the pairwise judge can be trusted, measured where
// the tests know the answer.
type CheckResult struct {
	Instructions int `json:"instructions"`
	// Pairs are the comparisons the tests separate (one answer passes, the
	// other does not); Agree + Disagree = Pairs.
	Pairs    int `json:"pairs"`
	Agree    int `json:"agree"`
	Disagree int `json:"disagree"`
	// Of the disagreements: JudgeTies the judge called a tie (or could not
	// decide), SelfPreferred it preferred the generated answer, the rest
	// it preferred the reference when the generated answer passed.
	JudgeTies     int `json:"judge_ties"`
	SelfPreferred int `json:"self_preferred"`
	// Agreement is Agree / Pairs; SelfPreference SelfPreferred / Disagree;
	// both with percentile bootstrap intervals over instructions.
	Agreement         metrics.Figure `json:"agreement"`
	SelfPreference    metrics.Figure `json:"self_preference"`
	MinAgreement      float64        `json:"min_agreement"`
	MaxSelfPreference float64        `json:"max_self_preference"`
	// Flags say what is wrong, empty when the judge passes the check.
	Flags       []string      `json:"flags"`
	Comparisons []*Comparison `json:"comparisons"`
}

// Check runs generation and execution (from the cache where the round
// ran), then the pairwise judge on every pair the tests separate, and
// measures its agreement with the tests and its self-preference.
func (r *Round) Check(ctx context.Context, opt CheckOptions) (*CheckResult, error) {
	stages := []func(context.Context) error{r.Generate, r.Execute}
	if !opt.AllSamples {
		stages = append(stages, r.Score)
	}
	for _, st := range stages {
		if err := st(ctx); err != nil {
			return nil, err
		}
	}
	type pair struct {
		it *Item
		s  *SampleResult
	}
	var pairs []pair
	for _, it := range r.Items {
		if it.RefExec == nil || !it.RefExec.Tested {
			continue
		}
		for i, s := range it.Samples {
			if s.Exec == nil || s.Exec.Works() == it.RefExec.Works() || (!opt.AllSamples && i != it.Best) {
				continue
			}
			pairs = append(pairs, pair{it, s})
		}
	}
	comps := make([]*Comparison, len(pairs))
	var mu sync.Mutex
	pending, failed, err := each(ctx, len(pairs), r.cfg.Concurrency, func(d int) { r.cfg.Progress("check", d, len(pairs)) },
		func(ctx context.Context, i int) error {
			p := pairs[i]
			j, _, err := Judge(ctx, r.client, r.cfg.Pairwise, r.cfg.JudgeModel, p.it.Instruction, p.s.Answer)
			if err != nil {
				return fmt.Errorf("instruction %s sample %d: %w", p.it.Instruction.ID, p.s.Index, err)
			}
			tw := Reference
			if p.s.Exec.Works() {
				tw = Sample
			}
			mu.Lock()
			comps[i] = &Comparison{ID: p.it.Instruction.ID, Sample: p.s.Index, TestWinner: tw, Judge: j, Agree: j.Winner == tw}
			mu.Unlock()
			return nil
		})
	if err != nil {
		return nil, err
	}
	if err := stageErr("check", pending, failed); err != nil {
		return nil, err
	}
	return Summarise(comps, len(r.Items), opt), nil
}

// Summarise counts comparisons and sets the figures and flags.
func Summarise(cs []*Comparison, instructions int, opt CheckOptions) *CheckResult {
	if opt.MinAgreement == 0 {
		opt.MinAgreement = 0.85
	}
	if opt.MaxSelfPreference == 0 {
		opt.MaxSelfPreference = 0.55
	}
	res := &CheckResult{Instructions: instructions, MinAgreement: opt.MinAgreement, MaxSelfPreference: opt.MaxSelfPreference,
		Comparisons: cs, Pairs: len(cs)}
	boot := opt.Bootstrap
	groups := make([]string, len(cs))
	for i, c := range cs {
		groups[i] = c.ID
		switch {
		case c.Agree:
			res.Agree++
		default:
			res.Disagree++
			switch c.Judge.Winner {
			case Sample:
				res.SelfPreferred++
			case Tie:
				res.JudgeTies++
			}
		}
	}
	boot.Groups = groups
	agreement := func(idx []int) metrics.Value {
		a := 0
		for _, i := range idx {
			if cs[i].Agree {
				a++
			}
		}
		return share(a, len(idx), "no pairs the tests separate")
	}
	selfPref := func(idx []int) metrics.Value {
		d, s := 0, 0
		for _, i := range idx {
			if !cs[i].Agree {
				d++
				if cs[i].Judge.Winner == Sample {
					s++
				}
			}
		}
		return share(s, d, "no disagreements")
	}
	res.Flags = []string{}
	if len(cs) == 0 {
		res.Agreement = metrics.Figure{Value: metrics.Undef("no pairs the tests separate"), Undefined: "no pairs the tests separate"}
		res.SelfPreference = metrics.Figure{Value: metrics.Undef("no disagreements"), Undefined: "no disagreements"}
		res.Flags = append(res.Flags, "no answers the tests separate from the references: the check cannot measure the judge")
		return res
	}
	res.Agreement = metrics.WithCI(len(cs), agreement, boot)
	res.SelfPreference = metrics.WithCI(len(cs), selfPref, boot)
	if v := res.Agreement.Value; v.Defined() && v.V < res.MinAgreement {
		res.Flags = append(res.Flags, fmt.Sprintf("agreement with the tests %.1f%% is under %.0f%%: the judge's choices between answers are not reliable", 100*v.V, 100*res.MinAgreement))
	}
	if v := res.SelfPreference.Value; v.Defined() && v.V > res.MaxSelfPreference {
		res.Flags = append(res.Flags, fmt.Sprintf("self-preference %.1f%% is over %.0f%%: where the judge is wrong it mostly prefers the generated answer", 100*v.V, 100*res.MaxSelfPreference))
	}
	return res
}
