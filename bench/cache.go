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

// run runs a candidate, through the cache when there is one. Results
// that depend on the machine's load (timeouts, resource limits) are not
// kept.
func run(ctx context.Context, c ResultCache, p *problems.Problem, mod *bexec.GoModule, code string, lim bexec.Limits) (*bexec.Result, bool, error) {
	if c == nil {
		r, err := p.Run(ctx, mod, code, lim)
		return r, false, err
	}
	key := ResultKey(p, code, lim)
	if r, err := c.GetResult(ctx, key); err != nil {
		return nil, false, err
	} else if r != nil {
		return r, true, nil
	}
	r, err := p.Run(ctx, mod, code, lim)
	if err != nil {
		return nil, false, err
	}
	if r.Status != bexec.Timeout && r.Status != bexec.ResourceLimit {
		if err := c.PutResult(context.WithoutCancel(ctx), key, r); err != nil {
			return nil, false, err
		}
	}
	return r, false, nil
}
