// Package perturb holds AXIOM's perturbation rules: each rule rewrites a
// correct program so that its quality falls to at most the rule's ceiling
// on the 0..5 refinement-effort scale (5 production-ready; 4 works, small
// local quality changes; 3 works, large structural quality changes; 2
// broken, small local fix; 1 broken, large structural fix; 0 rewriting is
// cheaper). Applying rules u1..un to a score-5 program gives score
// min(5, c(u1), ..., c(un)).
//
// Go rules rewrite the syntax tree with go/ast; Python rules rewrite
// CPython's own syntax tree (the ast module, driven by an embedded script:
// CPython's parser is the reference for Python and needs no cgo); rules
// that no rewrite can express are applied by a model, one prompt per rule.
package perturb

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
)

// ErrNotApplicable is returned by a rule that finds nothing to rewrite in
// a program (no loop to break, no condition to invert).
var ErrNotApplicable = errors.New("rule not applicable")

// Rule is one perturbation rule.
type Rule struct {
	Name        string
	Description string
	Lang        string // go or python
	// Category names the kind of defect (naming, dead_code, redundancy,
	// efficiency, duplication, structure, boundary, condition, edge_case,
	// algorithm, input_class, unrelated, empty).
	Category string
	// Ceiling is the highest score a program can have after this rule.
	Ceiling int
	// InComments marks a rule whose defect is in the comments (a
	// misleading doc comment): only for such a rule is a rewrite of
	// comments alone a perturbation.
	InComments bool
	// Apply rewrites a program. rng makes the choices a rule has
	// (which loop, which name) reproducible.
	Apply func(code string, rng *rand.Rand) (string, error)
}

// Catalogue is every rule, Go and Python, the neutral ones (ceiling 5)
// included.
func Catalogue() []*Rule {
	var out []*Rule
	for _, rs := range [][]*Rule{NeutralGoRules, GoRules, NeutralPythonRules, PythonRules} {
		out = append(out, rs...)
	}
	return out
}

// Normalize prints a program as every rule's output is printed (go/format
// for Go; CPython's ast.unparse for Python, which drops comments), so that
// a reference and its candidates differ in nothing the printer decides.
func Normalize(lang, code string) (string, error) {
	switch lang {
	case "go":
		p, err := parseGo(code)
		if err != nil {
			return "", err
		}
		return p.String()
	case "python":
		return pyRule("normalize")(code, rand.New(rand.NewPCG(0, 0)))
	}
	return "", fmt.Errorf("normalize: language %q", lang)
}

// ByLang returns the rules of one language, by ceiling then name.
func ByLang(lang string) []*Rule {
	var out []*Rule
	for _, r := range Catalogue() {
		if r.Lang == lang {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Ceiling != out[j].Ceiling {
			return out[i].Ceiling < out[j].Ceiling
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Validate checks the catalogue: unique names, every field set, ceilings
// in 0..5 (5: a neutral rewrite, no defect), every score covered in each
// language.
func Validate() error {
	seen := map[string]bool{}
	covered := map[string]map[int]bool{}
	for _, r := range Catalogue() {
		switch {
		case r.Name == "" || r.Description == "" || r.Category == "" || r.Apply == nil:
			return fmt.Errorf("rule %q: every field must be set", r.Name)
		case r.Lang != "go" && r.Lang != "python":
			return fmt.Errorf("rule %q: language %q", r.Name, r.Lang)
		case r.Ceiling < 0 || r.Ceiling > 5:
			return fmt.Errorf("rule %q: ceiling %d out of 0..5", r.Name, r.Ceiling)
		case seen[r.Name]:
			return fmt.Errorf("rule %q: defined twice", r.Name)
		}
		seen[r.Name] = true
		if covered[r.Lang] == nil {
			covered[r.Lang] = map[int]bool{}
		}
		covered[r.Lang][r.Ceiling] = true
	}
	for _, lang := range []string{"go", "python"} {
		for s := 0; s <= 5; s++ {
			if !covered[lang][s] {
				return fmt.Errorf("no %s rule has ceiling %d", lang, s)
			}
		}
	}
	return nil
}

// Compose applies rules in order; the program's score is the lowest
// ceiling among them. A rule whose rewrite changes nothing but comments
// and white space did not apply: its defect is not in the code.
func Compose(code string, rules []*Rule, rng *rand.Rand) (string, int, error) {
	score := 5
	for _, r := range rules {
		next, err := r.Apply(code, rng)
		if err != nil {
			return "", 0, fmt.Errorf("%s: %w", r.Name, err)
		}
		if next == code || (!r.InComments && SameCode(r.Lang, next, code)) {
			return "", 0, fmt.Errorf("%s: %w (the code is unchanged apart from comments and white space)", r.Name, ErrNotApplicable)
		}
		code = next
		score = min(score, r.Ceiling)
	}
	return code, score, nil
}

// Choose picks rules to compose for a target score: one at exactly the
// target ceiling, and sometimes one above it (applied first), so that the
// composed score is the target.
func Choose(rules []*Rule, target int, rng *rand.Rand) []*Rule {
	var at, above []*Rule
	for _, r := range rules {
		switch {
		case r.Ceiling == target:
			at = append(at, r)
		case r.Ceiling > target:
			above = append(above, r)
		}
	}
	chosen := []*Rule{at[rng.IntN(len(at))]}
	if len(above) > 0 && rng.IntN(2) == 0 {
		// The milder rule first, so that the harsher one sees its result.
		chosen = append([]*Rule{above[rng.IntN(len(above))]}, chosen...)
	}
	return chosen
}
