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
			out, err := r.Apply(fixtures[r.Lang], rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(out) == strings.TrimSpace(fixtures[r.Lang]) {
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
			again, _ := r.Apply(fixtures[r.Lang], rand.New(rand.NewPCG(1, 2)))
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
	out, err := rules[0].Apply(string(b), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "HasCloseElements") || !strings.Contains(out, "[simulated]") {
		t.Fatalf("sim perturbation: %s", out)
	}
}
