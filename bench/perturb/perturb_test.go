package perturb_test

import (
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
