package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var englishPrinter = message.NewPrinter(language.English)

// compiled caches compiled schemas by their canonical text.
var compiled sync.Map // string -> *jsonschema.Schema

// compileSchema compiles a JSON Schema without loading anything from the
// file system or network.
func compileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	c, err := canonical(raw)
	if err != nil {
		return nil, fmt.Errorf("schema is not JSON: %w", err)
	}
	if s, ok := compiled.Load(string(c)); ok {
		return s.(*jsonschema.Schema), nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(c))
	if err != nil {
		return nil, err
	}
	comp := jsonschema.NewCompiler()
	comp.UseLoader(jsonschema.SchemeURLLoader{}) // no file or network access
	if err := comp.AddResource("gavel:answer.json", doc); err != nil {
		return nil, err
	}
	s, err := comp.Compile("gavel:answer.json")
	if err != nil {
		return nil, fmt.Errorf("invalid JSON Schema: %w", err)
	}
	compiled.Store(string(c), s)
	return s, nil
}

// CheckSchema reports whether a schema compiles.
func CheckSchema(raw json.RawMessage) error {
	_, err := compileSchema(raw)
	return err
}

// Validate parses text as an answer to schema: it finds the JSON value in
// the text (tolerating code fences and prose around it) and validates it.
// It returns the compact JSON or an error a model can read.
func Validate(schema json.RawMessage, text string) (json.RawMessage, error) {
	s, err := compileSchema(schema)
	if err != nil {
		return nil, err
	}
	raw, err := ExtractJSON(text)
	if err != nil {
		return nil, err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("the answer is not valid JSON: %v", err)
	}
	if err := s.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("the answer does not match the schema: %s", flattenValidation(ve))
		}
		return nil, fmt.Errorf("the answer does not match the schema: %v", err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// flattenValidation lists the leaf causes of a validation error, one per
// location, which reads better to a model than the nested tree.
func flattenValidation(ve *jsonschema.ValidationError) string {
	var leaves []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			leaves = append(leaves, fmt.Sprintf("at %s: %s", loc, e.ErrorKind.LocalizedString(englishPrinter)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(leaves) > 5 {
		leaves = append(leaves[:5], fmt.Sprintf("and %d more", len(leaves)-5))
	}
	return strings.Join(leaves, "; ")
}

// ExtractJSON finds the JSON object (or array) in a model's text: the whole
// text if it is JSON, else the content of a ```json fence, else the first
// balanced {...} that parses. Servers without structured output wrap JSON
// in prose and fences; this is the tolerant reading the fallback relies on.
func ExtractJSON(text string) (json.RawMessage, error) {
	t := strings.TrimSpace(text)
	if t == "" {
		return nil, errors.New("the answer is empty")
	}
	if json.Valid([]byte(t)) {
		return json.RawMessage(t), nil
	}
	// Fenced blocks, ```json first.
	for rest := t; ; {
		i := strings.Index(rest, "```")
		if i < 0 {
			break
		}
		rest = rest[i+3:]
		nl := strings.IndexByte(rest, '\n')
		if nl < 0 {
			break
		}
		body := rest[nl+1:]
		end := strings.Index(body, "```")
		if end < 0 {
			break
		}
		if c := strings.TrimSpace(body[:end]); json.Valid([]byte(c)) {
			return json.RawMessage(c), nil
		}
		rest = body[end+3:]
	}
	// The first balanced object that parses.
	for i := 0; i < len(t); i++ {
		if t[i] != '{' && t[i] != '[' {
			continue
		}
		if end := balancedEnd(t, i); end > 0 && json.Valid([]byte(t[i:end])) {
			return json.RawMessage(t[i:end]), nil
		}
	}
	return nil, errors.New("the answer contains no JSON object")
}

// balancedEnd returns the index after the bracket that closes the one at
// start, minding strings and escapes, or -1.
func balancedEnd(s string, start int) int {
	depth := 0
	inStr, esc := false, false
	for i := start; i < len(s); i++ {
		c := s[i]
		switch {
		case esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}
