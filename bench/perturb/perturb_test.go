package perturb_test

import (
	"context"
	"errors"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/bench/perturb"
	"github.com/gavelhq/gavel/internal/golden"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/sim"
)

func TestCatalogue(t *testing.T) {
	if err := perturb.Validate(); err != nil {
		t.Fatal(err)
	}
	if n := len(perturb.Catalogue()); n < 24 {
		t.Fatalf("%d rules, want at least 24", n)
	}
}

// TestRulesOnFixture applies every rule to a fixture program: the result
// must differ, still parse, and match its golden file (so each rule's
// rewrite is visible in review).
func TestRulesOnFixture(t *testing.T) {
	fixtures := map[string]string{}
	for lang, file := range map[string]string{"go": "testdata/fixture.go.txt", "python": "testdata/fixture.py.txt"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		fixtures[lang] = string(b)
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	for _, r := range perturb.Catalogue() {
		t.Run(r.Name, func(t *testing.T) {
			// A rule that needs what the shared fixture lacks has its own.
			fixture := fixtures[r.Lang]
			if b, err := os.ReadFile("testdata/fixture_" + r.Name + ".go.txt"); err == nil {
				fixture = string(b)
			}
			out, err := r.Apply(fixture, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(out) == strings.TrimSpace(fixture) {
				t.Fatal("the rule changed nothing")
			}
			switch r.Lang {
			case "go":
				if _, err := parser.ParseFile(token.NewFileSet(), "", "package main\n"+out, 0); err != nil {
					t.Fatalf("result does not parse: %v\n%s", err, out)
				}
			case "python":
				cmd := exec.Command("python3", "-I", "-c", "import ast,sys; ast.parse(sys.stdin.read())")
				cmd.Stdin = strings.NewReader(out)
				if b, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("result does not parse: %s\n%s", b, out)
				}
			}
			golden.Check(t, r.Name+".golden", out)
			// The same seed gives the same rewrite.
			again, _ := r.Apply(fixture, rand.New(rand.NewPCG(1, 2)))
			if again != out {
				t.Fatal("not deterministic for a seed")
			}
		})
	}
}

func TestNotApplicable(t *testing.T) {
	noLoop := "func Add(a, b int) int {\n\treturn a + b\n}\n"
	for _, name := range []string{"go_off_by_one", "go_drop_loop", "go_missing_guard", "go_redundant_copy"} {
		for _, r := range perturb.Catalogue() {
			if r.Name == name {
				if _, err := r.Apply(noLoop, rand.New(rand.NewPCG(1, 1))); !errors.Is(err, perturb.ErrNotApplicable) {
					t.Errorf("%s on a function without what it rewrites: %v", name, err)
				}
			}
		}
	}
}

func TestComposeScoreIsMinimumCeiling(t *testing.T) {
	b, _ := os.ReadFile("testdata/fixture.go.txt")
	var rules []*perturb.Rule
	for _, r := range perturb.ByLang("go") {
		if r.Name == "go_misleading_names" || r.Name == "go_off_by_one" {
			rules = append(rules, r)
		}
	}
	_, score, err := perturb.Compose(string(b), rules, rand.New(rand.NewPCG(3, 3)))
	if err != nil || score != 2 {
		t.Fatalf("score %d, %v; want min(4, 2) = 2", score, err)
	}
}

func TestLLMRulePromptsGolden(t *testing.T) {
	b, _ := os.ReadFile("testdata/fixture.go.txt")
	for _, spec := range perturb.LLMRuleSpecs {
		req, err := perturb.LLMRequest(spec, "go", "m", string(b))
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		for _, m := range req.Messages {
			out.WriteString("=== " + string(m.Role) + "\n" + m.Content + "\n")
		}
		golden.Check(t, spec.Name+".golden", out.String())
	}
	if len(perturb.LLMRuleSpecs) == 0 {
		t.Fatal("no model rules")
	}
}

func TestLLMRulesThroughSim(t *testing.T) {
	reg := llm.NewRegistry()
	reg.Register(sim.Info)
	svc := llm.NewService(reg, nil, llm.Options{})
	b, _ := os.ReadFile("testdata/fixture.go.txt")
	rules := perturb.LLMRules(context.Background(), svc, "sim", "go")
	// The simulated applier really rewrites the code, with a rewrite of
	// the kind the rule asks for, and leaves no mark in it.
	applied := 0
	for _, r := range rules {
		out, score, err := perturb.Compose(string(b), []*perturb.Rule{r}, rand.New(rand.NewPCG(1, 1)))
		if errors.Is(err, perturb.ErrNotApplicable) {
			continue
		}
		applied++
		if err != nil {
			t.Fatal(err)
		}
		if score != r.Ceiling || perturb.SameCode("go", out, string(b)) || !strings.Contains(out, "HasCloseElements") || strings.Contains(out, "simulated") {
			t.Fatalf("%s through sim: score %d\n%s", r.Name, score, out)
		}
	}
	if applied == 0 {
		t.Fatal("the simulated applier applied none of the model rules")
	}
	// A rule the simulated applier does not understand: it answers that it
	// cannot, and the rule does not apply.
	odd := &perturb.Rule{Name: "llm_odd", Lang: "go", Ceiling: 2, Apply: func(code string, _ *rand.Rand) (string, error) {
		req, err := perturb.LLMRequest(perturb.LLMRuleSpec{Name: "llm_odd", Instruction: "Translate the identifiers into Latin."}, "go", "sim", code)
		if err != nil {
			return "", err
		}
		resp, err := svc.Complete(context.Background(), req)
		if err != nil {
			return "", err
		}
		if strings.Contains(resp.Text, `"code":""`) {
			return "", perturb.ErrNotApplicable
		}
		return resp.Text, nil
	}}
	if _, _, err := perturb.Compose(string(b), []*perturb.Rule{odd}, rand.New(rand.NewPCG(1, 1))); !errors.Is(err, perturb.ErrNotApplicable) {
		t.Fatalf("a rule the simulated applier cannot apply: %v", err)
	}
}

// Compose refuses a rewrite that changes only comments and white space,
// whoever made it, except for a rule whose defect is a comment.
func TestComposeRefusesCommentOnlyRewrites(t *testing.T) {
	goSrc := "package p\n\n// Sum adds.\nfunc Sum(a, b int) int {\n\treturn a + b\n}\n"
	pySrc := "def add(a, b):\n    # adds\n    return a + b  # the sum\n"
	cases := []struct {
		lang, before, after string
		same                bool
	}{
		{"go", goSrc, goSrc + "\n// [simulated] perturbation not applied\n", true},
		{"go", goSrc, strings.ReplaceAll(goSrc, "\t", "    "), true},
		{"go", goSrc, strings.Replace(goSrc, "// Sum adds.", "/* Sum multiplies. */", 1), true},
		{"go", goSrc, strings.Replace(goSrc, "a + b", "a - b", 1), false},
		{"go", goSrc, strings.Replace(goSrc, "return a + b", "return a + b + 0", 1), false},
		{"python", pySrc, pySrc + "# not applied\n", true},
		{"python", pySrc, strings.Replace(pySrc, "a + b", "a+b", 1), true},
		{"python", pySrc, strings.Replace(pySrc, "a + b", "a - b", 1), false},
		{"python", "s = 'a # b'\n", "s = 'a'\n", false},
		{"python", "s = 'a b'\n", "s = 'ab'\n", false},
	}
	for i, c := range cases {
		if got := perturb.SameCode(c.lang, c.before, c.after); got != c.same {
			t.Errorf("case %d (%s): SameCode = %v, want %v\n%s", i, c.lang, got, c.same, c.after)
		}
		rule := &perturb.Rule{Name: "r", Lang: c.lang, Ceiling: 3, Apply: func(string, *rand.Rand) (string, error) { return c.after, nil }}
		_, _, err := perturb.Compose(c.before, []*perturb.Rule{rule}, rand.New(rand.NewPCG(1, 1)))
		if c.same != errors.Is(err, perturb.ErrNotApplicable) {
			t.Errorf("case %d: Compose error %v", i, err)
		}
	}
	doc := &perturb.Rule{Name: "doc", Lang: "go", Ceiling: 4, InComments: true, Apply: func(string, *rand.Rand) (string, error) {
		return strings.Replace(goSrc, "// Sum adds.", "// Sum divides.", 1), nil
	}}
	if _, score, err := perturb.Compose(goSrc, []*perturb.Rule{doc}, rand.New(rand.NewPCG(1, 1))); err != nil || score != 4 {
		t.Fatalf("a misleading-comment rule must still apply: %d %v", score, err)
	}
}
