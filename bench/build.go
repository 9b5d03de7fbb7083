// Package bench builds AXIOM benchmarks and measures judges on them: from
// correct programs with tests, rule-guided perturbation makes programs of
// known quality (0..5), each checked by running it in the sandbox; a
// diverse, balanced set is kept; judges and metrics are then scored
// against the known scores.
package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"
	"sync"

	bexec "github.com/gavelhq/gavel/bench/exec"
	"github.com/gavelhq/gavel/bench/perturb"
	"github.com/gavelhq/gavel/bench/problems"
	"github.com/gavelhq/gavel/llm"
)

// Program is one benchmark item: a program of known score for a problem.
type Program struct {
	ID        string   `json:"id"`
	Problem   string   `json:"problem"`
	Lang      string   `json:"lang"`
	Score     int      `json:"score"`
	Rules     []string `json:"rules"`
	Prompt    string   `json:"prompt"`
	Code      string   `json:"code"`
	Reference string   `json:"reference"`
	// Status and Reason are the executor's verdict on the program.
	Status bexec.Status `json:"status"`
	Reason string       `json:"reason,omitempty"`
	// Flags note what validation found odd but not disqualifying.
	Flags      []string   `json:"flags,omitempty"`
	Provenance Provenance `json:"provenance"`
}

// Provenance says where a program came from.
type Provenance struct {
	Source string `json:"source"`
	Seed   uint64 `json:"seed"`
	Tool   string `json:"tool"`
}

// BuildOptions configure Build.
type BuildOptions struct {
	Lang     string
	PerScore int // programs per problem and score (default 1)
	// Candidates per problem and score tried before selection (default
	// 3 x PerScore).
	Candidates  int
	Seed        uint64
	Concurrency int // problems checked at once (default 2)
	// Separate compiles and links every Go candidate into a test binary of
	// its own, as builds did before 2026-12-01, instead of one binary per
	// problem (for comparison; the results are the same).
	Separate bool
	Limits   bexec.Limits
	Source   string
	Tool     string
	// Extra are more rules to compose with, e.g. perturb.LLMRules.
	Extra    []*perturb.Rule
	Progress func(done, total int)
	// Cache, when set, keeps every candidate's result, so that a build
	// run again runs nothing it ran before.
	Cache ResultCache
}

// Dropped is a candidate that validation rejected, with why.
type Dropped struct {
	Problem string   `json:"problem"`
	Score   int      `json:"score"`
	Rules   []string `json:"rules"`
	Reason  string   `json:"reason"`
}

// BuildResult is a built benchmark and its accounts.
type BuildResult struct {
	Programs []*Program `json:"-"`
	// SetAside lists problems whose canonical solution fails, or is known
	// to be wrong (problems.Errata).
	SetAside []string       `json:"set_aside"`
	PerScore map[int]int    `json:"per_score"`
	PerRule  map[string]int `json:"per_rule"`
	Dropped  []Dropped      `json:"dropped"`
	// Trimmed counts valid programs left out to balance the score levels.
	Trimmed int `json:"trimmed_for_balance"`
	// Candidates counts the candidates run; Cached those whose result came
	// from the cache.
	Candidates int `json:"candidates"`
	Cached     int `json:"cached_runs"`
}

type candidate struct {
	p     *problems.Problem
	score int
	rules []string
	code  string
	res   *bexec.Result
	// reference marks the canonical program: run to check the problem,
	// never selected (score-5 programs are neutral rewrites of it).
	reference bool
}

// withDefaults fills the zero values of the options.
func (opt BuildOptions) withDefaults() BuildOptions {
	if opt.PerScore <= 0 {
		opt.PerScore = 1
	}
	if opt.Candidates <= 0 {
		opt.Candidates = 3 * opt.PerScore
	}
	if opt.Concurrency <= 0 {
		opt.Concurrency = 2
	}
	return opt
}

// Build makes a balanced benchmark from problems.
func Build(ctx context.Context, ps []*problems.Problem, mod *bexec.GoModule, opt BuildOptions) (*BuildResult, error) {
	opt = opt.withDefaults()
	rules := append(perturb.ByLang(opt.Lang), opt.Extra...)
	if len(rules) == 0 {
		return nil, fmt.Errorf("no rules for language %q", opt.Lang)
	}
	res := &BuildResult{PerScore: map[int]int{}, PerRule: map[string]int{}}

	// Candidates: the canonical program at 5, and rule compositions below.
	var cands []*candidate
	for pi, p := range ps {
		cands = append(cands, candidatesFor(p, pi, rules, opt)...)
	}

	// Run every candidate in the sandbox, a problem's together (one Go
	// test binary for all of them), problems in parallel.
	res.Candidates = len(cands)
	byProblem := map[*problems.Problem][]*candidate{}
	var order []*problems.Problem
	for _, c := range cands {
		if byProblem[c.p] == nil {
			order = append(order, c.p)
		}
		byProblem[c.p] = append(byProblem[c.p], c)
	}
	var mu sync.Mutex
	var firstErr error
	done := 0
	sem := make(chan struct{}, opt.Concurrency)
	var wg sync.WaitGroup
	for _, p := range order {
		cs := byProblem[p]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			codes := make([]string, len(cs))
			for i, c := range cs {
				codes[i] = c.code
			}
			rs, cached, err := runProblem(ctx, opt.Cache, p, mod, codes, opt.Limits, opt.Separate)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			for i, c := range cs {
				c.res = rs[i]
				if cached[i] {
					res.Cached++
				}
			}
			done += len(cs)
			if opt.Progress != nil {
				opt.Progress(done, len(cands))
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}

	// Calibrate: the canonical program must pass; 3..5 must pass their
	// tests and 0..2 must fail them.
	setAside := map[string]bool{}
	for _, c := range cands {
		if c.reference && (c.res.Status != bexec.Passed || c.p.Erratum != "") {
			setAside[c.p.ID] = true
			res.SetAside = append(res.SetAside, c.p.ID)
		}
	}
	valid := map[string]map[int][]*candidate{}
	for _, c := range cands {
		if setAside[c.p.ID] || c.reference {
			continue
		}
		if why := inconsistency(c); why != "" {
			res.Dropped = append(res.Dropped, Dropped{Problem: c.p.ID, Score: c.score, Rules: c.rules, Reason: why})
			continue
		}
		if valid[c.p.ID] == nil {
			valid[c.p.ID] = map[int][]*candidate{}
		}
		valid[c.p.ID][c.score] = append(valid[c.p.ID][c.score], c)
	}

	// Select the most diverse per problem and score, then balance.
	byScore := map[int][]*candidate{}
	for _, p := range ps {
		for s := 0; s <= 5; s++ {
			for _, c := range Diverse(valid[p.ID][s], p.Code(), opt.PerScore) {
				byScore[s] = append(byScore[s], c)
			}
		}
	}
	n := -1
	for s := 0; s <= 5; s++ {
		if n < 0 || len(byScore[s]) < n {
			n = len(byScore[s])
		}
	}
	refs := map[*problems.Problem]string{}
	for s := 0; s <= 5; s++ {
		res.Trimmed += len(byScore[s]) - n
		for i, c := range byScore[s][:n] {
			ref, ok := refs[c.p]
			if !ok {
				// The reference goes through the candidates' printer.
				var err error
				if ref, err = perturb.Normalize(c.p.Lang, c.p.Code()); err != nil {
					return nil, fmt.Errorf("problem %s: print the reference: %w", c.p.ID, err)
				}
				refs[c.p] = ref
			}
			prog := &Program{
				ID: fmt.Sprintf("%s/s%d/%d", c.p.ID, s, i), Problem: c.p.ID, Lang: c.p.Lang, Score: s, Rules: c.rules,
				Prompt: c.p.Prompt, Code: c.code, Reference: ref, Status: c.res.Status, Reason: c.res.Reason,
				Provenance: Provenance{Source: opt.Source, Seed: opt.Seed, Tool: opt.Tool},
			}
			if prog.Rules == nil {
				prog.Rules = []string{}
			}
			if (s == 1 || s == 2) && c.res.Status == bexec.BuildError {
				prog.Flags = append(prog.Flags, "does not compile: a judge sees it at once")
			}
			res.Programs = append(res.Programs, prog)
			res.PerScore[s]++
			for _, r := range c.rules {
				res.PerRule[r]++
			}
		}
	}
	sort.SliceStable(res.Programs, func(i, j int) bool { return res.Programs[i].ID < res.Programs[j].ID })
	if len(res.Programs) == 0 {
		return res, errors.New("no program survived validation")
	}
	return res, nil
}

// candidatesFor makes a problem's candidates: its canonical program (run
// as the reference, never selected), and rule compositions at every score,
// 5 by neutral rewrites (so no score-5 program equals its reference),
// drawn with a generator seeded by the seed and the problem's index in the
// build (so any process makes the same).
func candidatesFor(p *problems.Problem, pi int, rules []*perturb.Rule, opt BuildOptions) []*candidate {
	cands := []*candidate{{p: p, score: 5, code: p.Code(), reference: true}}
	rng := rand.New(rand.NewPCG(opt.Seed, uint64(pi)))
	ref, _ := perturb.Normalize(p.Lang, p.Code())
	for s := 5; s >= 0; s-- {
		seen := map[string]bool{p.Code(): true, ref: true}
		for try := 0; try < 8*opt.Candidates && countFor(cands, p, s) < opt.Candidates; try++ {
			chosen := perturb.Choose(rules, s, rng)
			code, score, err := perturb.Compose(p.Code(), chosen, rng)
			if err != nil || score != s || seen[code] {
				continue
			}
			seen[code] = true
			var names []string
			for _, r := range chosen {
				names = append(names, r.Name)
			}
			cands = append(cands, &candidate{p: p, score: s, rules: names, code: code})
		}
	}
	return cands
}

// WarmProblem runs the candidates of the problem at index pi of a build
// into opt.Cache, exactly as Build would: a unit of work another process
// (a queue worker) can do, after which Build finds every result cached.
func WarmProblem(ctx context.Context, p *problems.Problem, pi int, mod *bexec.GoModule, opt BuildOptions) (ran int, err error) {
	opt = opt.withDefaults()
	if opt.Cache == nil {
		return 0, errors.New("warming a problem needs a result cache")
	}
	rules := append(perturb.ByLang(opt.Lang), opt.Extra...)
	var codes []string
	for _, c := range candidatesFor(p, pi, rules, opt) {
		codes = append(codes, c.code)
	}
	_, cached, err := runProblem(ctx, opt.Cache, p, mod, codes, opt.Limits, opt.Separate)
	if err != nil {
		return 0, err
	}
	for _, c := range cached {
		if !c {
			ran++
		}
	}
	return ran, nil
}

func countFor(cs []*candidate, p *problems.Problem, s int) int {
	n := 0
	for _, c := range cs {
		if c.p == p && c.score == s && !c.reference {
			n++
		}
	}
	return n
}

// inconsistency says why a candidate's run contradicts its score.
func inconsistency(c *candidate) string {
	st := c.res.Status
	switch {
	case c.score >= 3 && st != bexec.Passed:
		return fmt.Sprintf("score %d needs passing tests, but the program %s (%s)", c.score, st, c.res.Reason)
	case c.score <= 2 && st == bexec.Passed:
		return fmt.Sprintf("score %d needs failing tests, but they pass", c.score)
	}
	return ""
}

var tokenRE = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*|\d+|:=|==|!=|<=|>=|&&|\|\||<<|>>|\+\+|--|\+=|-=|\*=|/=|\*\*|//|\S`)

// Tokens splits code into identifier, number and symbol tokens.
func Tokens(code string) []string { return tokenRE.FindAllString(code, -1) }

// Levenshtein is the edit distance between two strings, in characters.
func Levenshtein(a, b string) int {
	n := max(len(a), len(b))
	return int(math.Round(EditDistance(strings.Split(a, ""), strings.Split(b, "")) * float64(n)))
}

// EditDistance is the normalised token edit distance between two programs:
// Levenshtein distance over tokens divided by the longer length.
func EditDistance(a, b []string) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 0
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return float64(prev[len(b)]) / float64(max(len(a), len(b)))
}

// Diverse picks k candidates greedily farthest-first: each next one is the
// farthest (by normalised token edit distance) from the original and from
// those already picked. Ties keep the earlier candidate.
func Diverse(cs []*candidate, original string, k int) []*candidate {
	if len(cs) <= k {
		return cs
	}
	toks := make([][]string, len(cs))
	for i, c := range cs {
		toks[i] = Tokens(c.code)
	}
	picked := [][]string{Tokens(original)}
	var out []*candidate
	used := make([]bool, len(cs))
	for len(out) < k {
		best, bestD := -1, -1.0
		for i := range cs {
			if used[i] {
				continue
			}
			d := 2.0
			for _, p := range picked {
				d = min(d, EditDistance(toks[i], p))
			}
			if d > bestD {
				best, bestD = i, d
			}
		}
		used[best] = true
		out = append(out, cs[best])
		picked = append(picked, toks[best])
	}
	return out
}

// Check runs a program again, for tests and audits: its status, and
// whether it agrees with its score.
func Check(ctx context.Context, prog *Program, p *problems.Problem, mod *bexec.GoModule, lim bexec.Limits) (bexec.Status, string, error) {
	r, err := p.Run(ctx, mod, prog.Code, lim)
	if err != nil {
		return "", "", err
	}
	why := inconsistency(&candidate{score: prog.Score, res: r})
	return r.Status, why, nil
}

// ProblemsByID indexes problems.
func ProblemsByID(ps []*problems.Problem) map[string]*problems.Problem {
	m := map[string]*problems.Problem{}
	for _, p := range ps {
		m[p.ID] = p
	}
	return m
}

// Describe summarises a build for people.
func (r *BuildResult) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d programs:", len(r.Programs))
	for s := 0; s <= 5; s++ {
		fmt.Fprintf(&b, " %d at score %d;", r.PerScore[s], s)
	}
	fmt.Fprintf(&b, " %d candidates dropped by validation, %d trimmed for balance, %d problems set aside", len(r.Dropped), r.Trimmed, len(r.SetAside))
	return b.String()
}

// PlanModelRules adds to p the most model calls a build with the
// model-applied rules of model can make: each try at a candidate composes at
// most two rules, each of which may be a model's, and a problem has at most
// 8 x Candidates tries per score below 5. Which rules a try draws depends
// on the answers before it, so the plan is a bound, its input tokens those
// of a request on each problem's canonical solution.
func PlanModelRules(ps []*problems.Problem, opt BuildOptions, model string, p *llm.Plan) error {
	opt = opt.withDefaults()
	if len(perturb.LLMRuleSpecs) == 0 || len(ps) == 0 {
		return nil
	}
	perProblem := 5 * 8 * opt.Candidates * 2
	var like *llm.Request
	var tokens int64
	for _, pr := range ps {
		req, err := perturb.LLMRequest(perturb.LLMRuleSpecs[0], opt.Lang, model, pr.Code())
		if err != nil {
			return err
		}
		like, tokens = req, tokens+int64(perProblem)*llm.InputTokens(req)
	}
	p.Bound("perturber", "candidates", like, perProblem*len(ps), tokens)
	return nil
}
