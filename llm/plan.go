package llm

import (
	"context"
	"fmt"
)

// Plan tallies the model calls a run would make, without making any:
// what a --dry-run prints. Where a run's later calls depend on answers it
// has not had, a line holds an upper bound instead of an exact count.
type Plan struct {
	Prices *PriceTable `json:"-"`
	Lines  []*PlanLine `json:"lines"`
	// seen are the keys of the exact requests planned so far: a request
	// identical to an earlier one is answered by it, not sent again.
	seen map[string]bool
}

// PlanLine is the calls of one role in one stage.
type PlanLine struct {
	Role  string `json:"role"`
	Stage string `json:"stage"`
	Model string `json:"model"`
	// Calls is the number of requests (an upper bound when Exact is
	// false); Cached how many the cache already answers; Repeats how many
	// are identical to an earlier request of the run (two records with the
	// same inputs), answered by it; ToSend the rest.
	Calls   int  `json:"calls"`
	Cached  int  `json:"cached"`
	Repeats int  `json:"repeats"`
	ToSend  int  `json:"to_send"`
	Exact   bool `json:"exact"`
	// InputTokens are estimated (characters over four) and
	// OutputTokensMax bounded (each answer's max_tokens) for the calls to
	// send.
	InputTokens     int64 `json:"input_tokens"`
	OutputTokensMax int64 `json:"output_tokens_max"`
	// Cost is the range from the price table: low pays the input alone,
	// high every answer at its bound and a schema repair for each
	// structured one. Priced is false when the table has no price.
	Cost   CostRange `json:"cost_usd"`
	Priced bool      `json:"priced"`
}

// CostRange is a low and a high estimate, in US dollars.
type CostRange struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// inOut are a request's estimated input tokens and its answer's bound.
func inOut(req *Request) (int64, int64) {
	out := int64(req.MaxTokens)
	if out <= 0 {
		out = DefaultMaxTokens
	}
	return int64(estimateTokens(req)) - out, out
}

// InputTokens estimates a request's input tokens (characters over four,
// the schema included).
func InputTokens(req *Request) int64 {
	in, _ := inOut(req)
	return in
}

func (p *Plan) cost(l *PlanLine, in, out int64, schema bool) {
	price, ok := p.Prices.Lookup(l.Model)
	l.Priced = ok
	if !ok {
		return
	}
	l.Cost.Low += float64(in) * price.Input / 1e6
	high := (float64(in)*price.Input + float64(out)*price.Output) / 1e6
	if schema {
		high *= 2
	}
	l.Cost.High += high
}

// Exact adds requests a run will make for certain, checking which the
// cache answers.
func (p *Plan) Exact(ctx context.Context, cache Cache, role, stage string, reqs []*Request) error {
	if len(reqs) == 0 {
		return nil
	}
	l := &PlanLine{Role: role, Stage: stage, Model: reqs[0].Model, Exact: true, Priced: true}
	if p.seen == nil {
		p.seen = map[string]bool{}
	}
	for _, req := range reqs {
		l.Calls++
		key, err := Key(req)
		if err != nil {
			return err
		}
		if p.seen[key] {
			l.Repeats++
			continue
		}
		p.seen[key] = true
		if cache != nil {
			e, err := cache.Get(ctx, key)
			if err != nil {
				return fmt.Errorf("cache: %w", err)
			}
			if e != nil && e.Response != nil {
				l.Cached++
				continue
			}
		}
		in, out := inOut(req)
		l.ToSend++
		l.InputTokens += in
		l.OutputTokensMax += out
		p.cost(l, in, out, req.Schema != nil)
	}
	p.Lines = append(p.Lines, l)
	return nil
}

// Bound adds at most calls requests like like, with inputTokens input
// tokens in all: calls that depend on answers the run has not had, so the
// cache cannot be asked about them.
func (p *Plan) Bound(role, stage string, like *Request, calls int, inputTokens int64) {
	if calls <= 0 {
		return
	}
	l := &PlanLine{Role: role, Stage: stage, Model: like.Model, Calls: calls, ToSend: calls, Priced: true}
	_, out := inOut(like)
	l.InputTokens, l.OutputTokensMax = inputTokens, int64(calls)*out
	p.cost(l, inputTokens, l.OutputTokensMax, like.Schema != nil)
	p.Lines = append(p.Lines, l)
}

// Total sums the lines; it is exact only if every line is.
func (p *Plan) Total() PlanLine {
	t := PlanLine{Role: "all", Stage: "all", Exact: true, Priced: true}
	for _, l := range p.Lines {
		t.Calls += l.Calls
		t.Cached += l.Cached
		t.Repeats += l.Repeats
		t.ToSend += l.ToSend
		t.InputTokens += l.InputTokens
		t.OutputTokensMax += l.OutputTokensMax
		t.Cost.Low += l.Cost.Low
		t.Cost.High += l.Cost.High
		t.Exact = t.Exact && l.Exact
		t.Priced = t.Priced && l.Priced
	}
	return t
}
