package sim_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/acr"
	"github.com/gavelhq/gavel/bench/problems"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/sim"
)

func humanEval(t *testing.T, n int) []*acr.Instruction {
	t.Helper()
	f, err := os.Open("../examples/humaneval/HumanEval.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ps, err := problems.LoadHumanEval(f, "HumanEval")
	if err != nil {
		t.Fatal(err)
	}
	ins, _ := acr.FromProblems(ps[:n])
	return ins
}

// The simulated generator sees only its request: the instruction, never
// the reference or the tests. It answers a HumanEval prompt it recognises
// with a recalled answer, an unknown one with a stub, and nothing in its
// code says how good the code is.
func TestSimulatedGeneratorSeesNoReference(t *testing.T) {
	ins := humanEval(t, 12)
	distinct := map[string]bool{}
	for _, in := range ins {
		for s := 1; s <= 7; s++ {
			req := acr.GeneratorRequest("sim", acr.GeneratorSystem(), in.Instruction, 0.8, 0, s)
			for _, m := range req.Messages {
				ref := strings.TrimSpace(acr.ExtractCode(in.Reference, "python"))
				body := ref[strings.Index(ref, `"""`+"\n")+4:]
				if strings.Contains(m.Content, strings.TrimSpace(body)) || strings.Contains(m.Content, "check(") || strings.Contains(m.Content, "assert ") {
					t.Fatalf("%s: the generator's request carries the reference or the tests:\n%s", in.ID, m.Content)
				}
			}
			resp, err := sim.Model{}.Complete(context.Background(), "", req)
			if err != nil {
				t.Fatal(err)
			}
			code := acr.ExtractCode(resp.Text, "python")
			if !strings.HasPrefix(resp.Text, sim.Label) || code == "" {
				t.Fatalf("%s sample %d: %q", in.ID, s, resp.Text)
			}
			if strings.Contains(code, "simulated") || strings.Contains(code, "quality") {
				t.Fatalf("%s: the code carries a mark: %s", in.ID, code)
			}
			distinct[code] = true
		}
	}
	if len(distinct) < 24 {
		t.Errorf("only %d distinct answers in 84 samples", len(distinct))
	}
	a, _ := sim.Model{}.Complete(context.Background(), "", acr.GeneratorRequest("sim", "", ins[0].Instruction, 0, 0, 1))
	b, _ := sim.Model{}.Complete(context.Background(), "", acr.GeneratorRequest("sim", "", ins[0].Instruction, 0, 0, 2))
	if a.Text != b.Text {
		t.Fatal("at temperature 0 two samples differ")
	}
	u, _ := sim.Model{}.Complete(context.Background(), "", acr.GeneratorRequest("sim", "",
		"Complete this.\n\n```python\ndef frobnicate(x):\n    \"\"\"Frobnicate x.\"\"\"\n```", 0.8, 0, 1))
	if !strings.Contains(u.Text, "NotImplementedError") {
		t.Fatalf("an unknown function should get an unfinished stub: %q", u.Text)
	}
}

// The honest simulated pairwise grader mostly prefers the program whose
// text shows fewer problems; the self-preferring one mostly prefers the
// answer in the generator's own style, whatever its quality.
func TestSimulatedPairwiseGraderAndItsBias(t *testing.T) {
	spec, err := judge.Load("pairwise")
	if err != nil {
		t.Fatal(err)
	}
	ref := "```python\ndef f(x):\n    return x + 1\n```"
	stubbed := sim.Label + " Here is a solution.\n\n```python\ndef f(x):\n    # your code here\n    pass\n```"
	count := func(model string) (refWins, genWins, n int) {
		for i := range 200 {
			in := judge.Input{Instruction: "f adds one. Case " + string(rune('a'+i%26)) + strings.Repeat(" ", i/26), AnswerA: stubbed, AnswerB: ref}
			req, err := spec.Request("sim", in)
			if err != nil {
				t.Fatal(err)
			}
			_, name, _ := llm.ParseModel(model)
			resp, err := sim.Model{}.Complete(context.Background(), name, req)
			if err != nil {
				t.Fatal(err)
			}
			v := spec.ParseAnswer(resp)
			if v.Outcome == judge.Invalid {
				continue
			}
			n++
			switch v.Winner {
			case "B":
				refWins++
			case "A":
				genWins++
			}
		}
		return
	}
	refWins, _, n := count("sim")
	if float64(refWins) < 0.7*float64(n) {
		t.Fatalf("honest grader: the working answer won %d of %d against a stub", refWins, n)
	}
	_, genWins, n := count("sim:self-preferring")
	if float64(genWins) < 0.6*float64(n) {
		t.Fatalf("self-preferring grader: its own stub won only %d of %d", genWins, n)
	}
}

// The simulated critic names what it sees in the answer and what running
// it found.
func TestSimulatedCritic(t *testing.T) {
	req, err := acr.CriticRequest("sim", acr.CriticInput{Instruction: "f adds one.",
		Answer:    "```python\ndef f(x):\n    # your code here\n    pass\n```",
		Reference: "```python\ndef f(x):\n    return x + 1\n```", TestResult: "tests: failed"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := sim.Model{}.Complete(context.Background(), "", req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := llm.Validate(req.Schema.JSON, resp.Text); err != nil {
		t.Fatal(err)
	}
	c, why := acr.ParseCritique(resp)
	if why != "" || !strings.HasPrefix(c, sim.Label) || !strings.Contains(c, "stub") || !strings.Contains(c, "tests: failed") || !strings.Contains(c, "corrected answer") {
		t.Fatalf("critique %q (%s)", c, why)
	}
}
