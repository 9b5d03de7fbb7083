package roles

import (
	"math/rand/v2"
	"regexp"
	"strings"

	"github.com/gavelhq/gavel/bench/perturb"
	"github.com/gavelhq/gavel/llm"
)

var reKeepLang = regexp.MustCompile(`keep the language \((\w+)\)`)

// readings map what a perturbation instruction asks for, in the
// applier's reading, to the kinds of rewrite it knows how to make.
var readings = []struct {
	cues       []string
	categories []string
}{
	{[]string{"slower", "inefficient", "same result"}, []string{"efficiency", "structure", "duplication"}},
	{[]string{"logic error", "single line", "wrong for some"}, []string{"boundary", "condition"}},
	{[]string{"misreading", "different, related task", "related task"}, []string{"algorithm", "input_class"}},
}

// perturbProgram is the simulated perturbation applier: it reads what the
// rule asks for and really rewrites the program with a seeded rewrite of
// that kind; when it does not understand the rule or no such rewrite
// applies, it answers that it cannot, with empty code.
func perturbProgram(g *Gen, p Prompt, _ *llm.Request) map[string]any {
	code := p.Data["program"]
	lang := "python"
	if m := reKeepLang.FindStringSubmatch(p.Instructions); m != nil {
		lang = m[1]
	}
	var categories []string
	for _, r := range readings {
		if ContainsAny(p.Instructions, r.cues) {
			categories = r.categories
			break
		}
	}
	var fits []*perturb.Rule
	for _, r := range perturb.ByLang(lang) {
		for _, c := range categories {
			if r.Category == c {
				fits = append(fits, r)
			}
		}
	}
	rng := rand.New(rand.NewPCG(g.Next(), g.Next()))
	for _, i := range rng.Perm(len(fits)) {
		out, err := fits[i].Apply(code, rng)
		if err == nil && strings.TrimSpace(out) != strings.TrimSpace(code) {
			return map[string]any{"code": out}
		}
	}
	return map[string]any{"code": ""}
}
