package refine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/refine"
)

func TestBalance(t *testing.T) {
	p := func(kind, text string) refine.Proposal { return refine.Proposal{Kind: kind, Text: text} }
	in := []refine.Proposal{
		p(refine.FailReason, "Fail a change that drops an error check."),
		p(refine.FailReason, "fail a change that  drops an error check"), // the same, merged
		p(refine.FailReason, "Fail a change that deletes a test."),
		p(refine.FailReason, "Fail a change that renames an exported function."),
		p(refine.PassReason, "Added logging is harmless."),
		{Kind: refine.Reword, Target: "Size and formatting alone", Text: "Formatting alone"},
		p(refine.PassReason, ""), // empty: ignored
	}
	acc, dropped := refine.Balance(in)
	// One pass reason pairs with the most proposed fail reason; the other
	// two fail reasons are dropped; the rewording is kept.
	if dropped != 2 || len(acc) != 3 {
		t.Fatalf("accepted %+v, dropped %d", acc, dropped)
	}
	if acc[0].Kind != refine.FailReason || acc[0].Text != "Fail a change that drops an error check." || acc[0].Count != 2 ||
		acc[1].Kind != refine.PassReason || acc[2].Kind != refine.Reword {
		t.Fatalf("accepted %+v", acc)
	}
	// Only one side: nothing new is accepted.
	acc, dropped = refine.Balance([]refine.Proposal{p(refine.FailReason, "a"), p(refine.FailReason, "b")})
	if len(acc) != 0 || dropped != 2 {
		t.Fatalf("one-sided: %+v %d", acc, dropped)
	}
	// Deterministic whatever the input order.
	a1, _ := refine.Balance(in)
	rev := append([]refine.Proposal(nil), in...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	a2, _ := refine.Balance(rev)
	b1, _ := json.Marshal(a1)
	b2, _ := json.Marshal(a2)
	if string(b1) != string(b2) {
		t.Fatalf("order-dependent:\n%s\n%s", b1, b2)
	}
}

func TestReviseLengthCapAndTemplates(t *testing.T) {
	s, _ := judge.Load("rubric5")
	good := map[string]any{"system": s.System + "\nFail a change that drops an error check.", "checks": s.Checks}
	b, _ := json.Marshal(good)
	// The revision is kept with one final newline, as the original has.
	size := refine.PromptSize(s) + len("\nFail a change that drops an error check.") + 1
	if _, err := refine.Revise(s, &llm.Response{JSON: b}, size); err != nil {
		t.Fatalf("a revision at the cap was rejected: %v", err)
	}
	_, err := refine.Revise(s, &llm.Response{JSON: b}, size-1)
	if !errors.Is(err, refine.ErrRejected) || !strings.Contains(err.Error(), "over the cap") {
		t.Fatalf("over the cap: %v", err)
	}
	broken := map[string]any{"system": strings.Replace(s.System, "{{inc $i}}", "1", 1), "checks": s.Checks}
	b, _ = json.Marshal(broken)
	if _, err := refine.Revise(s, &llm.Response{JSON: b}, 100000); err == nil || !strings.Contains(err.Error(), "template actions") {
		t.Fatalf("changed template action: %v", err)
	}
	renamed := append([]judge.Check(nil), s.Checks...)
	renamed[0].Name = "does_the_task"
	b, _ = json.Marshal(map[string]any{"system": s.System, "checks": renamed})
	if _, err := refine.Revise(s, &llm.Response{JSON: b}, 100000); err == nil || !strings.Contains(err.Error(), "names and order") {
		t.Fatalf("renamed check: %v", err)
	}
}

func TestSelectOriginalWinsTies(t *testing.T) {
	v := func(pi float64) *refine.Version { return &refine.Version{ValPi: metrics.Def(pi)} }
	if got := refine.Select([]*refine.Version{v(0.5), v(0.4), v(0.5)}); got != 0 {
		t.Fatalf("selected %d: the original must win when nothing beats it", got)
	}
	if got := refine.Select([]*refine.Version{v(0.3), v(0.6), v(0.6)}); got != 1 {
		t.Fatalf("selected %d: ties go to the earlier", got)
	}
	if got := refine.Select([]*refine.Version{{ValPi: metrics.Undef("x")}, v(0.1)}); got != 1 {
		t.Fatalf("selected %d over an undefined original", got)
	}
}

// fakeClient answers by role (the request's schema), as a struct of
// function fields.
type fakeClient struct {
	mu       sync.Mutex
	calls    map[string]int
	teacher  func(req *llm.Request) string
	judge    func(req *llm.Request) string
	proposer func(req *llm.Request) string
	applier  func(req *llm.Request) string
}

func (f *fakeClient) Complete(_ context.Context, req *llm.Request) (*llm.Response, error) {
	f.mu.Lock()
	f.calls[req.Schema.Name]++
	f.mu.Unlock()
	var text string
	switch req.Schema.Name {
	case "teacher_decision":
		text = f.teacher(req)
	case "verdict":
		text = f.judge(req)
	case "edit_proposals":
		text = f.proposer(req)
	default:
		text = f.applier(req)
	}
	js, err := llm.Validate(req.Schema.JSON, text)
	if err != nil {
		return &llm.Response{Text: text, Invalid: true, ParseError: err.Error()}, nil
	}
	return &llm.Response{Text: text, JSON: js}, nil
}

func keepAll(req *llm.Request) string {
	label := "fail"
	if strings.Contains(req.Messages[1].Content, `recorded label is "pass"`) {
		label = "pass"
	}
	return `{"justification":"explained","decision":"keep","label":"` + label + `"}`
}

func TestEarlyStopWhenNoDisagreement(t *testing.T) {
	db, data := simWorld(t, 300, 2)
	// The teacher keeps only passing records and the judge passes
	// everything: no disagreement on the training set, so no edit is asked
	// for and the original is the result.
	f := &fakeClient{calls: map[string]int{},
		teacher: func(req *llm.Request) string {
			if strings.Contains(req.Messages[1].Content, `recorded label is "pass"`) {
				return `{"justification":"sound","decision":"keep","label":"pass"}`
			}
			return `{"justification":"cannot tell","decision":"abstain","label":"fail"}`
		},
		judge:    func(*llm.Request) string { return `{"reasoning":"r","verdict":"pass"}` },
		proposer: func(*llm.Request) string { t.Error("no proposer call expected"); return "" },
		applier:  func(*llm.Request) string { t.Error("no applier call expected"); return "" },
	}
	s, _ := judge.Load("passfail")
	res, err := refine.Calibrate(context.Background(), f, db, data, refine.Config{Judge: s, Model: "fake", Boot: metrics.BootstrapOptions{Resamples: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Iterations != 1 || len(res.Versions) != 1 || res.Selected != 0 || !strings.Contains(res.StopReason, "no disagreement") {
		t.Fatalf("iterations %d, versions %d, stop %q", res.Iterations, len(res.Versions), res.StopReason)
	}
	if !res.Teacher.InformationGap {
		t.Error("abstaining on every failure should raise the information-gap warning")
	}
}

func TestRejectedRevisionKeepsPreviousPrompt(t *testing.T) {
	db, data := simWorld(t, 300, 2)
	f := &fakeClient{calls: map[string]int{}, teacher: keepAll,
		judge: func(*llm.Request) string { return `{"reasoning":"r","verdict":"pass"}` },
		proposer: func(req *llm.Request) string {
			return `{"analysis":"a","proposals":[{"kind":"fail_reason","text":"Fail a change that drops an error check.","target":""},{"kind":"pass_reason","text":"Logging is harmless.","target":""}]}`
		},
		// Always far over any cap.
		applier: func(req *llm.Request) string {
			b, _ := json.Marshal(map[string]string{"system": strings.Repeat("x", 100000)})
			return string(b)
		},
	}
	s, _ := judge.Load("passfail")
	res, err := refine.Calibrate(context.Background(), f, db, data, refine.Config{Judge: s, Model: "fake", Boot: metrics.BootstrapOptions{Resamples: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Versions) != 1 || f.calls["revised_prompt_binary"] != 2 || !strings.Contains(res.StopReason, "refused twice") {
		t.Fatalf("versions %d, applier calls %d, stop %q", len(res.Versions), f.calls["revised_prompt_binary"], res.StopReason)
	}
	if got := refine.CountRefusals(res.Refused); len(got) != 1 || got[0] != (refine.RefusalCount{Cause: refine.CauseOverCap, Count: 2}) || res.TooLong != 2 {
		t.Fatalf("refusals %+v, over cap %d", got, res.TooLong)
	}
}

// An applier answering a one-line prompt ({"system": "x"}) loses the
// answer format, the rule about tagged inputs and every edit: it is
// refused, asked once more with what was lost, refused again, and the
// previous prompt is kept; no version made that way can be selected.
func TestOneLineRevisionIsRefusedTwice(t *testing.T) {
	db, data := simWorld(t, 300, 2)
	var retry string
	var mu sync.Mutex
	f := &fakeClient{calls: map[string]int{}, teacher: keepAll,
		judge: func(*llm.Request) string { return `{"reasoning":"r","verdict":"pass"}` },
		proposer: func(req *llm.Request) string {
			return `{"analysis":"a","proposals":[{"kind":"fail_reason","text":"Fail a change that drops an error check.","target":""},{"kind":"pass_reason","text":"Extra logging is not a reason to fail.","target":""}]}`
		},
		applier: func(req *llm.Request) string {
			mu.Lock()
			if len(req.Messages) > 2 {
				retry = req.Messages[len(req.Messages)-1].Content
			}
			mu.Unlock()
			return `{"system": "x"}`
		},
	}
	s, _ := judge.Load("passfail")
	res, err := refine.Calibrate(context.Background(), f, db, data, refine.Config{Judge: s, Model: "fake", Boot: metrics.BootstrapOptions{Resamples: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Versions) != 1 || res.Selected != 0 || f.calls["revised_prompt_binary"] != 2 || !strings.Contains(res.StopReason, "previous prompt was kept") {
		t.Fatalf("versions %d, selected %d, applier calls %d, stop %q", len(res.Versions), res.Selected, f.calls["revised_prompt_binary"], res.StopReason)
	}
	if got := refine.CountRefusals(res.Refused); len(got) != 1 || got[0] != (refine.RefusalCount{Cause: refine.CauseAnswerFormat, Count: 2}) {
		t.Fatalf("refusals %+v", got)
	}
	if !strings.Contains(retry, `"verdict"`) || !strings.Contains(retry, "answer format") {
		t.Fatalf("the retry should say what was lost: %q", retry)
	}
}

// Reasons the prompt already carries, word for word (case and spacing
// aside), are not proposed again; rewordings and other reasons are kept.
func TestNewProposalsDropsWhatThePromptSays(t *testing.T) {
	s, _ := judge.Load("passfail")
	c := *s
	c.System += "\nLessons:\n- Fail a change that drops an error check.\n"
	ps := []refine.Proposal{
		{Kind: refine.FailReason, Text: "fail a change that  drops an error check."},
		{Kind: refine.PassReason, Text: "Log lines are harmless."},
		{Kind: refine.Reword, Text: "x", Target: "Fail a change that drops an error check."},
	}
	out, known := refine.NewProposals(&c, ps)
	if known != 1 || len(out) != 2 || out[0].Kind != refine.PassReason || out[1].Kind != refine.Reword {
		t.Fatalf("%d known, kept %+v", known, out)
	}
}

// Two rewordings of one target reach the applier as one: the most
// proposed; the other is a counted conflict. Different targets stay.
func TestOneEditATarget(t *testing.T) {
	in := []refine.Proposal{
		{Kind: refine.FailReason, Text: "Fail a change that drops an error check."},
		{Kind: refine.Reword, Target: "A TODO note is not a reason to fail.", Text: "A TODO note alone is not a reason to fail.", Count: 1},
		{Kind: refine.Reword, Target: "a todo note is not a reason to fail", Text: "Judge a TODO note by what it leaves undone.", Count: 3},
		{Kind: refine.Remove, Target: "A TODO note is not a reason to fail.", Count: 1},
		{Kind: refine.Reword, Target: "Formatting alone", Text: "Formatting and reordering alone", Count: 1},
	}
	kept, conflicts := refine.OneEditATarget(in)
	if len(kept) != 3 || kept[1].Text != "Judge a TODO note by what it leaves undone." || kept[2].Target != "Formatting alone" {
		t.Fatalf("kept %+v", kept)
	}
	if len(conflicts) != 2 || conflicts[0].Count != 1 || conflicts[1].Kind != refine.Remove {
		t.Fatalf("conflicts %+v", conflicts)
	}
}

// In a calibration, proposers rewording the same sentence two ways reach
// the applier as one edit, and the other is a counted conflict.
func TestRewordingsOfOneTargetReachTheApplierAsOne(t *testing.T) {
	db, data := simWorld(t, 300, 2)
	s, _ := judge.Load("passfail")
	target := strings.SplitN(strings.TrimSpace(s.System), ".", 2)[0] + "."
	var n atomic.Int64
	var applied []string
	var mu sync.Mutex
	f := &fakeClient{calls: map[string]int{}, teacher: keepAll,
		judge: func(*llm.Request) string { return `{"reasoning":"r","verdict":"pass"}` },
		proposer: func(req *llm.Request) string {
			text := "First rewording."
			if n.Add(1)%2 == 0 {
				text = "Second rewording."
			}
			b, _ := json.Marshal(map[string]any{"analysis": "a", "proposals": []map[string]string{{"kind": "reword", "target": target, "text": text}}})
			return string(b)
		},
		applier: func(req *llm.Request) string {
			mu.Lock()
			applied = append(applied, req.Messages[len(req.Messages)-1].Content)
			mu.Unlock()
			// Carry the rewording the applier was given.
			text := "First rewording."
			if strings.Contains(applied[len(applied)-1], "Second rewording.") {
				text = "Second rewording."
			}
			b, _ := json.Marshal(map[string]string{"system": strings.Replace(s.System, target, text, 1)})
			return string(b)
		},
	}
	res, err := refine.Calibrate(context.Background(), f, db, data, refine.Config{Judge: s, Model: "fake", MaxIter: 1, Boot: metrics.BootstrapOptions{Resamples: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) == 0 {
		t.Fatalf("no applier call (stop: %s)", res.StopReason)
	}
	if c := strings.Count(applied[0], "- reword:"); c != 1 {
		t.Fatalf("the applier got %d rewordings of one target:\n%s", c, applied[0])
	}
	if v := res.Versions[len(res.Versions)-1]; v.Conflicts != 1 || len(v.DroppedEdits) == 0 {
		t.Fatalf("conflicts %d, dropped %+v (%d versions, stop %s)", v.Conflicts, v.DroppedEdits, len(res.Versions), res.StopReason)
	}
}
