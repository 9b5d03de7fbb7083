package acr

import (
	"errors"
	"fmt"
	"os"

	"github.com/gavelhq/gavel/bench/problems"
)

// ErrFormat is an instructions format that is not native, humaneval or
// humaneval-x-go.
var ErrFormat = errors.New("want native, humaneval or humaneval-x-go")

// LoadInstructions reads an instructions file in a format: native (JSONL,
// ReadInstructions), humaneval (HumanEval Python problems) or
// humaneval-x-go; the first limit of them when limit > 0. Problems with a
// known erratum are set aside and returned apart.
func LoadInstructions(file, format string, limit int) (ins []*Instruction, aside []*problems.Problem, err error) {
	switch format {
	case "native":
		fh, err := os.Open(file)
		if err != nil {
			return nil, nil, err
		}
		defer fh.Close()
		if ins, err = ReadInstructions(fh, file); err != nil {
			return nil, nil, err
		}
	case "humaneval", "humaneval-x-go":
		lang := map[string]string{"humaneval": "python", "humaneval-x-go": "go"}[format]
		ps, err := problems.LoadFile(file, lang)
		if err != nil {
			return nil, nil, err
		}
		ins, aside = FromProblems(ps)
	default:
		return nil, nil, fmt.Errorf("%q: %w", format, ErrFormat)
	}
	if limit > 0 && limit < len(ins) {
		ins = ins[:limit]
	}
	return ins, aside, nil
}
