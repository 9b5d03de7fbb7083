package acr

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/template"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
)

//go:embed prompts/generator_system.tmpl
var generatorSystem string

//go:embed prompts/critic_system.tmpl
var criticSystem string

//go:embed prompts/critic_user.tmpl
var criticUser string

var criticUserTmpl = template.Must(template.New("critic_user").Funcs(template.FuncMap{"fence": judge.Fence}).
	Option("missingkey=error").Parse(criticUser))

// GeneratorSystem is the built-in system prompt of the generator.
func GeneratorSystem() string { return strings.TrimSpace(generatorSystem) }

// GeneratorMessages are the conversation the generator answers, and the
// start of every record of the dataset: the system prompt (when not
// empty) and the instruction as the user's turn.
func GeneratorMessages(system, instruction string) []llm.Message {
	var msgs []llm.Message
	if strings.TrimSpace(system) != "" {
		msgs = append(msgs, llm.Message{Role: llm.System, Content: strings.TrimSpace(system)})
	}
	return append(msgs, llm.Message{Role: llm.User, Content: instruction})
}

// GeneratorRequest is sample i (1-based) of an instruction: the sample
// index keeps the n samples apart in the cache.
func GeneratorRequest(model, system, instruction string, temperature float64, maxTokens, sample int) *llm.Request {
	t := temperature
	return &llm.Request{Model: model, Messages: GeneratorMessages(system, instruction), Temperature: &t,
		MaxTokens: maxTokens, Sample: sample}
}

// criticSchema is the critic's answer: one text. The schema is kept to the
// plainest keywords; ParseCritique refuses an empty critique.
var criticSchema = &llm.Schema{Name: "critique", Description: "A critique of the programmer's answer.",
	JSON: json.RawMessage(`{"type":"object","properties":{"critique":{"type":"string"}},"required":["critique"],"additionalProperties":false}`)}

// CriticInput is what the critic sees.
type CriticInput struct {
	Instruction, Answer, Reference string
	// TestResult says what running the answer found, when it was run.
	TestResult string
}

// CriticRequest asks the critic why an answer falls short of the
// reference.
func CriticRequest(model string, in CriticInput) (*llm.Request, error) {
	var b bytes.Buffer
	if err := criticUserTmpl.Execute(&b, in); err != nil {
		return nil, fmt.Errorf("critic prompt: %w", err)
	}
	t := 0.0
	return &llm.Request{Model: model, Temperature: &t, MaxTokens: 2048, Schema: criticSchema, Messages: []llm.Message{
		{Role: llm.System, Content: strings.TrimSpace(criticSystem)},
		{Role: llm.User, Content: strings.TrimSpace(b.String())},
	}}, nil
}

// ParseCritique reads the critic's answer; "" with the reason when it
// cannot be read.
func ParseCritique(resp *llm.Response) (string, string) {
	if resp.Invalid {
		return "", resp.ParseError
	}
	raw := resp.JSON
	if len(raw) == 0 {
		var err error
		if raw, err = llm.ExtractJSON(resp.Text); err != nil {
			return "", err.Error()
		}
	}
	var a struct {
		Critique string `json:"critique"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", "the answer is not a JSON object with a critique: " + err.Error()
	}
	if strings.TrimSpace(a.Critique) == "" {
		return "", "the critique is empty"
	}
	return strings.TrimSpace(a.Critique), ""
}

// System is the generator's system message: the built-in one, none
// (noSystem), or a file's.
func System(noSystem bool, file string) (string, error) {
	switch {
	case noSystem && file != "":
		return "", deploy.FieldErrorf("system-file", "--system-file and --no-system exclude each other")
	case noSystem:
		return "", nil
	case file != "":
		b, err := os.ReadFile(file)
		return string(b), err
	}
	return GeneratorSystem(), nil
}
