package sim_test

import (
	"context"
	"os"
	"regexp"
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

var reMark = regexp.MustCompile(`# \[simulated\] generator sample: quality ([0-5])`)

// The simulated generator answers a known instruction with the reference
// made worse by perturbation rules, its true quality in a labelled
// comment; the qualities spread over the scale; at temperature 0 the
// samples are one answer; an unknown instruction gets no code.
func TestSimulatedGenerator(t *testing.T) {
	ins := humanEval(t, 12)
	know := sim.NewKnowledge()
	for _, in := range ins {
		know.Learn(in.Instruction, in.Language, acr.ExtractCode(in.Reference, in.Language))
	}
	m := sim.Model{Knows: know}
	qualities := map[string]int{}
	for _, in := range ins {
		for s := 1; s <= 7; s++ {
			resp, err := m.Complete(context.Background(), "", acr.GeneratorRequest("sim", "", in.Instruction, 0.8, 0, s))
			if err != nil {
				t.Fatal(err)
			}
			code := acr.ExtractCode(resp.Text, "python")
			q := reMark.FindStringSubmatch(code)
			if q == nil || !strings.HasPrefix(resp.Text, sim.Label) {
				t.Fatalf("%s sample %d: no labelled quality in %q", in.ID, s, resp.Text)
			}
			qualities[q[1]]++
			if q[1] == "5" && !strings.Contains(code, strings.TrimSpace(acr.ExtractCode(in.Reference, "python"))) {
				t.Fatalf("%s: a quality-5 sample must be the reference:\n%s", in.ID, code)
			}
		}
	}
	for _, q := range []string{"0", "1", "2", "3", "4", "5"} {
		if qualities[q] == 0 {
			t.Errorf("no sample of quality %s in 84: %v", q, qualities)
		}
	}
	a, _ := m.Complete(context.Background(), "", acr.GeneratorRequest("sim", "", ins[0].Instruction, 0, 0, 1))
	b, _ := m.Complete(context.Background(), "", acr.GeneratorRequest("sim", "", ins[0].Instruction, 0, 0, 2))
	if a.Text != b.Text {
		t.Fatal("at temperature 0 two samples differ")
	}
	u, _ := m.Complete(context.Background(), "", acr.GeneratorRequest("sim", "", "Write a compiler.", 0.8, 0, 1))
	if acr.ExtractCode(u.Text, "python") == "" || reMark.MatchString(u.Text) {
		// The answer is prose (the whole text counts as code with no fence),
		// never a program with a quality.
		t.Fatalf("unknown instruction: %q", u.Text)
	}
}

// The honest simulated pairwise judge mostly prefers the better program;
// the self-preferring one mostly prefers the generated program, whatever
// its quality.
func TestSimulatedPairwiseJudgeAndItsBias(t *testing.T) {
	spec, err := judge.Load("pairwise")
	if err != nil {
		t.Fatal(err)
	}
	ref := "```python\ndef f(x):\n    return x + 1\n```"
	broken := "```python\n# [simulated] generator sample: quality 1 (rules: py_wrong_operator)\ndef f(x):\n    return x - 1\n```"
	count := func(model string) (refWins, genWins, n int) {
		for i := range 200 {
			in := judge.Input{Instruction: "f adds one. Case " + string(rune('a'+i%26)) + strings.Repeat(" ", i/26), AnswerA: broken, AnswerB: ref}
			req, err := spec.Request("sim", in)
			if err != nil {
				t.Fatal(err)
			}
			name := strings.TrimPrefix(strings.TrimPrefix(model, "sim"), ":")
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
		t.Fatalf("honest judge: the correct reference won %d of %d against a broken program", refWins, n)
	}
	_, genWins, n := count("sim:self-preferring")
	if float64(genWins) < 0.6*float64(n) {
		t.Fatalf("self-preferring judge: the broken generated program won only %d of %d", genWins, n)
	}
}

// The simulated critic names what the perturbation rules did.
func TestSimulatedCritic(t *testing.T) {
	req, err := acr.CriticRequest("sim", acr.CriticInput{Instruction: "f adds one.",
		Answer:    "```python\n# [simulated] generator sample: quality 1 (rules: py_wrong_operator)\ndef f(x):\n    return x - 1\n```",
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
	if why != "" || !strings.HasPrefix(c, sim.Label) || !strings.Contains(c, "tests: failed") || !strings.Contains(c, "corrected answer") {
		t.Fatalf("critique %q (%s)", c, why)
	}
}
