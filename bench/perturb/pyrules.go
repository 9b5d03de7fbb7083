package perturb

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"time"

	bexec "github.com/gavelhq/gavel/bench/exec"
)

//go:embed pyrules.py
var pyScript string

// python3 is the interpreter the executor uses (a system one starts in
// milliseconds, where a pyenv shim takes hundreds). The rules only parse
// programs, never run them, so no sandbox is needed.
var python3 = bexec.PythonInterpreter

func pyRule(name string) func(string, *rand.Rand) (string, error) {
	return func(code string, rng *rand.Rand) (string, error) {
		in, _ := json.Marshal(map[string]any{"rule": name, "code": code, "seed": rng.Uint64() >> 11})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, python3(), "-I", "-c", pyScript)
		cmd.Stdin = bytes.NewReader(in)
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("python rule %s: %v: %s", name, err, stderr.String())
		}
		var res struct{ Code, Error string }
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			return "", fmt.Errorf("python rule %s: %v", name, err)
		}
		switch {
		case res.Error == "not_applicable":
			return "", ErrNotApplicable
		case res.Error != "":
			return "", fmt.Errorf("python rule %s: %s", name, res.Error)
		}
		return res.Code, nil
	}
}

func py(name, category, description string, ceiling int) *Rule {
	return &Rule{Name: name, Lang: "python", Category: category, Ceiling: ceiling, Description: description, Apply: pyRule(name)}
}

// NeutralPythonRules rewrite a program without changing its behaviour or
// its quality (ceiling 5), as NeutralGoRules do.
var NeutralPythonRules = []*Rule{
	py("py_rename_locals", "neutral", "Renames locals to names as clear as theirs (i to idx, result to res); behaviour and quality are unchanged.", 5),
	py("py_mirror_comparison", "neutral", "Writes one comparison of side-effect-free operands the other way round (a < b as b > a).", 5),
}

// PythonRules are the Python rules (see pyrules.py).
var PythonRules = []*Rule{
	py("py_misleading_names", "naming", "Renames the function's parameters and locals to misleading, generic names.", 4),
	py("py_dead_code", "dead_code", "Adds a computation whose result is never used.", 4),
	py("py_redundant_copy", "redundancy", "Copies the first argument into a new list before use, for no reason.", 4),
	py("py_duplicated_function", "duplication", "Duplicates the whole function under another name and routes the original through the copy.", 3),
	py("py_quadratic_scan", "efficiency", "Adds a nested pass over the first argument that does no useful work.", 3),
	py("py_off_by_one", "boundary", "Moves a range bound or a comparison by one.", 2),
	py("py_inverted_condition", "condition", "Negates the condition of one if, while or conditional expression.", 2),
	py("py_missing_guard", "edge_case", "Removes an early-return guard, dropping an edge case.", 2),
	py("py_wrong_operator", "condition", "Swaps one arithmetic or comparison operator for its near neighbour.", 2),
	py("py_drop_loop", "algorithm", "Deletes a whole loop from the function body.", 1),
	py("py_multi_element_bail", "input_class", "Returns None for every input longer than one element; deleting the guard fixes it (a small local fix).", 2),
	py("py_empty_body", "empty", "Replaces the body with return None.", 0),
	py("py_unrelated_body", "unrelated", "Replaces the body with an unrelated computation.", 0),
}
