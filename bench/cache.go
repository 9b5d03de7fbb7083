package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	bexec "github.com/gavelhq/gavel/bench/exec"
	"github.com/gavelhq/gavel/bench/problems"
)

// ResultCache keeps sandbox results by content key, so that a build run
// again (or resumed after a crash) runs no candidate twice. The store
// implements it; Get returns nil, nil for a miss.
type ResultCache interface {
	GetResult(ctx context.Context, key string) (*bexec.Result, error)
	PutResult(ctx context.Context, key string, r *bexec.Result) error
}

// ResultKey is the content key of a candidate's run: everything that
// decides its result (the problem's test and setup, the code, the limits).
func ResultKey(p *problems.Problem, code string, lim bexec.Limits) string {
	b, _ := json.Marshal(struct {
		Version    string       `json:"v"`
		Lang       string       `json:"lang"`
		Setup      string       `json:"setup"`
		Test       string       `json:"test"`
		EntryPoint string       `json:"entry_point"`
		Code       string       `json:"code"`
		Limits     bexec.Limits `json:"limits"`
	}{"gavel-bench-run/1", p.Lang, p.Setup, p.Test, p.EntryPoint, code, lim})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// runProblem runs candidates of one problem, through the cache when there
// is one: the misses together (problems.RunMany), or each alone when
// separate is set. cached tells which results the cache gave.
func runProblem(ctx context.Context, c ResultCache, p *problems.Problem, mod *bexec.GoModule, codes []string, lim bexec.Limits, separate bool) ([]*bexec.Result, []bool, error) {
	results := make([]*bexec.Result, len(codes))
	cached := make([]bool, len(codes))
	var miss []int
	same := map[int][]int{} // a missed code -> later candidates with the same code
	firstOf := map[string]int{}
	for i, code := range codes {
		if j, ok := firstOf[code]; ok {
			same[j] = append(same[j], i) // runs once; its result is theirs too
			continue
		}
		firstOf[code] = i
		if c != nil {
			r, err := c.GetResult(ctx, ResultKey(p, code, lim))
			if err != nil {
				return nil, nil, err
			}
			if r != nil {
				results[i], cached[i] = r, true
				continue
			}
		}
		miss = append(miss, i)
	}
	defer func() { // the candidates that had the same code as one before them
		for i, ks := range same {
			for _, k := range ks {
				results[k], cached[k] = results[i], cached[i]
			}
		}
	}()
	if len(miss) == 0 {
		return results, cached, nil
	}
	// Each result is kept as soon as it is known: a build stopped part-way
	// runs again only what had not finished.
	keep := func(j int, r *bexec.Result) error {
		i := miss[j]
		results[i] = r
		if c != nil && r.Status != bexec.Timeout && r.Status != bexec.ResourceLimit {
			return c.PutResult(context.WithoutCancel(ctx), ResultKey(p, codes[i], lim), r)
		}
		return nil
	}
	if separate || len(miss) == 1 {
		for j, i := range miss {
			r, err := p.Run(ctx, mod, codes[i], lim)
			if err != nil {
				return nil, nil, err
			}
			if err := keep(j, r); err != nil {
				return nil, nil, err
			}
		}
		return results, cached, nil
	}
	progs := make([]problems.Program, len(miss))
	for j, i := range miss {
		progs[j] = problems.Program{Problem: p, Code: codes[i]}
	}
	if _, err := problems.RunPrograms(ctx, mod, progs, lim, keep); err != nil {
		return nil, nil, err
	}
	return results, cached, nil
}
