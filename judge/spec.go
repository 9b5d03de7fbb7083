// Package judge owns gavel's judges: their specs (YAML files or the
// built-ins), prompt rendering with untrusted inputs fenced as data, the
// answer schemas, verdict parsing, and running a judge over records through
// an llm.Client.
package judge

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gavelhq/gavel/record"
)

// Kind is what a judge decides.
type Kind string

// The kinds.
const (
	Binary    Kind = "binary"    // pass or fail
	Rubric    Kind = "rubric"    // yes/no checks; pass when enough pass
	Pairwise  Kind = "pairwise"  // which of two answers is better
	Pointwise Kind = "pointwise" // criteria scored on a scale
)

// Check is one yes/no question of a rubric judge.
type Check struct {
	Name     string `yaml:"name" json:"name"`
	Question string `yaml:"question" json:"question"`
}

// Criterion is one scored criterion of a pointwise judge.
type Criterion struct {
	Name        string  `yaml:"name" json:"name"`
	Description string  `yaml:"description" json:"description"`
	Weight      float64 `yaml:"weight" json:"weight"`
}

// Params are the model parameters a judge asks for.
type Params struct {
	Temperature *float64 `yaml:"temperature" json:"temperature,omitempty"`
	MaxTokens   int      `yaml:"max_tokens" json:"max_tokens,omitempty"`
	Seed        *int64   `yaml:"seed" json:"seed,omitempty"`
}

// Spec is a judge: a YAML file or a built-in.
type Spec struct {
	Name        string `yaml:"name" json:"name"`
	Kind        Kind   `yaml:"kind" json:"kind"`
	Description string `yaml:"description" json:"description,omitempty"`
	// Inputs lists what the judge sees of a record: task, candidate,
	// reference, and context.KEY for named context entries (pairwise and
	// pointwise judges see instruction, candidate, answer_a, answer_b).
	Inputs []string `yaml:"inputs" json:"inputs"`
	// System and User are text/template prompt templates.
	System string `yaml:"system" json:"system"`
	User   string `yaml:"user" json:"user"`
	// Checks and Threshold are for rubric judges: the verdict is pass when
	// at least Threshold checks pass (default: all).
	Checks    []Check `yaml:"checks" json:"checks,omitempty"`
	Threshold int     `yaml:"threshold" json:"threshold,omitempty"`
	// Criteria and Scale ([min, max]) are for pointwise judges.
	Criteria []Criterion `yaml:"criteria" json:"criteria,omitempty"`
	Scale    []int       `yaml:"scale" json:"scale,omitempty"`
	Params   Params      `yaml:"params" json:"params"`
}

//go:embed builtin/*.yaml
var builtinFS embed.FS

// Builtins lists the built-in judges' names.
func Builtins() []string {
	entries, _ := builtinFS.ReadDir("builtin")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// Load returns a built-in judge by name, or reads a YAML spec file.
func Load(nameOrPath string) (*Spec, error) {
	name, b, err := LoadSource(nameOrPath)
	if err != nil {
		return nil, err
	}
	return Parse(name, b)
}

// LoadSource returns the YAML of a built-in judge by name or of a spec
// file, with the name Parse should give it: what another process (a
// worker) needs to load the same judge without the file.
func LoadSource(nameOrPath string) (name string, yamlText []byte, err error) {
	if !strings.ContainsAny(nameOrPath, "/\\") && !strings.HasSuffix(nameOrPath, ".yaml") && !strings.HasSuffix(nameOrPath, ".yml") {
		b, err := builtinFS.ReadFile(path.Join("builtin", nameOrPath+".yaml"))
		if err != nil {
			return "", nil, fmt.Errorf("no built-in judge %q (built-ins: %s; or give a YAML file)", nameOrPath, strings.Join(Builtins(), ", "))
		}
		return "builtin:" + nameOrPath, b, nil
	}
	b, err := os.ReadFile(nameOrPath)
	if err != nil {
		return "", nil, fmt.Errorf("judge: %w", err)
	}
	return nameOrPath, b, nil
}

// Parse reads a YAML spec; name is used in errors. Unknown fields are
// refused, so a misspelt field is not silently ignored.
func Parse(name string, b []byte) (*Spec, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("judge %s: %w", name, err)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("judge %s: %w", name, err)
	}
	return &s, nil
}

// Validate checks that a spec is complete and consistent, and that its
// templates parse.
func (s *Spec) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if s.Name == "" {
		bad("name: missing")
	}
	if strings.TrimSpace(s.System) == "" || strings.TrimSpace(s.User) == "" {
		bad("system and user: both prompt templates are needed")
	}
	switch s.Kind {
	case Binary:
	case Rubric:
		if len(s.Checks) == 0 {
			bad("checks: a rubric judge needs checks")
		}
		seen := map[string]bool{}
		for i, c := range s.Checks {
			if !validName(c.Name) || c.Question == "" {
				bad("checks[%d]: a name (letters, digits, _) and a question are needed", i)
			}
			if seen[c.Name] {
				bad("checks[%d]: %q appears twice", i, c.Name)
			}
			seen[c.Name] = true
		}
		if s.Threshold < 0 || s.Threshold > len(s.Checks) {
			bad("threshold: %d is not between 0 and the %d checks", s.Threshold, len(s.Checks))
		}
	case Pairwise:
	case Pointwise:
		if len(s.Criteria) == 0 {
			bad("criteria: a pointwise judge needs criteria")
		}
		if len(s.Scale) != 2 || s.Scale[0] >= s.Scale[1] {
			bad("scale: want [min, max] with min < max")
		}
		seen := map[string]bool{}
		for i, c := range s.Criteria {
			if !validName(c.Name) || c.Weight < 0 {
				bad("criteria[%d]: a name (letters, digits, _) and a weight of at least 0 are needed", i)
			}
			if seen[c.Name] {
				bad("criteria[%d]: %q appears twice", i, c.Name)
			}
			seen[c.Name] = true
		}
	default:
		bad("kind: %q is not binary, rubric, pairwise or pointwise", s.Kind)
	}
	if err := checkInputs(s.Kind, s.Inputs); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		if _, err := s.templates(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func validName(n string) bool {
	if n == "" {
		return false
	}
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// checkInputs validates an inputs list for a kind of judge.
func checkInputs(k Kind, inputs []string) error {
	allowed := []string{"task", "candidate", "reference"}
	required := "candidate"
	if k == Pairwise {
		allowed, required = []string{"instruction", "answer_a", "answer_b"}, "answer_a"
	}
	if k == Pointwise {
		allowed = []string{"instruction", "candidate"}
	}
	if !slices.Contains(inputs, required) {
		return fmt.Errorf("inputs: %s must be among them", required)
	}
	for _, in := range inputs {
		if key, ok := strings.CutPrefix(in, "context."); ok && k != Pairwise && k != Pointwise && key != "" {
			if !record.ValidContextKey(key) {
				return fmt.Errorf("inputs: %q: a context key uses only letters, digits, _ and -", in)
			}
			continue
		}
		if !slices.Contains(allowed, in) {
			return fmt.Errorf("inputs: unknown input %q (want %s or context.KEY)", in, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// WithInputs returns a copy of the spec seeing other inputs (the --inputs
// flag), e.g. without the reference.
func (s *Spec) WithInputs(inputs []string) (*Spec, error) {
	c := *s
	c.Inputs = append([]string(nil), inputs...)
	if err := checkInputs(c.Kind, c.Inputs); err != nil {
		return nil, err
	}
	return &c, nil
}

// PassThreshold is the number of passed checks a rubric verdict needs.
func (s *Spec) PassThreshold() int {
	if s.Threshold == 0 {
		return len(s.Checks)
	}
	return s.Threshold
}

// promptContent is what identifies a prompt version: everything that
// changes what the model is asked. The threshold is left out on purpose:
// it is applied to stored scores, so tuning it costs no model call.
type promptContent struct {
	Kind     Kind        `json:"kind"`
	Inputs   []string    `json:"inputs"`
	System   string      `json:"system"`
	User     string      `json:"user"`
	Checks   []Check     `json:"checks,omitempty"`
	Criteria []Criterion `json:"criteria,omitempty"`
	Scale    []int       `json:"scale,omitempty"`
	Params   Params      `json:"params"`
}

// Version is the prompt version: the hex SHA-256 of the spec's prompt
// content (kind, inputs, templates, checks, criteria, scale, parameters).
func (s *Spec) Version() string {
	b, _ := json.Marshal(promptContent{s.Kind, s.Inputs, s.System, s.User, s.Checks, s.Criteria, s.Scale, s.Params})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ShortVersion is the first 12 characters of the version, for display.
func (s *Spec) ShortVersion() string { return s.Version()[:12] }
