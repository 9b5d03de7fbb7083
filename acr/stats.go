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
	type counts struct{ passed, best, bestPassed, refs, refPassed, decided, won int }
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
				if s.Exec.Works() {
					c.passed++
				}
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
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Round < out[j].Round })
	return out
}
