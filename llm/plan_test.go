package llm_test

import (
	"context"
	"testing"

	"github.com/gavelhq/gavel/llm"
)

// A request identical to an earlier one of the same run is answered by
// it: the plan counts it as a repeat, not a call to send, within a line
// and across lines.
func TestPlanCountsRepeatsOnce(t *testing.T) {
	req := func(text string) *llm.Request {
		return &llm.Request{Model: "openai:m", MaxTokens: 100, Messages: []llm.Message{{Role: llm.User, Content: text}}}
	}
	var p llm.Plan
	if err := p.Exact(context.Background(), nil, "judge", "test", []*llm.Request{req("a"), req("b"), req("a")}); err != nil {
		t.Fatal(err)
	}
	if err := p.Exact(context.Background(), nil, "judge", "again", []*llm.Request{req("b"), req("c")}); err != nil {
		t.Fatal(err)
	}
	l0, l1, tot := p.Lines[0], p.Lines[1], p.Total()
	if l0.Calls != 3 || l0.Repeats != 1 || l0.ToSend != 2 || l1.Calls != 2 || l1.Repeats != 1 || l1.ToSend != 1 {
		t.Fatalf("lines %+v %+v", *l0, *l1)
	}
	if tot.Calls != 5 || tot.Repeats != 2 || tot.ToSend != 3 {
		t.Fatalf("total %+v", tot)
	}
}
