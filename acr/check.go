package acr

import (
	"context"
	"fmt"

	bexec "github.com/gavelhq/gavel/bench/exec"
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

// The kinds of comparison: a sample against the instruction's reference,
// or against another sample of the same instruction.
const (
	AgainstReference = "reference"
	AgainstSample    = "sample"
)

// Who decides a pair in a round: the executor alone when exactly one side
// passes its tests; the judge when neither does (the tests still tell them
// apart: code that runs beats code that does not), or when both pass.
const (
	DecidedByExecutor = "executor"
	DecidedByJudge    = "judge"
)

// Other is the side of a comparison that is not Comparison.Sample: the
// reference, or for a comparison of two samples the sample Against.
const Other Side = "other"

// Comparison is one pair of answers with the judge's verdict: a sample
// against the reference (Against -1) or against another sample. For a
// pair the tests separate, TestWinner is the side they favour (Sample, or
// Reference for the reference or Other for the other sample) and Agree
// says whether the judge picked it; for a pair of a sample and the
// reference that both pass (Tied), the judge's pick measures its
// leaning toward the reference.
type Comparison struct {
	ID         string    `json:"id"`
	Sample     int       `json:"sample"`
	Kind       string    `json:"kind"`
	Against    int       `json:"against"`
	DecidedBy  string    `json:"decided_by"`
	Tied       bool      `json:"tied,omitempty"`
	TestWinner Side      `json:"test_winner,omitempty"`
	Judge      Judgement `json:"judge"`
	Agree      bool      `json:"agree"`
}

// CheckResult is how far the pairwise judge can be trusted, measured where
// the tests know the answer.
type CheckResult struct {
	Instructions int `json:"instructions"`
	// Pairs are the comparisons the tests separate, sample against
	// reference and sample against sample; Agree + Disagree = Pairs.
	Pairs           int `json:"pairs"`
	ReferencePairs  int `json:"reference_pairs"`
	SamplePairs     int `json:"sample_pairs"`
	ExecutorDecided int `json:"executor_decided_pairs"`
	JudgeDecided    int `json:"judge_decided_pairs"`
	// Tied are the pairs of a sample and the reference that both pass.
	Tied     int `json:"tied_pairs"`
	Agree    int `json:"agree"`
	Disagree int `json:"disagree"`
	// Of the disagreements against the reference: JudgeTies the judge
	// called a tie (or could not decide), SelfPreferred it preferred the
	// generated answer.
	JudgeTies     int `json:"judge_ties"`
	SelfPreferred int `json:"self_preferred"`
	// Agreement is Agree / Pairs, and by who decides a pair in a round:
	// AgreementExecutor over the pairs the executor alone decides (one
	// side passes), AgreementJudge over those it cannot (neither passes;
	// the tests still rank code that runs above code that does not).
	// SelfPreference is SelfPreferred over the disagreements against the
	// reference. ReferenceBias is, over the tied pairs, the judge's share
	// for the reference minus its share for the sample (0: no leaning).
	// All with percentile bootstrap intervals over instructions.
	Agreement         metrics.Figure `json:"agreement"`
	AgreementExecutor metrics.Figure `json:"agreement_executor_decided"`
	AgreementJudge    metrics.Figure `json:"agreement_judge_decided"`
	SelfPreference    metrics.Figure `json:"self_preference"`
	ReferenceBias     metrics.Figure `json:"reference_bias"`
	MinAgreement      float64        `json:"min_agreement"`
	MaxSelfPreference float64        `json:"max_self_preference"`
	// Flags say what is wrong, empty when the judge passes the check.
	Flags       []string      `json:"flags"`
	Comparisons []*Comparison `json:"comparisons"`
}

// rank is how far the tests rank an answer: passing code above code that
// runs and fails above code that does not run (or is no code).
func rank(e *Execution) int {
	switch {
	case e.Works():
		return 2
	case e != nil && e.Status == string(bexec.Failed):
		return 1
	}
	return 0
}

// Check runs generation and execution (from the cache where the round
// ran), then the pairwise judge, in both orders, on every pair the tests
// separate (each sample, or only each instruction's best, against the
// reference; every two samples of an instruction against each other) and
// on the pairs of a sample and the reference that both pass; it measures
// the judge's agreement with the tests, where the executor decides and
// where it cannot, its self-preference and its leaning toward the
// reference.
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
		it   *Item
		a    *SampleResult
		b    *SampleResult // nil: the reference
		comp *Comparison
	}
	var pairs []pair
	for _, it := range r.Items {
		if it.RefExec == nil || !it.RefExec.Tested {
			continue
		}
		ref := rank(it.RefExec)
		for i, s := range it.Samples {
			if s.Exec == nil {
				continue
			}
			if opt.AllSamples || i == it.Best {
				rs := rank(s.Exec)
				c := &Comparison{ID: it.Instruction.ID, Sample: s.Index, Kind: AgainstReference, Against: -1}
				switch {
				case rs == ref && rs == 2:
					c.Tied, c.DecidedBy = true, DecidedByJudge
				case rs == ref:
					continue
				default:
					c.TestWinner, c.DecidedBy = Sample, decider(rs, ref)
					if ref > rs {
						c.TestWinner = Reference
					}
				}
				pairs = append(pairs, pair{it, s, nil, c})
			}
			for _, o := range it.Samples[i+1:] {
				if o.Exec == nil || rank(o.Exec) == rank(s.Exec) {
					continue
				}
				c := &Comparison{ID: it.Instruction.ID, Sample: s.Index, Kind: AgainstSample, Against: o.Index,
					TestWinner: Sample, DecidedBy: decider(rank(s.Exec), rank(o.Exec))}
				if rank(o.Exec) > rank(s.Exec) {
					c.TestWinner = Other
				}
				pairs = append(pairs, pair{it, s, o, c})
			}
		}
	}
	pending, failed, err := each(ctx, len(pairs), r.cfg.Concurrency, func(d int) { r.cfg.Progress("check", d, len(pairs)) },
		func(ctx context.Context, i int) error {
			p := pairs[i]
			other := p.it.Instruction.Reference
			if p.b != nil {
				other = p.b.Answer
			}
			j, _, err := JudgeAnswers(ctx, r.client, r.cfg.Pairwise, r.cfg.JudgeModel, p.it.Instruction, p.a.Answer, other)
			if err != nil {
				return fmt.Errorf("instruction %s sample %d: %w", p.it.Instruction.ID, p.a.Index, err)
			}
			if p.b != nil && j.Winner == Reference {
				j.Winner = Other
			}
			p.comp.Judge = j
			p.comp.Agree = !p.comp.Tied && j.Winner == p.comp.TestWinner
			return nil
		})
	if err != nil {
		return nil, err
	}
	if err := stageErr("check", pending, failed); err != nil {
		return nil, err
	}
	comps := make([]*Comparison, len(pairs))
	for i, p := range pairs {
		comps[i] = p.comp
	}
	return Summarise(comps, len(r.Items), opt), nil
}

// decider is who decides a pair of answers of these ranks in a round.
func decider(a, b int) string {
	if (a == 2) != (b == 2) {
		return DecidedByExecutor
	}
	return DecidedByJudge
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
		Comparisons: cs}
	boot := opt.Bootstrap
	groups := make([]string, len(cs))
	for i, c := range cs {
		groups[i] = c.ID
		if c.Kind == "" {
			c.Kind, c.Against = AgainstReference, -1
		}
		if c.Tied {
			res.Tied++
			continue
		}
		res.Pairs++
		if c.Kind == AgainstSample {
			res.SamplePairs++
		} else {
			res.ReferencePairs++
		}
		if c.DecidedBy == DecidedByJudge {
			res.JudgeDecided++
		} else {
			res.ExecutorDecided++
		}
		switch {
		case c.Agree:
			res.Agree++
		default:
			res.Disagree++
			if c.Kind != AgainstReference {
				break
			}
			switch c.Judge.Winner {
			case Sample:
				res.SelfPreferred++
			case Tie:
				res.JudgeTies++
			}
		}
	}
	boot.Groups = groups
	agreement := func(keep func(*Comparison) bool, why string) metrics.Statistic {
		return func(idx []int) metrics.Value {
			a, n := 0, 0
			for _, i := range idx {
				if cs[i].Tied || !keep(cs[i]) {
					continue
				}
				n++
				if cs[i].Agree {
					a++
				}
			}
			return share(a, n, why)
		}
	}
	all := func(*Comparison) bool { return true }
	byExecutor := func(c *Comparison) bool { return c.DecidedBy != DecidedByJudge }
	byJudge := func(c *Comparison) bool { return c.DecidedBy == DecidedByJudge }
	selfPref := func(idx []int) metrics.Value {
		d, s := 0, 0
		for _, i := range idx {
			if c := cs[i]; !c.Tied && !c.Agree && c.Kind == AgainstReference {
				d++
				if c.Judge.Winner == Sample {
					s++
				}
			}
		}
		return share(s, d, "no disagreements against the reference")
	}
	refBias := func(idx []int) metrics.Value {
		n, lean := 0, 0
		for _, i := range idx {
			if c := cs[i]; c.Tied {
				n++
				switch c.Judge.Winner {
				case Reference:
					lean++
				case Sample:
					lean--
				}
			}
		}
		if n == 0 {
			return metrics.Undef("no sample passes where the reference does")
		}
		return metrics.Def(float64(lean) / float64(n))
	}
	figure := func(stat metrics.Statistic) metrics.Figure {
		if len(cs) == 0 {
			v := stat(nil)
			return metrics.Figure{Value: v, Undefined: v.Undefined}
		}
		f := metrics.WithCI(len(cs), stat, boot)
		if !f.Value.Defined() {
			f.Undefined, f.CI = f.Value.Undefined, nil
		}
		return f
	}
	res.Agreement = figure(agreement(all, "no pairs the tests separate"))
	res.AgreementExecutor = figure(agreement(byExecutor, "no pairs the executor decides"))
	res.AgreementJudge = figure(agreement(byJudge, "no pairs the tests separate where neither side passes"))
	res.SelfPreference = figure(selfPref)
	res.ReferenceBias = figure(refBias)
	res.Flags = []string{}
	if res.Pairs == 0 {
		res.Flags = append(res.Flags, "no answers the tests separate: the check cannot measure the judge")
		return res
	}
	if v := res.Agreement.Value; v.Defined() && v.V < res.MinAgreement {
		res.Flags = append(res.Flags, fmt.Sprintf("agreement with the tests %.1f%% is under %.0f%%: the judge's choices between answers are not reliable", 100*v.V, 100*res.MinAgreement))
	}
	if v := res.SelfPreference.Value; v.Defined() && v.V > res.MaxSelfPreference {
		res.Flags = append(res.Flags, fmt.Sprintf("self-preference %.1f%% is over %.0f%%: where the judge is wrong it mostly prefers the generated answer", 100*v.V, 100*res.MaxSelfPreference))
	}
	return res
}
