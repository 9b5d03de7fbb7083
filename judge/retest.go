package judge

import (
	"context"
	"fmt"
	"hash/fnv"
	"sort"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
)

// RetestSample is the sample index of a retest's second ask.
const RetestSample = 1

// Retest is a judge's own noise, measured by asking it the same question
// twice (the second ask a request of its own, cached like any): how often
// the verdict flips, and Scott's pi between the two asks. A change between
// two prompt versions that flips fewer verdicts than this cannot be told
// from noise.
type Retest struct {
	// Samples are the records asked twice with a readable verdict both
	// times; Flips those whose two verdicts differ.
	Samples int `json:"samples"`
	Flips   int `json:"flips"`
	// FlipRate is Flips over Samples; ScottPi the agreement of the two
	// asks; each with its bootstrap interval over the records' groups.
	FlipRate metrics.Figure `json:"flip_rate"`
	ScottPi  metrics.Figure `json:"scott_pi"`
	// Unreadable counts records left out for an unreadable answer.
	Unreadable int `json:"unreadable"`
	// Flipped are the IDs of the records whose two verdicts differ (the
	// records behind Flips: gavel runs records and the viewer open them).
	Flipped []string `json:"flipped"`
}

// RetestRecords picks k of the records to ask again (all when k is at
// least their number): the same k for the same records, whatever their
// order, spread over them by a hash of their IDs.
func RetestRecords(rs []*record.Record, k int) []*record.Record {
	if k <= 0 || k >= len(rs) {
		return rs
	}
	out := append([]*record.Record(nil), rs...)
	h := func(id string) uint64 { f := fnv.New64a(); f.Write([]byte(id)); return f.Sum64() }
	sort.SliceStable(out, func(i, j int) bool { return h(out[i].ID) < h(out[j].ID) })
	out = out[:k]
	pos := map[string]int{}
	for i, r := range rs {
		pos[r.ID] = i
	}
	sort.Slice(out, func(i, j int) bool { return pos[out[i].ID] < pos[out[j].ID] })
	return out
}

// RunRetest asks the judge again about rs (sample RetestSample) and
// compares with first, the verdicts of the first ask by record ID.
func RunRetest(ctx context.Context, client llm.Client, s *Spec, model string, rs []*record.Record, first map[string]Verdict,
	threshold int, opt RunOptions, boot metrics.BootstrapOptions) (*Retest, *RunResult, error) {
	opt.Sample = RetestSample
	res, err := Run(ctx, client, s, model, rs, opt)
	if err != nil {
		return nil, res, err
	}
	if threshold == 0 {
		threshold = s.PassThreshold()
	}
	second := map[string]Verdict{}
	for _, v := range res.Verdicts {
		second[v.RecordID] = v
	}
	var a, b []int
	var groups []string
	out := &Retest{Flipped: []string{}}
	for _, r := range rs {
		v1, ok1 := first[r.ID]
		v2, ok2 := second[r.ID]
		if !ok1 || !ok2 {
			continue // pending or failed: counted by the run
		}
		d1, d2 := v1.Decide(s.Kind, threshold), v2.Decide(s.Kind, threshold)
		if d1 == Invalid || d2 == Invalid {
			out.Unreadable++
			continue
		}
		a, b = append(a, code(d1)), append(b, code(d2))
		groups = append(groups, Groups([]*record.Record{r})[0])
		if d1 != d2 {
			out.Flips++
			out.Flipped = append(out.Flipped, r.ID)
		}
	}
	out.Samples = len(a)
	if out.Samples == 0 {
		out.FlipRate = metrics.Figure{Value: metrics.Undef("no record has a readable verdict from both asks"), Undefined: "no record has a readable verdict from both asks"}
		out.ScottPi = out.FlipRate
		return out, res, nil
	}
	boot.Groups = groups
	flips := func(idx []int) metrics.Value {
		n := 0
		for _, i := range idx {
			if a[i] != b[i] {
				n++
			}
		}
		return metrics.Def(float64(n) / float64(len(idx)))
	}
	pi, err := metrics.BinaryStatistic("scott_pi", a, b)
	if err != nil {
		return nil, res, fmt.Errorf("retest: %w", err)
	}
	out.FlipRate = metrics.WithCI(len(a), flips, boot)
	out.ScottPi = metrics.WithCI(len(a), pi, boot)
	return out, res, nil
}

func code(o Outcome) int {
	if o == Pass {
		return metrics.Pass
	}
	return metrics.Fail
}
