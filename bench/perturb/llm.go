package perturb

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"text/template"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
)

//go:embed prompts/system.tmpl
var llmSystem string

//go:embed prompts/user.tmpl
var llmUser string

var (
	llmSystemT = template.Must(template.New("system").Parse(llmSystem))
	llmUserT   = template.Must(template.New("user").Funcs(template.FuncMap{"fence": judge.Fence}).Parse(llmUser))
)

// LLMRuleSpec is a rule no syntax rewrite can express, applied by a model.
type LLMRuleSpec struct {
	Name, Category, Instruction string
	Ceiling                     int
}

// LLMRuleSpecs are the model-applied rules.
var LLMRuleSpecs = []LLMRuleSpec{
	{"llm_inefficient_algorithm", "efficiency", "Replace the algorithm with an asymptotically slower one (for example quadratic where linear suffices) that still returns the same result for every input.", 3},
	{"llm_subtle_logic_error", "condition", "Introduce one subtle logic error, of the kind a careful reviewer could fix by changing a single line, so that the program is wrong for some valid inputs.", 2},
	{"llm_misread_specification", "algorithm", "Rewrite the function to solve a plausible misreading of its documentation: a different, related task, implemented cleanly.", 1},
}

var llmSchema = &llm.Schema{Name: "perturbed_program", Description: "The rewritten program.", JSON: json.RawMessage(`{
  "type": "object",
  "properties": {"code": {"type": "string"}},
  "required": ["code"],
  "additionalProperties": false
}`)}

// LLMRequest builds the request that applies a model rule to a program.
func LLMRequest(spec LLMRuleSpec, lang, model, code string) (*llm.Request, error) {
	var sys, user bytes.Buffer
	if err := llmSystemT.Execute(&sys, map[string]string{"Rule": spec.Instruction, "Lang": lang}); err != nil {
		return nil, err
	}
	if err := llmUserT.Execute(&user, map[string]string{"Code": code}); err != nil {
		return nil, err
	}
	zero := 0.0
	return &llm.Request{Model: model, Temperature: &zero, MaxTokens: 4096, Schema: llmSchema,
		Messages: []llm.Message{{Role: llm.System, Content: strings.TrimSpace(sys.String())}, {Role: llm.User, Content: strings.TrimSpace(user.String())}}}, nil
}

// LLMRules returns the model-applied rules of a language as Rules whose
// Apply calls the model through client (cache, limits and retries
// included). An unreadable answer makes the rule not applicable.
func LLMRules(ctx context.Context, client llm.Client, model, lang string) []*Rule {
	var out []*Rule
	for _, spec := range LLMRuleSpecs {
		out = append(out, &Rule{
			Name: spec.Name, Description: spec.Instruction + " (applied by a model)", Lang: lang,
			Category: spec.Category, Ceiling: spec.Ceiling,
			Apply: func(code string, _ *rand.Rand) (string, error) {
				req, err := LLMRequest(spec, lang, model, code)
				if err != nil {
					return "", err
				}
				resp, err := client.Complete(ctx, req)
				if err != nil {
					return "", err
				}
				var a struct{ Code string }
				if resp.Invalid || json.Unmarshal(resp.JSON, &a) != nil || strings.TrimSpace(a.Code) == "" {
					return "", ErrNotApplicable
				}
				return a.Code, nil
			},
		})
	}
	return out
}
