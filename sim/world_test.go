package sim_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/acr"

	"github.com/gavelhq/gavel/bench/perturb"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
	"github.com/gavelhq/gavel/sim"
	"github.com/gavelhq/gavel/teacher"
)

// roleRequests builds one request of every kind the simulated model
// answers, from records of the default world.
func roleRequests(t *testing.T) []*llm.Request {
	t.Helper()
	rs, err := sim.Records(sim.WorldOptions{N: 60, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	pf, _ := judge.Load("passfail")
	rb, _ := judge.Load("rubric5")
	noRef, _ := pf.WithInputs([]string{"task", "candidate"})
	var reqs []*llm.Request
	for i := range rs {
		r := &rs[i]
		for _, s := range []*judge.Spec{pf, rb, noRef} {
			jr, err := s.Request("sim", judge.InputOf(r))
			if err != nil {
				t.Fatal(err)
			}
			tr, err := teacher.Request(s, "sim", r)
			if err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs, jr, tr)
		}
		for _, model := range []string{"sim", "sim:random-rules"} {
			v := &judge.Verdict{Outcome: judge.Pass, Reasoning: "[simulated] Nothing stands out; pass."}
			pr, err := refine.ProposerRequest(pf, model, r, v, 0, fmt.Sprintf("[simulated] The change deletes the check `if err != nil {` (%d).", i))
			if err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs, pr)
		}
	}
	edits := []refine.Proposal{{Kind: refine.FailReason, Text: "Fail a change that throws an error away."}, {Kind: refine.PassReason, Text: "Log lines are harmless."}}
	for _, s := range []*judge.Spec{pf, rb} {
		ar, err := refine.ApplierRequest(s, "sim", edits, 4000)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, ar)
	}
	pw, _ := judge.Load("pointwise5")
	pp, _ := judge.Load("pairwise")
	for i, in := range humanEval(t, 6) {
		gr := acr.GeneratorRequest("sim", acr.GeneratorSystem(), in.Instruction, 0.8, 0, i+1)
		ans, err := sim.Model{}.Complete(context.Background(), "", gr)
		if err != nil {
			t.Fatal(err)
		}
		sr, _ := pw.Request("sim", judge.Input{Instruction: in.Instruction, Candidate: ans.Text})
		ab, ba, err := acr.PairwiseRequests(pp, "sim:self-preferring", in, ans.Text)
		if err != nil {
			t.Fatal(err)
		}
		cr, err := acr.CriticRequest("sim", acr.CriticInput{Instruction: in.Instruction, Answer: ans.Text, Reference: in.Reference, TestResult: "tests: failed"})
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, gr, sr, ab, ba, cr)
	}
	for _, spec := range perturb.LLMRuleSpecs {
		req, err := perturb.LLMRequest(spec, "go", "sim", "package main\n\nfunc Sum(xs []int) int {\n\ts := 0\n\tfor i := 0; i < len(xs); i++ {\n\t\ts += xs[i]\n\t}\n\treturn s\n}\n")
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, req)
	}
	return reqs
}

func answers(t *testing.T, reqs []*llm.Request) []string {
	t.Helper()
	var out []string
	for _, req := range reqs {
		_, name, _ := llm.ParseModel(req.Model)
		resp, err := sim.Model{}.Complete(context.Background(), name, req)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, resp.Text)
	}
	return out
}

// No simulated model can see the world's truth: with every signal's effect
// turned round (fatal signals benign, benign ones fatal) the world's
// records change, but every answer to the same request, from the judges
// and from every role, is byte for byte the same. And with the world's
// truth redrawn for several worlds (everything the roles read held fixed:
// the same requests), the answers stay the same in each.
func TestPermutedWorldGivesIdenticalAnswers(t *testing.T) {
	reqs := roleRequests(t)
	before := answers(t, reqs)
	// Five worlds, each with its truth and that truth turned round: the
	// records' outcomes follow the truth, the roles' answers do not.
	for seed := uint64(1); seed <= 5; seed++ {
		w := sim.NewWorld(seed)
		recsBefore, _ := sim.Records(sim.WorldOptions{N: 300, Seed: 9, World: w})
		var turned []string
		for _, s := range sim.Signals {
			if w.Effect(s) == sim.Benign {
				turned = append(turned, s.Name)
			}
		}
		recsAfter, _ := sim.Records(sim.WorldOptions{N: 300, Seed: 9, World: sim.WorldWith(seed, turned)})
		changed := 0
		for i := range recsBefore {
			if recsBefore[i].Candidate != recsAfter[i].Candidate {
				t.Fatalf("world %d: the truth changed record %d's patch", seed, i)
			}
			if recsBefore[i].Outcome.Label != recsAfter[i].Outcome.Label {
				changed++
			}
		}
		if changed < 30 {
			t.Fatalf("world %d: the permuted world changed only %d of 300 outcomes: the permutation is not in effect", seed, changed)
		}
	}
	after := answers(t, reqs)
	kinds := map[string]int{}
	for i := range reqs {
		if reqs[i].Schema == nil {
			kinds["generator"]++
		} else {
			kinds[reqs[i].Schema.Name]++
		}
		if before[i] != after[i] {
			t.Errorf("request %d answered differently in the permuted world:\n%s\n%s", i, before[i], after[i])
		}
	}
	for _, k := range []string{"verdict", "rubric", "teacher_decision", "edit_proposals", "revised_prompt_binary", "revised_prompt_rubric", "perturbed_program", "generator", "scores", "preference", "critique"} {
		if kinds[k] == 0 {
			t.Errorf("no %s request was checked", k)
		}
	}
}

// ruleRate is how often the simulated passfail judge fails the records
// showing a signal, with extra lines added to its prompt.
func ruleRate(t *testing.T, rs []*record.Record, extra string) float64 {
	t.Helper()
	s, _ := judge.Load("passfail")
	c := *s
	if extra != "" {
		c.System += "\n" + extra + "\n"
	}
	fails, n := 0, 0
	for _, r := range rs {
		req, err := c.Request("sim", judge.InputOf(r))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := sim.Model{}.Complete(context.Background(), "", req)
		if err != nil {
			t.Fatal(err)
		}
		v := c.ParseAnswer(resp)
		if v.Outcome == judge.Invalid {
			continue
		}
		n++
		if v.Outcome == judge.Fail {
			fails++
		}
	}
	return float64(fails) / float64(n)
}

func showing(t *testing.T, sig *sim.Signal, want bool) []*record.Record {
	rs, err := sim.Records(sim.WorldOptions{N: 3000, Seed: 21})
	if err != nil {
		t.Fatal(err)
	}
	var out []*record.Record
	for i := range rs {
		has := false
		for _, s := range sim.Detect(rs[i].Candidate) {
			has = has || s == sig
		}
		if has == want && len(out) < 150 {
			out = append(out, &rs[i])
		}
	}
	return out
}

// The judge follows a rule by its meaning: two unrelated wordings of the
// same rule move it alike; a vague one moves it less; a rule about
// something the change does not show does not move it.
func TestJudgeFollowsRulesByMeaning(t *testing.T) {
	with := showing(t, sim.SwallowedError, true)
	base := ruleRate(t, with, "")
	a := ruleRate(t, with, "- Fail a change that throws away an error instead of returning it.")
	b := ruleRate(t, with, "- Reject any patch where a returned err value is silently discarded, e.g. assigned to the blank identifier.")
	vague := ruleRate(t, with, "- Fail a change whose error handling is sloppy.")
	t.Logf("discarded errors failed: %.2f built-in, %.2f and %.2f with two wordings, %.2f vague", base, a, b, vague)
	if a < base+0.3 || b < base+0.3 {
		t.Errorf("the rule did not move the judge: %.2f -> %.2f, %.2f", base, a, b)
	}
	if d := a - b; d > 0.1 || d < -0.1 {
		t.Errorf("two wordings of one rule moved the judge differently: %.2f vs %.2f", a, b)
	}
	if vague >= a-0.15 || vague <= base {
		t.Errorf("a vague rule should move the judge, less than a clear one: %.2f (clear %.2f, none %.2f)", vague, a, base)
	}
	without := showing(t, sim.SwallowedError, false)
	b0 := ruleRate(t, without, "")
	b1 := ruleRate(t, without, "- Fail a change that throws away an error instead of returning it.")
	// 150 records: a share near 0.2 has a standard error of 0.033, and
	// the rule changes every request, so the judge's draws are new.
	if d := b1 - b0; d > 0.1 || d < -0.1 {
		t.Errorf("a rule that does not apply moved the judge: %.2f -> %.2f", b0, b1)
	}
	// A phrase the judge does not understand moves nothing.
	if c := ruleRate(t, with, "- Fail a change that is not idiomatic."); c > base+0.1 {
		t.Errorf("an unrelated rule moved the judge: %.2f -> %.2f", base, c)
	}
}

// The built-in prompt already says size and formatting are no reason to
// fail: the judge honours it.
func TestJudgeHonoursTheBuiltInPrompt(t *testing.T) {
	with := showing(t, sim.CosmeticReformat, true)
	s, _ := judge.Load("passfail")
	c := *s
	c.System = "You review changes. Answer with a JSON object: \"reasoning\", then \"verdict\".\n"
	plain := 0.0
	{
		fails, n := 0, 0
		for _, r := range with {
			req, _ := c.Request("sim", judge.InputOf(r))
			resp, _ := sim.Model{}.Complete(context.Background(), "", req)
			v := c.ParseAnswer(resp)
			if v.Outcome != judge.Invalid {
				n++
				if v.Outcome == judge.Fail {
					fails++
				}
			}
		}
		plain = float64(fails) / float64(n)
	}
	builtin := ruleRate(t, with, "")
	t.Logf("reformatted changes failed: %.2f with a bare prompt, %.2f with the built-in one", plain, builtin)
	if builtin > plain-0.15 {
		t.Errorf("the built-in prompt's \"size and formatting alone are not reasons to fail\" did not help: %.2f vs %.2f", builtin, plain)
	}
}

// The roles' code holds nothing keyed to the world's signals: no signal's
// name or phrase appears in package sim/roles, whose traits have names of
// their own; so no role can carry a table of the world's truth by name.
func TestRolesKnowNoSignalByName(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("roles", "*.go"))
	if err != nil || len(files) < 5 {
		t.Fatalf("the roles' files: %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		for _, s := range sim.Signals {
			for _, name := range []string{s.Name, s.Phrase, strings.ReplaceAll(s.Name, "_", "")} {
				if strings.Contains(src, name) {
					t.Errorf("%s names the world's signal %s (%q)", f, s.Name, name)
				}
			}
		}
	}
}
