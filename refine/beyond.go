package refine

import (
	"context"
	"fmt"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/teacher"
)

// BlindAgreement sets the teacher's label-blind predictions beside the
// judge: both asked the same question of the same training records, how
// well each agrees with the recorded labels (Scott's pi), and the paired
// difference. A blind teacher that agrees better than the judge is a sign
// that the judge asks the wrong question (review framing, where the
// outcome answers another).
type BlindAgreement struct {
	Records    int               `json:"records"`
	Value      metrics.Value     `json:"value"`
	CI         *metrics.Interval `json:"ci,omitempty"`
	Judge      metrics.Figure    `json:"judge"`
	Difference metrics.Figure    `json:"difference"`
	Note       string            `json:"note,omitempty"`
}

// BlindAheadNote is said when the blind teacher agrees better.
const BlindAheadNote = "the teacher's label-blind prediction agrees with the outcomes better than the judge on the same records: " +
	"the judge may be asking another question than the one the outcomes answer (try --start passfail,predict)"

// blindAgreement compares the first teacher's blind predictions with the
// original prompt's verdicts on the training records both decided.
func blindAgreement(train []*record.Record, preds []teacher.Prediction, s *judge.Spec, vs map[string]judge.Verdict, boot metrics.BootstrapOptions) *BlindAgreement {
	byID := map[string]teacher.Prediction{}
	for _, p := range preds {
		byID[p.RecordID] = p
	}
	var ref, blind, jd []int
	var groups []string
	for _, r := range train {
		p, ok := byID[r.ID]
		v, okv := vs[r.ID]
		if !ok || p.Invalid || p.Label == "" || !okv {
			continue
		}
		d := v.Decide(s.Kind, s.PassThreshold())
		if d == judge.Invalid {
			continue
		}
		ref = append(ref, labelCode(r.Outcome.Label))
		blind = append(blind, labelCode(p.Label))
		jd = append(jd, labelCode(record.Label(d)))
		groups = append(groups, judge.Groups([]*record.Record{r})[0])
	}
	out := &BlindAgreement{Records: len(ref)}
	if len(ref) == 0 {
		out.Value = metrics.Undef("no training record has both a blind prediction and a readable verdict")
		return out
	}
	boot.Groups = groups
	pb, _ := metrics.BinaryStatistic("scott_pi", ref, blind)
	pj, _ := metrics.BinaryStatistic("scott_pi", ref, jd)
	f := metrics.WithCI(len(ref), pb, boot)
	out.Value, out.CI = f.Value, f.CI
	out.Judge = metrics.WithCI(len(ref), pj, boot)
	out.Difference = metrics.WithCI(len(ref), metrics.Paired(pb, pj), boot)
	if d := out.Difference.Value; d.Defined() && d.V > 0 {
		out.Note = BlindAheadNote
		if iv := out.Difference.CI; iv != nil && iv.Defined() && iv.Lo <= 0 {
			out.Note += fmt.Sprintf(" (the paired interval [%.3f, %.3f] still holds no difference)", iv.Lo, iv.Hi)
		}
	}
	return out
}

func labelCode(l record.Label) int {
	if l == record.Pass {
		return metrics.Pass
	}
	return metrics.Fail
}

// motivatedBy is the training records that motivated a version's accepted
// edits, and its ancestors'.
func motivatedBy(parent map[string]bool, accepted []Proposal) map[string]bool {
	out := make(map[string]bool, len(parent))
	for id := range parent {
		out[id] = true
	}
	for _, p := range accepted {
		for _, id := range p.Sources {
			out[id] = true
		}
	}
	return out
}

// unmotivated is pi on the kept training records outside motivated, with
// its interval, and how many of those records the version decides right
// where the original was wrong (fixed) and wrong where it was right
// (broken): edits that generalise fix more than they break there.
func unmotivated(s, orig *judge.Spec, train []*record.Record, vs, origVS map[string]judge.Verdict, motivated map[string]bool, boot metrics.BootstrapOptions) (fig metrics.Figure, fixed, broken int) {
	var ref, pred, op []int
	var groups []string
	for _, r := range train {
		if motivated[r.ID] {
			continue
		}
		v, ok := vs[r.ID]
		o, ok2 := origVS[r.ID]
		if !ok || !ok2 {
			continue
		}
		d, od := v.Decide(s.Kind, s.PassThreshold()), o.Decide(orig.Kind, orig.PassThreshold())
		if d == judge.Invalid || od == judge.Invalid {
			continue
		}
		ref, pred, op = append(ref, labelCode(r.Outcome.Label)), append(pred, labelCode(record.Label(d))), append(op, labelCode(record.Label(od)))
		groups = append(groups, judge.Groups([]*record.Record{r})[0])
		switch label := r.Outcome.Label; {
		case record.Label(od) != label && record.Label(d) == label:
			fixed++
		case record.Label(od) == label && record.Label(d) != label:
			broken++
		}
	}
	if len(ref) == 0 {
		u := metrics.Undef("every kept training record motivated an edit")
		return metrics.Figure{Value: u, Undefined: u.Undefined}, 0, 0
	}
	boot.Groups = groups
	stat, _ := metrics.BinaryStatistic("scott_pi", ref, pred)
	return metrics.WithCI(len(ref), stat, boot), fixed, broken
}

// flipsBetween counts the records two verdict sets decide differently.
func flipsBetween(a, b *judge.Spec, rs []*record.Record, va, vb map[string]judge.Verdict) int {
	n := 0
	for _, r := range rs {
		x, ok := va[r.ID]
		y, ok2 := vb[r.ID]
		if !ok || !ok2 {
			continue
		}
		dx, dy := x.Decide(a.Kind, a.PassThreshold()), y.Decide(b.Kind, b.PassThreshold())
		if dx != judge.Invalid && dy != judge.Invalid && dx != dy {
			n++
		}
	}
	return n
}

// retestOriginal asks the original prompt again about k validation
// records (judge.RunRetest).
func retestOriginal(ctx context.Context, client llm.Client, cfg Config, val []*record.Record, valV map[string]judge.Verdict) (*judge.Retest, int, error) {
	rt, res, err := judge.RunRetest(ctx, client, cfg.Judge, cfg.Model, judge.RetestRecords(val, cfg.Retest), valV, 0,
		judge.RunOptions{Concurrency: cfg.Concurrency}, cfg.Boot)
	if err != nil {
		return nil, 0, err
	}
	if len(res.Failed) > 0 {
		return nil, 0, fmt.Errorf("retest: %d records could not be asked again (rerun to retry them); first: %w", len(res.Failed), res.Failed[0])
	}
	return rt, res.Pending, nil
}

func unmotivatedCount(kept []*record.Record, motivated map[string]bool) string {
	n := 0
	for _, r := range kept {
		if !motivated[r.ID] {
			n++
		}
	}
	return fmt.Sprint(n)
}
