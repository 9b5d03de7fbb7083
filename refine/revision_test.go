package refine_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/refine"
)

func answer(t *testing.T, system string, conflicts ...string) *llm.Response {
	t.Helper()
	b, err := json.Marshal(map[string]any{"system": system, "conflicts": conflicts})
	if err != nil {
		t.Fatal(err)
	}
	return &llm.Response{JSON: b}
}

func causeOf(err error) string {
	var re *refine.RefusalError
	if errors.As(err, &re) {
		return re.Cause
	}
	return ""
}

// A revision is checked against what the built-in prompt says: it must
// keep the untouched sentences, the answer format and every edit.
func TestCheckRevision(t *testing.T) {
	s, _ := judge.Load("passfail")
	fail := refine.Proposal{Kind: refine.FailReason, Text: "Fail a change that swallows an error returned by a callee."}
	pass := refine.Proposal{Kind: refine.PassReason, Text: "Renaming a private helper is not a reason to fail."}
	target := "Judge behaviour, not style."
	reword := refine.Proposal{Kind: refine.Reword, Target: target, Text: "Judge behaviour and correctness, not style."}
	edits := []refine.Proposal{fail, pass, reword}
	opt := refine.ReviseOptions{Edits: edits}
	answerAt := strings.LastIndex(s.System, "Answer with a JSON object")
	withAll := strings.Replace(s.System[:answerAt], target, reword.Text, 1) +
		"Lessons:\n- " + fail.Text + "\n- " + pass.Text + "\n\n" + s.System[answerAt:]

	r, err := refine.CheckRevision(s, answer(t, withAll, "none really"), 100000, opt)
	if err != nil {
		t.Fatalf("a faithful revision was refused: %v", err)
	}
	if r.Kept != 1 || len(r.Conflicts) != 1 || len(r.Missing) != 0 {
		t.Fatalf("kept %v, conflicts %v, missing %v", r.Kept, r.Conflicts, r.Missing)
	}
	// Re-wrapping lines and turning bullets into prose keeps the text.
	rewrapped := strings.ReplaceAll(strings.ReplaceAll(withAll, "\n  ", " "), "\n- ", "\n")
	if _, err := refine.CheckRevision(s, answer(t, rewrapped), 100000, opt); err != nil {
		t.Fatalf("re-wrapped: %v", err)
	}

	cases := []struct {
		name, system, cause string
	}{
		{"one line", "x", refine.CauseAnswerFormat},
		{"answer format dropped", s.System[:answerAt] + "- " + fail.Text + "\n- " + pass.Text + "\n" + reword.Text, refine.CauseAnswerFormat},
		// The paragraph on tagged inputs (3 of the prompt's 13 untouched
		// sentences) gone: 77% kept.
		{"lost text", dropParagraph(withAll, "The task, the agent's change"), refine.CauseLostText},
		{"a reason left out", strings.Replace(withAll, "- "+pass.Text+"\n", "", 1), refine.CauseMissingEdit},
		{"the target still there", strings.Replace(withAll, reword.Text, target+" Correctness too.", 1), refine.CauseMissingEdit},
		{"template broken", withAll + "\n{{.Nope", refine.CauseTemplate},
	}
	for _, c := range cases {
		_, err := refine.CheckRevision(s, answer(t, c.system), 100000, opt)
		if got := causeOf(err); got != c.cause {
			t.Errorf("%s: cause %q (%v), want %q", c.name, got, err, c.cause)
		}
		if err != nil && !errors.Is(err, refine.ErrRejected) {
			t.Errorf("%s: %v does not wrap ErrRejected", c.name, err)
		}
	}
	// Over the cap: refused as such, and a retry for the cap may leave
	// edits out, which it lists.
	_, err = refine.CheckRevision(s, answer(t, withAll), refine.PromptSize(s), opt)
	if causeOf(err) != refine.CauseOverCap || !errors.Is(err, refine.ErrTooLong) {
		t.Fatalf("over the cap: %v", err)
	}
	short := strings.Replace(withAll, "- "+pass.Text+"\n", "", 1)
	r, err = refine.CheckRevision(s, answer(t, short), 100000, refine.ReviseOptions{Edits: edits, AllowMissing: true})
	if err != nil || len(r.Missing) != 1 || r.Missing[0].Text != pass.Text {
		t.Fatalf("allowed to leave edits out: %v, %+v", err, r)
	}
}

// dropParagraph removes the paragraph that starts with prefix.
func dropParagraph(text, prefix string) string {
	paras := strings.Split(text, "\n\n")
	var out []string
	for _, p := range paras {
		if !strings.HasPrefix(strings.TrimSpace(p), prefix) {
			out = append(out, p)
		}
	}
	return strings.Join(out, "\n\n")
}

// A new reason is dropped when the prompt, or a reason kept before it,
// already says the opposite of the same subject; reasons on other
// subjects and of the same polarity stay.
func TestDropOpposed(t *testing.T) {
	s, _ := judge.Load("passfail")
	c := *s
	c.System += "\nLessons:\n- A TODO or FIXME note left in the code is not a reason to fail.\n"
	ps := []refine.Proposal{
		{Kind: refine.FailReason, Text: "Fail a change that leaves a TODO or FIXME."},
		{Kind: refine.PassReason, Text: "A FIXME or TODO comment is not a reason to fail by itself."},
		{Kind: refine.FailReason, Text: "Fail a change that swallows an error returned by a callee."},
		{Kind: refine.PassReason, Text: "Swallowing an error returned by a callee is harmless."},
		{Kind: refine.PassReason, Text: "Reordering imports is not a reason to fail."},
	}
	kept, dropped := refine.DropOpposed(&c, ps)
	if len(kept) != 3 || kept[0].Text != ps[1].Text || kept[1].Text != ps[2].Text || kept[2].Text != ps[4].Text {
		t.Fatalf("kept %+v", kept)
	}
	if len(dropped) != 2 || !strings.Contains(dropped[0].Why, "the prompt already says the opposite") ||
		!strings.Contains(dropped[1].Why, "an edit kept before it") {
		t.Fatalf("dropped %+v", dropped)
	}
	// The built-in prompt's own rules count: formatting is not a reason
	// to fail there.
	if o := refine.Opposed([]string{"size and formatting alone are not reasons to fail."},
		refine.Proposal{Kind: refine.FailReason, Text: "Fail a change whose size and formatting hide a bug."}); o == "" {
		t.Error("a fail reason on size and formatting should meet the prompt's pass rule")
	}
}

func version(pi, gainLo, failRecall float64) *refine.Version {
	return &refine.Version{ValPi: metrics.Def(pi), ValFailRecall: metrics.Def(failRecall), ValPassRecall: metrics.Def(1),
		ValGain: metrics.Figure{Value: metrics.Def(gainLo + 0.1), CI: &metrics.Interval{Lo: gainLo, Hi: gainLo + 0.2, Level: 0.8}}}
}

// The lower-bound rule keeps the original unless a version's paired gain
// is surely above 0, and then takes the highest lower bound (not the best
// point); recall targets make versions unselectable.
func TestSelectionPick(t *testing.T) {
	vs := func() []*refine.Version {
		return []*refine.Version{version(0.5, 0, 0.9), version(0.8, -0.05, 0.9), version(0.7, 0.02, 0.9), version(0.65, 0.04, 0.7)}
	}
	lb := refine.Selection{Rule: refine.SelectLowerBound, Level: 0.8}
	if got, why := lb.Pick(vs()); got != 3 || !strings.Contains(why, "lower bound") {
		t.Fatalf("lower-bound picked %d (%s)", got, why)
	}
	if got := refine.Select(vs()); got != 1 {
		t.Fatalf("point picked %d", got)
	}
	lb.MinFailRecall = 0.8
	v := vs()
	if got, _ := lb.Pick(v); got != 2 || !strings.Contains(v[3].Unselectable, "fail recall 0.70 below the target 0.80") {
		t.Fatalf("with a fail-recall target picked %d (%q)", got, v[3].Unselectable)
	}
	none := vs()[:2]
	if got, why := lb.Pick(none); got != 0 || !strings.Contains(why, "the original stays") {
		t.Fatalf("no sure gain: picked %d (%s)", got, why)
	}
	point := refine.Selection{Rule: refine.SelectPoint, MinPassRecall: 1.01}
	if err := point.Check(); err == nil {
		t.Error("a recall above 1 should be refused")
	}
	if err := (refine.Selection{Rule: "best"}).Check(); err == nil {
		t.Error("an unknown rule should be refused")
	}
}
