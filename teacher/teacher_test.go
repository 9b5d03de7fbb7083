package teacher_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/internal/golden"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/teacher"
)

func sample() *record.Record {
	r := &record.Record{ID: "r1", Task: "Reject orders with no items.", Candidate: "+\tif len(o.Items) == 0 {\n+\t\treturn nil\n+\t}",
		Reference: "+\tif len(o.Items) == 0 {\n+\t\treturn nil, ErrEmptyOrder\n+\t}",
		Context:   map[string]string{"test_output": "--- FAIL: TestCreateOrder"},
		Outcome:   record.Outcome{Status: record.StatusAbandoned, Reason: "changes requested"}}
	r.Normalize()
	return r
}

func TestPromptGolden(t *testing.T) {
	j, _ := judge.Load("passfail")
	req, err := teacher.Request(j, "m", sample())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, m := range req.Messages {
		b.WriteString("=== " + string(m.Role) + "\n" + m.Content + "\n")
	}
	golden.Check(t, "teacher_passfail.golden", b.String())
	// The teacher sees exactly the judge's inputs: no reference when the
	// judge has none, the test output when the judge sees it.
	j2, _ := j.WithInputs([]string{"task", "candidate", "context.test_output"})
	req2, _ := teacher.Request(j2, "m", sample())
	user := req2.Messages[1].Content
	if strings.Contains(user, "<reference>\n") || !strings.Contains(user, "<context_test_output>\n") {
		t.Fatalf("teacher inputs differ from the judge's:\n%s", user)
	}
	if teacher.Version(j) == teacher.Version(j2) {
		t.Fatal("other judge inputs, same teacher version")
	}
}

func TestParse(t *testing.T) {
	r := sample() // label fail
	cases := []struct {
		answer string
		action teacher.Action
		label  record.Label
		inval  bool
	}{
		{`{"justification":"returns nil instead of the error","decision":"keep","label":"fail"}`, teacher.Keep, record.Fail, false},
		{`{"justification":"abandoned for other reasons","decision":"abstain","label":"fail"}`, teacher.Abstain, record.Fail, false},
		{`{"justification":"clearly correct","decision":"correct","label":"pass"}`, teacher.Correct, record.Pass, false},
		{`{"justification":"same","decision":"correct","label":"fail"}`, teacher.Keep, record.Fail, false},
		{`{"justification":"?","decision":"maybe","label":"fail"}`, teacher.Abstain, record.Fail, true},
	}
	for _, c := range cases {
		d := teacher.Parse(r, &llm.Response{JSON: json.RawMessage(c.answer)})
		if d.Action != c.action || d.Label != c.label || d.Invalid != c.inval {
			t.Errorf("%s: got %+v", c.answer, d)
		}
	}
	d := teacher.Parse(r, &llm.Response{Invalid: true, ParseError: "no JSON"})
	if !d.Invalid || d.Action != teacher.Abstain {
		t.Errorf("unreadable answer: %+v", d)
	}
}

func TestSummariseAndKeptSet(t *testing.T) {
	var rs []*record.Record
	var ds []teacher.Decision
	for i, st := range []record.Status{record.StatusFailed, record.StatusFailed, record.StatusFailed, record.StatusPassed} {
		r := &record.Record{ID: string(rune('a' + i)), Task: "t", Outcome: record.Outcome{Status: st}}
		r.Normalize()
		rs = append(rs, r)
	}
	ds = []teacher.Decision{
		{RecordID: "a", Action: teacher.Abstain, Label: record.Fail},
		{RecordID: "b", Action: teacher.Abstain, Label: record.Fail},
		{RecordID: "c", Action: teacher.Correct, Label: record.Pass},
		{RecordID: "d", Action: teacher.Keep, Label: record.Pass},
	}
	s := teacher.Summarise(rs, ds)
	if s.Abstained != 2 || s.Corrected != 1 || s.Kept != 1 || s.AbstainByLabel[record.Fail] != 2.0/3 || !s.InformationGap {
		t.Fatalf("stats %+v", s)
	}
	kept := teacher.KeptSet(rs, ds)
	if len(kept) != 2 || kept[0].ID != "c" || kept[0].Outcome.Label != record.Pass || rs[2].Outcome.Label != record.Fail {
		t.Fatalf("kept %+v (the correction must apply to a copy)", kept)
	}
}

// The label-blind request shows exactly the judge's inputs and nothing of
// the outcome: no status, no reason, no label.
func TestBlindPromptGolden(t *testing.T) {
	j, _ := judge.Load("passfail")
	r := sample()
	req, err := teacher.BlindRequest(j, "m", r)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, m := range req.Messages {
		b.WriteString("=== " + string(m.Role) + "\n" + m.Content + "\n")
	}
	golden.Check(t, "teacher_blind_passfail.golden", b.String())
	user := req.Messages[1].Content
	for _, hidden := range []string{r.Outcome.Reason, "abandoned", "recorded label", "What happened to the change:"} {
		if strings.Contains(user, hidden) {
			t.Fatalf("the blind request shows %q:\n%s", hidden, user)
		}
	}
	if req.Schema == nil || req.Schema.Name != teacher.BlindSchemaName {
		t.Fatalf("schema %+v", req.Schema)
	}
}

func TestParseBlind(t *testing.T) {
	r := sample()
	for answer, want := range map[string]teacher.Prediction{
		`{"justification":"returns nil, not the error","prediction":"fail"}`: {RecordID: "r1", Model: "m", Label: record.Fail, Justification: "returns nil, not the error"},
		`{"justification":"fine","prediction":"pass"}`:                       {RecordID: "r1", Model: "m", Label: record.Pass, Justification: "fine"},
		`{"justification":"?","prediction":"maybe"}`:                         {RecordID: "r1", Model: "m", Invalid: true},
		`not json`: {RecordID: "r1", Model: "m", Invalid: true},
	} {
		if got := teacher.ParseBlind(r, "m", &llm.Response{Text: answer}); got != want {
			t.Errorf("%s: %+v, want %+v", answer, got, want)
		}
	}
}
