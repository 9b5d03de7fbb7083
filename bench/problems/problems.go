// Package problems loads benchmark problems (correct programs with tests)
// and assembles runnable programs from them: HumanEval-X Go (testify tests
// compiled in an embedded, vendored module) and HumanEval Python.
package problems

import (
	"bufio"
	"compress/gzip"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"golang.org/x/tools/imports"

	bexec "github.com/gavelhq/gavel/bench/exec"
)

// Problem is a programming problem with a correct solution and tests.
type Problem struct {
	ID   string `json:"id"`
	Lang string `json:"lang"` // go or python
	// Prompt is what the model is shown: for Go the imports, doc comment
	// and declaration; for Python the signature and docstring.
	Prompt string `json:"prompt"`
	// Solution is the canonical body that completes Prompt.
	Solution string `json:"solution"`
	Test     string `json:"test"`
	// Setup is the Go test file's package clause and imports.
	Setup      string `json:"setup,omitempty"`
	EntryPoint string `json:"entry_point,omitempty"`
	// Erratum, when set, says why the problem's canonical solution cannot
	// be trusted (see Errata); such problems are set aside.
	Erratum string `json:"erratum,omitempty"`
}

// Errata are problems of the public datasets whose canonical solution is
// known to be wrong, with why. They are loaded with the reason in
// Problem.Erratum, and benchmarks and instruction sets leave them out.
var Errata = map[string]string{
	"Go/95": "the canonical solution stops after comparing two keys, so whether it passes its tests depends on " +
		"Go's random map iteration order (it failed in 22.6% of 10,000 runs measured)",
}

// Code is the problem's program: the prompt completed by its canonical
// solution. Perturbation rules rewrite this text.
func (p *Problem) Code() string { return p.Prompt + p.Solution }

//go:embed data/humanevalx-go.mod.txt
var goMod []byte

//go:embed data/humanevalx-go.sum.txt
var goSum []byte

//go:embed data/humanevalx-vendor.tar.gz
var vendorTarGz []byte

// NewGoModule unpacks the module HumanEval-X Go programs compile in (go.mod,
// go.sum and vendored testify, embedded in gavel), so that they build
// offline.
func NewGoModule() (*bexec.GoModule, error) { return bexec.NewGoModule(goMod, goSum, vendorTarGz) }

// GoTestFile fixes a Go test file's imports as goimports does: adds the
// standard packages the code uses (HumanEval-X prompts leave some out) and
// drops the ones it no longer uses (a perturbation may remove their only
// use).
func GoTestFile(src string) (string, error) {
	b, err := imports.Process("prog_test.go", []byte(src), &imports.Options{Comments: true, TabIndent: true, TabWidth: 8, FormatOnly: false})
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// Run runs a program (Code, or a perturbed version of it) against the
// problem's tests in the sandbox.
func (p *Problem) Run(ctx context.Context, mod *bexec.GoModule, code string, lim bexec.Limits) (*bexec.Result, error) {
	switch p.Lang {
	case "go":
		src, err := GoTestFile(p.Setup + "\n" + code + "\n\n" + p.Test)
		if err != nil {
			// It does not even parse: the compiler will say why.
			src = p.Setup + "\n" + code + "\n\n" + p.Test
		}
		return mod.Test(ctx, map[string]string{"prog_test.go": src}, lim)
	case "python":
		return bexec.Python(ctx, code+"\n\n"+p.Test+"\n\ncheck("+p.EntryPoint+")\n", lim)
	}
	return nil, fmt.Errorf("problem %s: unknown language %q", p.ID, p.Lang)
}

func readJSONL(r io.Reader, name string, fn func(line int, raw []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	n := 0
	for sc.Scan() {
		n++
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		if err := fn(n, sc.Bytes()); err != nil {
			return fmt.Errorf("%s:%d: %w", name, n, err)
		}
	}
	return sc.Err()
}

func maybeGzip(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	magic, _ := br.Peek(2)
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		return gzip.NewReader(br)
	}
	return br, nil
}

// load reads problems from JSONL (gzipped or not), one row each.
func load(r io.Reader, name string, row func(raw []byte) (*Problem, error)) ([]*Problem, error) {
	r, err := maybeGzip(r)
	if err != nil {
		return nil, err
	}
	var out []*Problem
	err = readJSONL(r, name, func(_ int, raw []byte) error {
		p, err := row(raw)
		if err != nil {
			return err
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

// LoadHumanEvalXGo reads HumanEval-X Go problems (JSONL, gzipped or not).
func LoadHumanEvalXGo(r io.Reader, name string) ([]*Problem, error) {
	return load(r, name, func(raw []byte) (*Problem, error) {
		var row struct {
			TaskID            string `json:"task_id"`
			Prompt            string `json:"prompt"`
			CanonicalSolution string `json:"canonical_solution"`
			Test              string `json:"test"`
			TestSetup         string `json:"test_setup"`
		}
		if err := json.Unmarshal(raw, &row); err != nil {
			return nil, err
		}
		if row.TaskID == "" || row.Prompt == "" || row.CanonicalSolution == "" || row.Test == "" || row.TestSetup == "" {
			return nil, fmt.Errorf("task_id, prompt, canonical_solution, test and test_setup are all needed")
		}
		return &Problem{ID: row.TaskID, Lang: "go", Prompt: row.Prompt, Solution: row.CanonicalSolution, Test: row.Test, Setup: row.TestSetup,
			Erratum: Errata[row.TaskID]}, nil
	})
}

// LoadHumanEval reads HumanEval Python problems (JSONL, gzipped or not).
func LoadHumanEval(r io.Reader, name string) ([]*Problem, error) {
	return load(r, name, func(raw []byte) (*Problem, error) {
		var row struct {
			TaskID            string `json:"task_id"`
			Prompt            string `json:"prompt"`
			CanonicalSolution string `json:"canonical_solution"`
			Test              string `json:"test"`
			EntryPoint        string `json:"entry_point"`
		}
		if err := json.Unmarshal(raw, &row); err != nil {
			return nil, err
		}
		if row.TaskID == "" || row.Prompt == "" || row.CanonicalSolution == "" || row.Test == "" || row.EntryPoint == "" {
			return nil, fmt.Errorf("task_id, prompt, canonical_solution, test and entry_point are all needed")
		}
		return &Problem{ID: row.TaskID, Lang: "python", Prompt: row.Prompt, Solution: row.CanonicalSolution, Test: row.Test, EntryPoint: row.EntryPoint,
			Erratum: Errata[row.TaskID]}, nil
	})
}
