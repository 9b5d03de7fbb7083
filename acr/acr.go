// Package acr builds supervised fine-tuning data with judges, the way
// RefineCoder's Adaptive Critique Refinement does (DESIGN.md section 3): a
// generator samples n answers per instruction; each answer's code runs in
// the sandbox and a pointwise judge scores it on five criteria; the
// composite of the two picks the best answer; a pairwise judge, run in both
// orders, and the executor decide whether it beats the instruction's
// reference answer; the record becomes single-turn (instruction -> own
// answer) when it does, else two-turn with a critic's critique (instruction
// -> own answer -> critique -> reference). It also checks the judge that
// gates the data against the tests (Check).
//
// gavel writes the dataset; training on it is the user's trainer's job.
package acr

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/gavelhq/gavel/bench/problems"
)

// Instruction is one line of an instructions file.
type Instruction struct {
	ID          string `json:"id"`
	Instruction string `json:"instruction"`
	// Reference is the current (teacher) answer: text with the code in a
	// fenced block, or code alone.
	Reference string `json:"reference"`
	// Language is go or python (optional; without it no code is run and
	// the executor's part of the composite is left out).
	Language string `json:"language,omitempty"`
	// Tests, when given, decide whether an answer works: for Python a
	// script appended to the answer's code that raises (exits non-zero)
	// when a test fails; for Go a complete _test.go file of the same
	// package as the answer. Without tests the code only has to build
	// (Go) or load (Python).
	Tests string `json:"tests,omitempty"`
}

// Languages gavel can run.
var Languages = []string{"go", "python"}

// ReadInstructions reads an instructions file (JSONL). Errors name the
// file, the line and the field; ids must be unique.
func ReadInstructions(r io.Reader, name string) ([]*Instruction, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var out []*Instruction
	seen := map[string]int{}
	line := 0
	for sc.Scan() {
		line++
		raw := strings.TrimSpace(sc.Text())
		if raw == "" {
			continue
		}
		if line == 1 {
			raw = strings.TrimPrefix(raw, "\ufeff")
		}
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.DisallowUnknownFields()
		var in Instruction
		if err := dec.Decode(&in); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, line, err)
		}
		field := ""
		switch {
		case strings.TrimSpace(in.ID) == "":
			field = "id: missing"
		case strings.TrimSpace(in.Instruction) == "":
			field = "instruction: missing"
		case strings.TrimSpace(in.Reference) == "":
			field = "reference: missing"
		case in.Language != "" && in.Language != "go" && in.Language != "python":
			field = fmt.Sprintf("language: %q is not go or python", in.Language)
		case in.Tests != "" && in.Language == "":
			field = "language: needed to run the tests"
		}
		if field != "" {
			return nil, fmt.Errorf("%s:%d: %s", name, line, field)
		}
		if prev, dup := seen[in.ID]; dup {
			return nil, fmt.Errorf("%s:%d: id: %q already on line %d", name, line, in.ID, prev)
		}
		seen[in.ID] = line
		out = append(out, &in)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no instructions", name)
	}
	return out, nil
}

// WriteInstructions writes instructions as JSONL.
func WriteInstructions(w io.Writer, ins []*Instruction) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, in := range ins {
		if err := enc.Encode(in); err != nil {
			return err
		}
	}
	return nil
}

// FromProblems turns HumanEval-style problems (HumanEval Python,
// HumanEval-X Go) into instructions: the instruction asks for the function
// the prompt declares, the reference is the canonical solution, complete,
// in a fenced block, and the tests are the problem's. Problems whose
// canonical solution is known to be wrong (problems.Errata) are left out
// and listed in setAside.
func FromProblems(ps []*problems.Problem) (out []*Instruction, setAside []*problems.Problem) {
	for _, p := range ps {
		if p.Erratum != "" {
			setAside = append(setAside, p)
			continue
		}
		in := &Instruction{ID: p.ID, Language: p.Lang, Reference: Fenced(p.Lang, p.Code())}
		switch p.Lang {
		case "python":
			in.Instruction = "Complete the following Python function so that it does what its docstring says. " +
				"Give the whole function, with the imports it needs.\n\n" + Fenced("python", p.Prompt)
			in.Tests = p.Test + "\n\ncheck(" + p.EntryPoint + ")\n"
		case "go":
			in.Instruction = "Complete the following Go function so that it does what its comment says. " +
				"Give the whole function, with the imports it needs.\n\n" + Fenced("go", p.Prompt)
			in.Tests = p.Setup + "\n" + p.Test
		}
		out = append(out, in)
	}
	return out, setAside
}

// Fenced puts code in a Markdown code block.
func Fenced(lang, code string) string {
	return "```" + lang + "\n" + strings.Trim(code, "\n") + "\n```"
}
