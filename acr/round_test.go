package acr_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/gavelhq/gavel/acr"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
)

// scripted answers every role from the request's text, so the round's
// logic can be followed by hand:
//   - generator: instruction "good" -> GOOD code; "bad" -> BROKEN code;
//     "even" -> SAME code; sample 2 of "good" is BETTER (scored higher);
//   - pointwise: GOOD 8, BETTER 10, SAME 6, BROKEN 2 on every criterion;
//   - pairwise: prefers GOOD/BETTER over the reference in either position;
//     for SAME answers "A" whatever A is (position bias);
//   - critic: a fixed critique.
type scripted struct {
	mu    sync.Mutex
	calls map[string]int
}

func fenced(text, tag string) string {
	_, rest, ok := strings.Cut(text, "<"+tag+">\n")
	if !ok {
		return ""
	}
	body, _, _ := strings.Cut(rest, "\n</"+tag+">")
	return body
}

func (s *scripted) Complete(_ context.Context, req *llm.Request) (*llm.Response, error) {
	user := req.Messages[len(req.Messages)-1].Content
	role := "generator"
	if req.Schema != nil {
		role = req.Schema.Name
	}
	s.mu.Lock()
	if s.calls == nil {
		s.calls = map[string]int{}
	}
	s.calls[role]++
	s.mu.Unlock()
	resp := &llm.Response{ModelVersion: role + "-v1"}
	switch role {
	case "generator":
		code := map[string]string{"good": "GOOD", "bad": "BROKEN", "even": "SAME"}[user]
		if user == "good" && req.Sample == 2 {
			code = "BETTER"
		}
		resp.Text = fmt.Sprintf("Sample %d.\n\n```python\n%s = %d\n```\n", req.Sample, code, req.Sample)
	case "scores":
		cand := fenced(user, "candidate")
		v := 2
		switch {
		case strings.Contains(cand, "BETTER"):
			v = 10
		case strings.Contains(cand, "GOOD"):
			v = 8
		case strings.Contains(cand, "SAME"):
			v = 6
		}
		resp.Text = fmt.Sprintf(`{"reasoning":"r","scores":{"correctness":%d,"efficiency":%d,"readability":%d,"robustness":%d,"adherence":%d}}`, v, v, v, v, v)
	case "preference":
		a, b := fenced(user, "answer_a"), fenced(user, "answer_b")
		w := "A"
		switch {
		case strings.Contains(a, "GOOD") || strings.Contains(a, "BETTER"):
			w = "A"
		case strings.Contains(b, "GOOD") || strings.Contains(b, "BETTER"):
			w = "B"
		}
		resp.Text = `{"reasoning":"r","winner":"` + w + `"}`
	case "critique":
		resp.Text = `{"critique":"It breaks on empty input. Please correct it."}`
	}
	return resp, nil
}

// fakeExec: code with BROKEN fails its tests; anything else passes.
type fakeExec struct{}

func (fakeExec) Run(_ context.Context, in *acr.Instruction, code string) (*acr.Execution, error) {
	if strings.Contains(code, "BROKEN") {
		return &acr.Execution{Status: "failed", Reason: "a test failed", Tested: true, Output: "AssertionError"}, nil
	}
	return &acr.Execution{Status: "passed", Tested: true}, nil
}

func round(t *testing.T, client llm.Client, ties acr.Side) *acr.Round {
	t.Helper()
	pw, _ := judge.Load("pointwise5")
	pp, _ := judge.Load("pairwise")
	ins := []*acr.Instruction{
		{ID: "i-good", Instruction: "good", Reference: "```python\nREF = 0\n```", Language: "python", Tests: "assert True"},
		{ID: "i-bad", Instruction: "bad", Reference: "```python\nREF = 0\n```", Language: "python", Tests: "assert True"},
		{ID: "i-even", Instruction: "even", Reference: "```python\nREF = 0\n```", Language: "python", Tests: "assert True"},
	}
	r, err := acr.NewRound(acr.Config{Generator: "g", JudgeModel: "j", CriticModel: "c", System: "Be good.", N: 3,
		Temperature: 0.7, Pointwise: pw, Pairwise: pp, ExecWeight: 0.5, Ties: ties}, client, fakeExec{}, ins)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRoundBranchesAndOutputFormat(t *testing.T) {
	client := &scripted{}
	r := round(t, client, acr.Reference)
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	// 9 samples, 9 pointwise, 3 x 2 pairwise, and critiques for i-bad
	// (executor) and i-even (order disagreement, a tie, to the reference).
	if want := map[string]int{"generator": 9, "scores": 9, "preference": 6, "critique": 2}; fmt.Sprint(client.calls) != fmt.Sprint(want) {
		t.Fatalf("calls %v, want %v", client.calls, want)
	}
	var data, lineage bytes.Buffer
	if err := r.Write(&data, &lineage, false); err != nil {
		t.Fatal(err)
	}
	var recs []acr.SFTRecord
	for _, line := range strings.Split(strings.TrimSpace(data.String()), "\n") {
		var rec acr.SFTRecord
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	// i-good: sample 2 (BETTER, composite 0.5 + 0.5*1) wins by the judge,
	// single-turn.
	want0 := `{"messages":[{"role":"system","content":"Be good."},{"role":"user","content":"good"},{"role":"assistant","content":"Sample 2.\n\n` + "```python\\nBETTER = 2\\n```" + `\n"}]}`
	if got := strings.Split(data.String(), "\n")[0]; got != want0 {
		t.Fatalf("single-turn record:\n got %s\nwant %s", got, want0)
	}
	// i-bad: every sample broken; the reference wins by the executor; the
	// record is two-turn, the sample's turn kept out of the loss.
	two := recs[1].Messages
	if len(two) != 5 || two[2].Role != llm.Assistant || *two[2].Weight != 0 || !strings.Contains(two[2].Content, "BROKEN = 1") ||
		two[3].Role != llm.User || two[3].Content != "It breaks on empty input. Please correct it." ||
		two[4].Role != llm.Assistant || two[4].Content != "```python\nREF = 0\n```" || *two[4].Weight != 1 {
		t.Fatalf("two-turn record: %+v", two)
	}
	var ls []acr.Lineage
	for _, line := range strings.Split(strings.TrimSpace(lineage.String()), "\n") {
		var l acr.Lineage
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	if ls[0].Branch != "single_turn" || ls[0].BestSample != 2 || ls[0].DecidedBy != "judge" || ls[0].Pairwise.How != "both_orders" ||
		ls[0].Models.GeneratorVersion != "generator-v1" || ls[0].Models.JudgeVersion != "scores-v1" || ls[0].Round != 1 {
		t.Fatalf("lineage of i-good: %+v", ls[0])
	}
	if ls[1].Branch != "critique" || ls[1].DecidedBy != "executor" || ls[1].TestWinner != acr.Reference || ls[1].BestSample != 1 ||
		ls[1].Models.CriticVersion != "critique-v1" {
		t.Fatalf("lineage of i-bad: %+v", ls[1])
	}
	if ls[2].Branch != "critique" || ls[2].DecidedBy != "tie" || ls[2].Pairwise.How != "order_disagreement" {
		t.Fatalf("lineage of i-even: %+v", ls[2])
	}
	if c := ls[0].Samples[1].Composite; c != 1 {
		t.Fatalf("BETTER's composite %v, want 0.5*1 + 0.5*(10-1)/9 = 1", c)
	}
	if c := ls[1].Samples[0].Composite; c < 0.0555 || c > 0.0556 {
		t.Fatalf("BROKEN's composite %v, want 0.5*0 + 0.5*(2-1)/9 = 0.0556", c)
	}
	// The statistics add up.
	st := acr.Stats(ls)[0]
	if st.Instructions != 3 || st.SingleTurn+st.Critique+st.Skipped != 3 || st.Samples != 9 || st.Executed != 9 ||
		st.ExecStatus["passed"]+st.ExecStatus["failed"] != 9 || st.ExecStatus["failed"] != 3 ||
		st.SamplePassRate.V != 6.0/9 || st.WinRate.V != 1.0/3 || st.BestPassRate.V != 2.0/3 || st.ReferencePassRate.V != 1 {
		t.Fatalf("stats: %+v", st)
	}
	// The next round's references are the winners.
	next := r.NextInstructions()
	if next[0].Reference != r.Items[0].BestSample().Answer || next[1].Reference != "```python\nREF = 0\n```" ||
		r.Items[0].Instruction.Reference != "```python\nREF = 0\n```" {
		t.Fatalf("next references: %q, %q (this round's must not change)", next[0].Reference, next[1].Reference)
	}
	// Ties to the sample: i-even becomes single-turn, with no critique.
	client = &scripted{}
	r = round(t, client, acr.Sample)
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r.Items[2].Branch() != "single_turn" || client.calls["critique"] != 1 {
		t.Fatalf("ties to the sample: %s, %d critiques", r.Items[2].Branch(), client.calls["critique"])
	}
}

// pendingClient answers nothing: every request is pending, as offline.
type pendingClient struct{ n int }

func (p *pendingClient) Complete(context.Context, *llm.Request) (*llm.Response, error) {
	p.n++
	return nil, fmt.Errorf("pending: %w", llm.ErrPending)
}

func TestRoundStopsAtTheFirstStageWithPendingRequests(t *testing.T) {
	client := &pendingClient{}
	r := round(t, client, acr.Reference)
	err := r.Run(context.Background())
	if !errors.Is(err, llm.ErrPending) || !strings.Contains(err.Error(), "generate: 9 request(s)") {
		t.Fatalf("got %v, want 9 pending generator requests", err)
	}
	if client.n != 9 {
		t.Fatalf("%d requests, want the 9 of the first stage only", client.n)
	}
}
