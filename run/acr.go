package run

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gavelhq/gavel/acr"
	bexec "github.com/gavelhq/gavel/bench/exec"
	"github.com/gavelhq/gavel/bench/problems"
	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
)

// ACRConfig configures an ACR round or judge check with its parts named as
// a user names them; errors name the field at fault.
type ACRConfig struct {
	Round int
	// Generator, JudgeModel and CriticModel are models as PROVIDER:NAME;
	// the URLs their servers ("" for the provider's default).
	Generator, JudgeModel, CriticModel string
	GeneratorURL, JudgeURL, CriticURL  string
	// NoCritic is for the judge check, which writes no critique: no
	// critic model is needed.
	NoCritic            bool
	System              string
	N                   int
	Temperature         float64
	MaxTokens           int
	Pointwise, Pairwise string
	Weights             string
	ExecWeight          float64
	Ties                string
	Concurrency, Jobs   int
	ProgramTimeout      time.Duration
	// Executions, when set, keeps every program's result (the execution
	// cache); DryRun builds no model client.
	Executions acr.ExecCache
	DryRun     bool
	Progress   func(stage string, done, total int)
}

// ACR is the machinery of a round: the round, its sandbox and the model
// router of its roles.
type ACR struct {
	Round  *acr.Round
	Box    *acr.Sandbox
	Client *llm.Router
	Limits bexec.Limits
}

// Close removes the sandbox's Go module, if one was made.
func (s *ACR) Close() { s.Box.Close() }

// PrepareACR checks the configuration, routes each role's model to its
// server and makes the round over the instructions.
func PrepareACR(cfg ACRConfig, router *llm.Router, ins []*acr.Instruction) (*ACR, error) {
	for _, v := range []struct {
		name string
		n    int
	}{{"n", cfg.N}, {"jobs", cfg.Jobs}, {"round", cfg.Round}} {
		if v.n < 1 {
			return nil, deploy.FieldErrorf(v.name, "must be at least 1")
		}
	}
	pw, err := judge.Load(cfg.Pointwise)
	if err != nil {
		return nil, deploy.FieldErrorf("pointwise", "%v", err)
	}
	pp, err := judge.Load(cfg.Pairwise)
	if err != nil {
		return nil, deploy.FieldErrorf("pairwise", "%v", err)
	}
	weights, err := acr.ParseWeights(cfg.Weights, pw)
	if err != nil {
		return nil, deploy.FieldErrorf("weights", "%v", err)
	}
	ties, err := acr.ParseTies(cfg.Ties)
	if err != nil {
		return nil, deploy.FieldErrorf("ties", "%v", err)
	}
	roles := []struct{ field, model, url string }{
		{"generator", cfg.Generator, cfg.GeneratorURL}, {"judge_model", cfg.JudgeModel, cfg.JudgeURL}, {"critic_model", cfg.CriticModel, cfg.CriticURL}}
	if cfg.NoCritic {
		roles = roles[:2]
	}
	for _, r := range roles {
		if strings.TrimSpace(r.model) == "" {
			return nil, deploy.FieldErrorf(r.field, "a model is required: PROVIDER:NAME such as openai:gpt-4o, or sim for the simulated world")
		}
		if _, _, err := llm.ParseModel(r.model); err != nil {
			return nil, deploy.FieldErrorf(r.field, "%v", err)
		}
	}
	// Each role's model at its server's base URL: the generator is often a
	// local server (the model in training), the judge and the critic
	// hosted models of the same provider kind.
	for _, r := range roles {
		if err := router.Route(r.model, r.url); err != nil {
			return nil, deploy.FieldErrorf(r.field, "%v", err)
		}
		if cfg.DryRun {
			continue // nothing is sent
		}
		if _, err := router.Client(r.model, r.url); err != nil {
			return nil, err
		}
	}
	lim := bexec.Limits{Wall: cfg.ProgramTimeout}
	s := &ACR{Box: &acr.Sandbox{Limits: lim}, Client: router, Limits: lim}
	var ex acr.Executor = s.Box
	if cfg.Executions != nil {
		ex = &acr.Cached{Exec: s.Box, Cache: cfg.Executions, Limits: lim}
	}
	rc := acr.Config{Round: cfg.Round, Generator: cfg.Generator, JudgeModel: cfg.JudgeModel, CriticModel: cfg.CriticModel, System: cfg.System,
		N: cfg.N, Temperature: cfg.Temperature, MaxTokens: cfg.MaxTokens, Pointwise: pw, Pairwise: pp, Weights: weights,
		ExecWeight: cfg.ExecWeight, Ties: ties, Concurrency: cfg.Concurrency, Executions: cfg.Jobs, Progress: cfg.Progress}
	if s.Round, err = acr.NewRound(rc, router, ex, ins); err != nil {
		return nil, deploy.Errorf(deploy.Invalid, "%v", err)
	}
	return s, nil
}

// ACRFiles are where a round's outputs go: the dataset (chat JSONL), the
// lineage, and the next round's instructions when Next is set.
type ACRFiles struct {
	Output, Lineage, Next string
}

// WriteRound writes a round's outputs, each through write (which keeps a
// file whole or leaves none), and returns the round's statistics.
func WriteRound(r *acr.Round, files ACRFiles, simulated bool, write func(name string, fn func(io.Writer) error) error) (*acr.RoundStats, error) {
	if err := write(files.Output, func(w io.Writer) error { return r.Write(w, io.Discard, simulated) }); err != nil {
		return nil, err
	}
	if err := write(files.Lineage, func(w io.Writer) error { return r.Write(io.Discard, w, simulated) }); err != nil {
		return nil, err
	}
	if files.Next != "" {
		if err := write(files.Next, func(w io.Writer) error { return acr.WriteInstructions(w, r.NextInstructions()) }); err != nil {
			return nil, err
		}
	}
	var lines []acr.Lineage
	for _, it := range r.Items {
		lines = append(lines, r.Lineage(it, simulated))
	}
	return acr.Stats(lines)[0], nil
}

// LoadInstructions reads ACR instructions in one of the formats (a bad
// format or language is the caller's mistake, a field error); each problem
// set aside as an erratum is told to warn.
func LoadInstructions(file, format string, limit int, warn func(string)) ([]*acr.Instruction, error) {
	if file == "" {
		return nil, deploy.FieldErrorf("instructions", "--instructions FILE is needed")
	}
	ins, aside, err := acr.LoadInstructions(file, format, limit)
	var le *problems.LanguageError
	switch {
	case errors.Is(err, acr.ErrFormat), errors.As(err, &le):
		return nil, deploy.FieldErrorf("format", "%v", err)
	case err != nil:
		return nil, err
	}
	for _, p := range aside {
		warn(fmt.Sprintf("%s set aside: %s", p.ID, p.Erratum))
	}
	return ins, nil
}
