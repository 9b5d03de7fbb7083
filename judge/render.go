package judge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"text/template"
	"unicode"
	"unicode/utf8"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
)

// Input is what a judge may see. Record judges (binary, rubric) use Task,
// Candidate, Reference and Context; pairwise and pointwise judges use
// Instruction with AnswerA and AnswerB, or Candidate.
type Input struct {
	Task, Candidate, Reference string
	Context                    map[string]string
	Instruction                string
	AnswerA, AnswerB           string
}

// InputOf returns a record's judge input.
func InputOf(r *record.Record) Input {
	return Input{Task: r.Task, Candidate: r.Candidate, Reference: r.Reference, Context: r.Context}
}

// contextEntry is one shown context entry in the templates.
type contextEntry struct {
	Key, Label, Tag, Text string
}

// templateData is what prompt templates see.
type templateData struct {
	Input
	Context            []contextEntry // shadows Input.Context: only the shown entries
	Checks             []Check
	Criteria           []Criterion
	ScaleMin, ScaleMax int
}

// Fence wraps untrusted text in <tag>...</tag> so a model reads it as data.
// Any opening or closing of the same tag inside the text, in any case and
// with any spacing ("</CANDIDATE>", "< /Candidate >"), is escaped, so the
// text cannot end its fence early or open a new one.
func Fence(tag, text string) string {
	if mayCloseFence(tag, text) {
		text = fenceEscaper(tag).ReplaceAllString(text, `<\$1`)
	}
	return "<" + tag + ">\n" + strings.TrimRight(text, "\n") + "\n</" + tag + ">"
}

// mayCloseFence reports whether the escaper could match text at all: only
// at a "<" followed (after the spaces and "/" the pattern allows) by a
// character that folds to the tag's first. Most texts have no such place,
// and skip the regular expression.
func mayCloseFence(tag, text string) bool {
	first, _ := utf8.DecodeRuneInString(tag)
	if tag == "" || first == '/' || unicode.IsSpace(first) {
		return true // not a tag this shortcut knows: the pattern decides
	}
	for i := strings.IndexByte(text, '<'); i >= 0; {
		j := i + 1
		j = skipSpace(text, j)
		if j < len(text) && text[j] == '/' {
			j = skipSpace(text, j+1)
		}
		if j < len(text) {
			r, _ := utf8.DecodeRuneInString(text[j:])
			if foldsTo(r, first) {
				return true
			}
		}
		k := strings.IndexByte(text[i+1:], '<')
		if k < 0 {
			break
		}
		i += 1 + k
	}
	return false
}

// skipSpace skips what \s matches (RE2: tab, newline, form feed, carriage
// return, space).
func skipSpace(s string, j int) int {
	for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\f' || s[j] == '\r') {
		j++
	}
	return j
}

// foldsTo reports whether r and c are equal under simple case folding, as
// (?i) compares them.
func foldsTo(r, c rune) bool {
	if r == c {
		return true
	}
	for f := unicode.SimpleFold(c); f != c; f = unicode.SimpleFold(f) {
		if f == r {
			return true
		}
	}
	return false
}

var (
	escapersMu sync.Mutex
	escapers   = map[string]*regexp.Regexp{}
)

// fenceEscaper matches "<", optional spaces and "/", then the tag as a
// whole word, in any case.
func fenceEscaper(tag string) *regexp.Regexp {
	escapersMu.Lock()
	defer escapersMu.Unlock()
	re := escapers[tag]
	if re == nil {
		re = regexp.MustCompile(`(?i)<(\s*/?\s*` + regexp.QuoteMeta(tag) + `)\b`)
		escapers[tag] = re
	}
	return re
}

func (s *Spec) templates() ([2]*template.Template, error) {
	// Parsed once per text: a spec's copies (calibration revises them)
	// share nothing but the text, and a parsed template executes safely
	// from several goroutines.
	// The inputs are part of the key: "shows" is bound at parse time (a
	// function set per render would change the shared template under
	// other goroutines' renders).
	key := s.Name + "\x00" + s.System + "\x00" + s.User + "\x00" + strings.Join(s.Inputs, "\x00")
	if ts, ok := parsedTemplates.Load(key); ok {
		return ts.([2]*template.Template), nil
	}
	var out [2]*template.Template
	inputs := slices.Clone(s.Inputs)
	shows := func(name string) bool { return slices.Contains(inputs, name) }
	funcs := template.FuncMap{
		"fence": Fence,
		"shows": shows,
		"inc":   func(i int) int { return i + 1 },
	}
	for i, src := range []string{s.System, s.User} {
		t, err := template.New(s.Name).Funcs(funcs).Option("missingkey=error").Parse(src)
		if err != nil {
			return out, fmt.Errorf("template: %w", err)
		}
		out[i] = t
	}
	parsedTemplates.Store(key, out)
	return out, nil
}

// parsedTemplates holds each prompt text's parsed templates.
var parsedTemplates sync.Map

// Messages renders the judge's system and user messages for an input.
func (s *Spec) Messages(in Input) ([]llm.Message, error) {
	ts, err := s.templates()
	if err != nil {
		return nil, err
	}
	data := templateData{Input: in, Checks: s.Checks, Criteria: s.Criteria}
	if len(s.Scale) == 2 {
		data.ScaleMin, data.ScaleMax = s.Scale[0], s.Scale[1]
	}
	for _, key := range s.Inputs {
		k, ok := strings.CutPrefix(key, "context.")
		if !ok {
			continue
		}
		if text, present := in.Context[k]; present && text != "" {
			data.Context = append(data.Context, contextEntry{Key: k, Label: contextLabel(k), Tag: "context_" + k, Text: text})
		}
	}
	// Room for the user message at once: the inputs and the template's own
	// text (a buffer grown by doubling copies the prompt many times over).
	room := len(in.Task) + len(in.Candidate) + len(in.Reference) + len(in.Instruction) + len(in.AnswerA) + len(in.AnswerB) + 4096
	for _, c := range data.Context {
		room += len(c.Text)
	}
	var msgs []llm.Message
	for i, t := range ts {
		var b bytes.Buffer
		if i == 1 {
			b.Grow(room)
		}
		if err := t.Execute(&b, data); err != nil {
			return nil, fmt.Errorf("judge %s: render: %w", s.Name, err)
		}
		role := llm.System
		if i == 1 {
			role = llm.User
		}
		msgs = append(msgs, llm.Message{Role: role, Content: strings.TrimSpace(b.String())})
	}
	return msgs, nil
}

// contextLabel names a context entry for the prompt ("test_output" ->
// "Test output").
func contextLabel(k string) string {
	s := strings.ReplaceAll(k, "_", " ")
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Schema returns the JSON Schema of the judge's answer. Reasoning comes
// first in every schema, so that structured-output models reason before
// they decide.
func (s *Spec) Schema() *llm.Schema {
	// Built once per shape (kind, checks, criteria, scale): a copy that
	// shares the JSON, which no caller changes.
	key := fmt.Sprintf("%s|%q|%#v|%v", s.Kind, s.Checks, s.Criteria, s.Scale)
	if sc, ok := schemas.Load(key); ok {
		c := *sc.(*llm.Schema)
		return &c
	}
	sc := s.buildSchema()
	schemas.Store(key, sc)
	c := *sc
	return &c
}

// schemas holds each shape's answer schema.
var schemas sync.Map

func (s *Spec) buildSchema() *llm.Schema {
	str := map[string]any{"type": "string"}
	obj := func(props [][2]any) map[string]any {
		p := map[string]any{}
		var req []string
		for _, kv := range props {
			p[kv[0].(string)] = kv[1]
			req = append(req, kv[0].(string))
		}
		return map[string]any{"type": "object", "properties": p, "required": req, "additionalProperties": false}
	}
	var schema map[string]any
	name := "verdict"
	switch s.Kind {
	case Binary:
		schema = obj([][2]any{{"reasoning", str}, {"verdict", map[string]any{"type": "string", "enum": []string{"pass", "fail"}}}})
	case Rubric:
		name = "rubric"
		var checks [][2]any
		for _, c := range s.Checks {
			checks = append(checks, [2]any{c.Name, obj([][2]any{{"reasoning", str}, {"answer", map[string]any{"type": "string", "enum": []string{"yes", "no"}}}})})
		}
		schema = obj([][2]any{{"reasoning", str}, {"checks", obj(checks)}})
	case Pairwise:
		name = "preference"
		schema = obj([][2]any{{"reasoning", str}, {"winner", map[string]any{"type": "string", "enum": []string{"A", "B", "tie"}}}})
	case Pointwise:
		name = "scores"
		var crit [][2]any
		for _, c := range s.Criteria {
			crit = append(crit, [2]any{c.Name, map[string]any{"type": "integer", "minimum": s.Scale[0], "maximum": s.Scale[1]}})
		}
		schema = obj([][2]any{{"reasoning", str}, {"scores", obj(crit)}})
	}
	b, _ := json.Marshal(orderedSchema(schema))
	return &llm.Schema{Name: name, Description: "The judge's answer.", JSON: b}
}

// orderedSchema is the schema as JSON; object properties are emitted in the
// order of "required", which is the order models should answer in.
func orderedSchema(v any) json.RawMessage {
	m, ok := v.(map[string]any)
	if !ok {
		b, _ := json.Marshal(v)
		return b
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		if k == "properties" {
			props := v.(map[string]any)["properties"].(map[string]any)
			req, _ := m["required"].([]string)
			b.WriteByte('{')
			for j, name := range req {
				if j > 0 {
					b.WriteByte(',')
				}
				nb, _ := json.Marshal(name)
				b.Write(nb)
				b.WriteByte(':')
				b.Write(orderedSchema(props[name]))
			}
			b.WriteByte('}')
			continue
		}
		b.Write(orderedSchema(m[k]))
	}
	b.WriteByte('}')
	return b.Bytes()
}

// Request builds the model request for an input.
func (s *Spec) Request(model string, in Input) (*llm.Request, error) {
	msgs, err := s.Messages(in)
	if err != nil {
		return nil, err
	}
	return &llm.Request{Model: model, Messages: msgs, Temperature: s.Params.Temperature,
		MaxTokens: s.Params.MaxTokens, Seed: s.Params.Seed, Schema: s.Schema()}, nil
}

// ShownInput is one input a judge sees, as another prompt (the teacher's,
// the edit proposer's) shows it: a label, a fence tag and the text.
type ShownInput struct {
	Name, Label, Tag, Text string
}

// Shown lists what a record judge sees of an input, in the spec's inputs
// order; empty inputs are left out.
func (s *Spec) Shown(in Input) []ShownInput {
	var out []ShownInput
	for _, key := range s.Inputs {
		var si ShownInput
		switch key {
		case "task":
			si = ShownInput{key, "The task the agent was given", "task", in.Task}
		case "candidate":
			si = ShownInput{key, "The agent's change", "candidate", in.Candidate}
		case "reference":
			si = ShownInput{key, "A reference change that solves the task", "reference", in.Reference}
		default:
			k, ok := strings.CutPrefix(key, "context.")
			if !ok {
				continue
			}
			si = ShownInput{key, contextLabel(k), "context_" + k, in.Context[k]}
		}
		if strings.TrimSpace(si.Text) != "" {
			out = append(out, si)
		}
	}
	return out
}

// Sees reports whether the judge sees an input.
func (s *Spec) Sees(name string) bool { return slices.Contains(s.Inputs, name) }
