package deploy

import (
	"context"
	"fmt"
	"sort"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
)

// Pair is the agreement of two raters on the changes both rated.
type Pair struct {
	A, B string `json:"-"`
	// Raters names them: "human", "outcome", or "judge VERSION".
	Raters   [2]string      `json:"raters"`
	N        int            `json:"n"`
	Observed metrics.Figure `json:"observed_agreement"`
	Pi       metrics.Figure `json:"scott_pi"`
}

// AgreementReport compares blind human review, the judge's versions and
// the outcomes on the reviewed changes (the paper's blind review).
type AgreementReport struct {
	Judge    string `json:"judge"`
	Model    string `json:"model"`
	Reviewed int    `json:"reviewed_changes"`
	Reviews  int    `json:"reviews"`
	// Ties counts changes whose reviewers split evenly (left out of the
	// human rater).
	Ties  int    `json:"ties"`
	Pairs []Pair `json:"pairs"`
}

// Agreement compares human reviews with the judge's verdicts (each
// version that judged reviewed changes) and with the outcomes, pairwise,
// with bootstrap intervals. Several reviewers of one change count by
// majority.
func Agreement(ctx context.Context, st Store, judgeName, model string, boot metrics.BootstrapOptions) (*AgreementReport, error) {
	reviews, err := st.Reviews(ctx)
	if err != nil {
		return nil, err
	}
	rep := &AgreementReport{Judge: judgeName, Model: model, Pairs: []Pair{}}
	votes := map[string][2]int{} // change -> fail, pass
	for _, r := range reviews {
		v := votes[r.ChangeID]
		if r.Verdict == record.Pass {
			v[1]++
		} else {
			v[0]++
		}
		votes[r.ChangeID] = v
		rep.Reviews++
	}
	// rater -> change -> label (metrics.Pass or metrics.Fail)
	raters := map[string]map[string]int{"human": {}, "outcome": {}}
	var ids []string
	for id, v := range votes {
		switch {
		case v[0] == v[1]:
			rep.Ties++
			continue
		case v[1] > v[0]:
			raters["human"][id] = metrics.Pass
		default:
			raters["human"][id] = metrics.Fail
		}
		ids = append(ids, id)
	}
	sort.Strings(ids)
	rep.Reviewed = len(votes)
	if len(ids) > 0 {
		err = st.Records(ctx, record.Filter{IDs: ids}, func(r *record.Record) error {
			if r.Outcome.Status != record.StatusDraft {
				raters["outcome"][r.ID] = label(r.Outcome.Label)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			cvs, err := st.ChangeVerdicts(ctx, VerdictFilter{Judge: judgeName, Model: model, ChangeID: id})
			if err != nil {
				return nil, err
			}
			for _, cv := range cvs {
				pv, err := st.Prompt(ctx, cv.Verdict.Prompt)
				if err != nil {
					return nil, err
				}
				o := cv.Verdict.Decide(pv.Spec.Kind, pv.Spec.PassThreshold())
				if o == judge.Invalid {
					continue
				}
				name := "judge " + cv.Verdict.Prompt[:12]
				if raters[name] == nil {
					raters[name] = map[string]int{}
				}
				raters[name][id] = label(record.Label(o))
			}
		}
	}
	names := []string{"human", "outcome"}
	var judges []string
	for n := range raters {
		if n != "human" && n != "outcome" {
			judges = append(judges, n)
		}
	}
	sort.Strings(judges)
	names = append(names, judges...)
	for i := range names {
		for j := i + 1; j < len(names); j++ {
			a, b := raters[names[i]], raters[names[j]]
			var x, y []int
			for _, id := range ids {
				va, oka := a[id]
				vb, okb := b[id]
				if oka && okb {
					x, y = append(x, va), append(y, vb)
				}
			}
			p := Pair{Raters: [2]string{names[i], names[j]}, N: len(x)}
			if len(x) > 0 {
				pi, _ := metrics.BinaryStatistic("scott_pi", x, y)
				acc, _ := metrics.BinaryStatistic("accuracy", x, y)
				p.Pi = metrics.WithCI(len(x), pi, boot)
				p.Observed = metrics.WithCI(len(x), acc, boot)
			} else {
				p.Pi.Value = metrics.Undef("no change rated by both")
				p.Pi.Undefined = p.Pi.Value.Undefined
			}
			rep.Pairs = append(rep.Pairs, p)
		}
	}
	return rep, nil
}

func label(l record.Label) int {
	if l == record.Pass {
		return metrics.Pass
	}
	return metrics.Fail
}

// String is the pair in one line.
func (p Pair) String() string {
	return fmt.Sprintf("%s vs %s: n=%d, Scott's pi %s", p.Raters[0], p.Raters[1], p.N, estimateText(p.Pi))
}

func estimateText(e metrics.Figure) string {
	return figureText(metrics.Figure{Value: e.Value, Undefined: e.Undefined, CI: e.CI})
}
