package sim_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/sim"
)

func TestSchemaAnswersAreValidAndDeterministic(t *testing.T) {
	schema := &llm.Schema{Name: "grading", JSON: json.RawMessage(`{
		"type": "object",
		"properties": {
			"reasoning": {"type": "string", "minLength": 20},
			"checks": {"type": "array", "minItems": 5, "items": {"type": "object",
				"properties": {"name": {"type": "string"}, "passed": {"type": "boolean"}}, "required": ["name", "passed"]}},
			"verdict": {"enum": ["pass", "fail"]},
			"score": {"type": "integer", "minimum": 1, "maximum": 10},
			"kind": {"const": "rubric"}
		},
		"required": ["reasoning", "checks", "verdict", "score", "kind"],
		"additionalProperties": false}`)}
	for _, q := range []string{"a", "b", "c", "d"} {
		req := &llm.Request{Model: "sim", Schema: schema, Messages: []llm.Message{{Role: llm.User, Content: q}}}
		r1, err := sim.Model{}.Complete(context.Background(), "", req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := llm.Validate(schema.JSON, r1.Text); err != nil {
			t.Fatalf("sim answer %s does not fit its schema: %v", r1.Text, err)
		}
		r2, _ := sim.Model{}.Complete(context.Background(), "", req)
		if r1.Text != r2.Text {
			t.Fatalf("not deterministic: %s vs %s", r1.Text, r2.Text)
		}
		if !strings.Contains(r1.Text, sim.Label) {
			t.Fatalf("answer not labelled simulated: %s", r1.Text)
		}
	}
}

func TestTextAnswerIsLabelled(t *testing.T) {
	r, err := sim.Model{}.Complete(context.Background(), "", &llm.Request{Model: "sim",
		Messages: []llm.Message{{Role: llm.User, Content: "What is   a judge?"}}})
	if err != nil || !strings.HasPrefix(r.Text, sim.Label) || !strings.Contains(r.Text, `"What is a judge?"`) || r.Usage.InputTokens == 0 {
		t.Fatalf("%+v %v", r, err)
	}
}
