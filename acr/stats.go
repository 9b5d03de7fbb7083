package acr

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/gavelhq/gavel/metrics"
)

// RoundStats are one round's figures, computed from its lineage.
type RoundStats struct {
	Round        int `json:"round"`
	Instructions int `json:"instructions"`
	// SingleTurn + Critique + Skipped = Instructions.
	SingleTurn int `json:"single_turn"`
	Critique   int `json:"critique"`
	Skipped    int `json:"skipped"`
	// WinRate is the share of instructions whose best sample beat the
	// reference (the self-generated answers' win rate).
	WinRate   metrics.Value  `json:"win_rate"`
	DecidedBy map[string]int `json:"decided_by"`
	// PairwiseHow counts how the judge's two orders combined.
	PairwiseHow map[string]int `json:"pairwise_how"`
	Samples     int            `json:"samples"`
	// Executed samples were run; ExecStatus counts them by status
	// (summing to Executed); SamplePassRate is passed / executed.
	Executed       int            `json:"executed"`
	ExecStatus     map[string]int `json:"exec_status"`
	SamplePassRate metrics.Value  `json:"sample_pass_rate"`
	// BestPassRate is the share of chosen samples that passed;
	// ReferencePassRate the share of references that did.
	BestPassRate      metrics.Value `json:"best_pass_rate"`
	ReferencePassRate metrics.Value `json:"reference_pass_rate"`
	// JudgedInvalid counts samples whose pointwise answer was invalid.
	JudgedInvalid int `json:"judged_invalid"`
	// Composite are every sample's composite scores; Best the chosen
	// ones' (for the distributions in the report).
	Composite     []float64     `json:"-"`
	Best          []float64     `json:"-"`
	CompositeMean metrics.Value `json:"composite_mean"`
	BestMean      metrics.Value `json:"best_composite_mean"`
	Simulated     bool          `json:"simulated,omitempty"`
	// The rates' 95% intervals: Wilson score intervals for the rates with
	// one trial per instruction, and for the sample pass rate a bootstrap
	// that resamples whole instructions (their samples are not
	// independent).
	WinRateCI           *metrics.Interval `json:"win_rate_ci,omitempty"`
	SamplePassRateCI    *metrics.Interval `json:"sample_pass_rate_ci,omitempty"`
	BestPassRateCI      *metrics.Interval `json:"best_pass_rate_ci,omitempty"`
	ReferencePassRateCI *metrics.Interval `json:"reference_pass_rate_ci,omitempty"`
	// Figures holds the four rates in gavel's one shape for a figure,
	// {"value", "ci": {"lo", "hi", ...}}, beside the fields above.
	Figures map[string]metrics.Figure `json:"figures"`
}

// RateText writes a rate as a percentage with its interval, e.g.
// "62.5% [48.1%, 75.0%]".
func RateText(v metrics.Value, iv *metrics.Interval) string {
	if !v.Defined() {
		return "undefined (" + v.Undefined + ")"
	}
	s := fmt.Sprintf("%.1f%%", 100*v.V)
	if iv != nil && iv.Defined() {
		s += fmt.Sprintf(" [%.1f%%, %.1f%%]", 100*iv.Lo, 100*iv.Hi)
	}
	return s
}

// ReadLineage reads a lineage file.
func ReadLineage(r io.Reader, name string) ([]Lineage, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var out []Lineage
	n := 0
	for sc.Scan() {
		n++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var l Lineage
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, n, err)
		}
		if l.ID == "" || l.Round < 1 {
			return nil, fmt.Errorf("%s:%d: id and round: not a lineage line", name, n)
		}
		out = append(out, l)
	}
	return out, sc.Err()
}

func share(num, den int, why string) metrics.Value {
	if den == 0 {
		return metrics.Undef("%s", why)
	}
	return metrics.Def(float64(num) / float64(den))
}

func mean(xs []float64) metrics.Value {
	if len(xs) == 0 {
		return metrics.Undef("no scores")
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return metrics.Def(s / float64(len(xs)))
}

// Stats computes each round's figures from lineage lines, by round.
func Stats(lines []Lineage) []*RoundStats {
	by := map[int]*RoundStats{}
	type counts struct {
		passed, best, bestPassed, refs, refPassed, decided, won int
		works                                                   []float64 // each run sample: 1 works, 0 not
		groups                                                  []string  // its instruction
	}
	cs := map[int]*counts{}
	for _, l := range lines {
		st := by[l.Round]
		if st == nil {
			st = &RoundStats{Round: l.Round, DecidedBy: map[string]int{}, PairwiseHow: map[string]int{}, ExecStatus: map[string]int{}}
			by[l.Round], cs[l.Round] = st, &counts{}
		}
		c := cs[l.Round]
		st.Instructions++
		st.Simulated = st.Simulated || l.Simulated
		switch l.Branch {
		case "single_turn":
			st.SingleTurn++
		case "critique":
			st.Critique++
		default:
			st.Skipped++
		}
		if l.DecidedBy != "" {
			st.DecidedBy[l.DecidedBy]++
			c.decided++
			if l.Winner == Sample {
				c.won++
			}
		}
		if l.Pairwise.How != "" {
			st.PairwiseHow[l.Pairwise.How]++
		}
		for _, s := range l.Samples {
			st.Samples++
			st.Composite = append(st.Composite, s.Composite)
			if !s.JudgedValid {
				st.JudgedInvalid++
			}
			if s.Exec != nil {
				st.Executed++
				st.ExecStatus[s.Exec.Status]++
				w := 0.0
				if s.Exec.Works() {
					c.passed++
					w = 1
				}
				c.works, c.groups = append(c.works, w), append(c.groups, l.ID)
			}
			if s.Index == l.BestSample {
				st.Best = append(st.Best, s.Composite)
				if s.Exec != nil {
					c.best++
					if s.Exec.Works() {
						c.bestPassed++
					}
				}
			}
		}
		if l.Reference != nil {
			c.refs++
			if l.Reference.Works() {
				c.refPassed++
			}
		}
	}
	var out []*RoundStats
	for round, st := range by {
		c := cs[round]
		st.WinRate = share(c.won, c.decided, "no instruction was decided")
		st.SamplePassRate = share(c.passed, st.Executed, "no sample was run")
		st.BestPassRate = share(c.bestPassed, c.best, "no chosen sample was run")
		st.ReferencePassRate = share(c.refPassed, c.refs, "no reference was run")
		st.CompositeMean, st.BestMean = mean(st.Composite), mean(st.Best)
		wilson := func(k, n int) *metrics.Interval {
			iv := metrics.Wilson(k, n, 0.95)
			return &iv
		}
		st.WinRateCI, st.BestPassRateCI, st.ReferencePassRateCI = wilson(c.won, c.decided), wilson(c.bestPassed, c.best), wilson(c.refPassed, c.refs)
		if len(c.works) > 0 {
			iv := metrics.Bootstrap(len(c.works), func(idx []int) metrics.Value {
				sum := 0.0
				for _, i := range idx {
					sum += c.works[i]
				}
				return metrics.Def(sum / float64(len(idx)))
			}, metrics.BootstrapOptions{Resamples: 2000, Seed: 1, Groups: c.groups})
			st.SamplePassRateCI = &iv
		}
		est := func(v metrics.Value, iv *metrics.Interval) metrics.Figure {
			return metrics.Figure{Value: v, Undefined: v.Undefined, CI: iv}
		}
		st.Figures = map[string]metrics.Figure{
			"win_rate": est(st.WinRate, st.WinRateCI), "sample_pass_rate": est(st.SamplePassRate, st.SamplePassRateCI),
			"best_pass_rate": est(st.BestPassRate, st.BestPassRateCI), "reference_pass_rate": est(st.ReferencePassRate, st.ReferencePassRateCI),
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Round < out[j].Round })
	return out
}
