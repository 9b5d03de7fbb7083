package refine_test

import (
	"strings"
	"testing"

	goldenfile "github.com/gavelhq/gavel/internal/golden"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
)

func golden(t *testing.T, name string, req *llm.Request) {
	t.Helper()
	var b strings.Builder
	for _, m := range req.Messages {
		b.WriteString("=== " + string(m.Role) + "\n" + m.Content + "\n")
	}
	b.WriteString("=== schema " + req.Schema.Name + "\n")
	goldenfile.Check(t, name, b.String())
}

func TestEditorPromptsGolden(t *testing.T) {
	r := &record.Record{ID: "r1", Task: "Reject orders with no items.", Candidate: "-\tif err != nil {\n-\t\treturn err\n-\t}",
		Reference: "+\tif len(o.Items) == 0 {\n+\t\treturn ErrEmptyOrder\n+\t}", Outcome: record.Outcome{Status: record.StatusFailed}}
	r.Normalize()
	edits := []refine.Proposal{
		{Kind: refine.FailReason, Text: "Fail a change that deletes an error check."},
		{Kind: refine.PassReason, Text: "Added logging is not a reason to fail."},
		{Kind: refine.Reword, Target: "Size and formatting alone are not reasons to fail", Text: "Size, formatting and reordering alone are not reasons to fail"},
	}
	for _, name := range []string{"passfail", "rubric5"} {
		s, _ := judge.Load(name)
		v := &judge.Verdict{Outcome: judge.Pass, Score: 5, Reasoning: "The change looks fine.", Checks: map[string]bool{}}
		for _, c := range s.Checks {
			v.Checks[c.Name] = true
		}
		req, err := refine.ProposerRequest(s, "m", r, v, s.PassThreshold(), "The change deletes an error check, so the error is ignored.")
		if err != nil {
			t.Fatal(err)
		}
		golden(t, "proposer_"+name+".golden", req)
		app, err := refine.ApplierRequest(s, "m", edits, 4000)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, "applier_"+name+".golden", app)
	}
}
