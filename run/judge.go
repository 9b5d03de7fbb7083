package run

import (
	"context"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
)

// JudgeConfig configures judging a split part's records.
type JudgeConfig struct {
	Judge       *judge.Spec
	Model       string
	Records     []*record.Record
	Concurrency int
	Simulated   bool
	// Part names the records (NAME:PART), for the run's log.
	Part string
}

// JudgeResult is what judging records gave; marshalled, it is judge's
// --json output.
type JudgeResult struct {
	ResultVersion int    `json:"result_version"`
	Judge         string `json:"judge"`
	Prompt        string `json:"prompt"`
	Model         string `json:"model"`
	Simulated     bool   `json:"simulated"`
	Records       int    `json:"records"`
	Pass          int    `json:"pass"`
	Fail          int    `json:"fail"`
	Invalid       int    `json:"invalid"`
	// InputTooLong counts the invalid verdicts of inputs the model refused
	// for their length (input_too_long).
	InputTooLong int `json:"input_too_long"`
	// InputsCut counts the records whose inputs --max-input-chars cut.
	InputsCut int          `json:"inputs_cut"`
	Calls     llm.RunStats `json:"calls"`
	// Verdicts are by record id; Spec and Part the judge and the split
	// part that made them, the records their order.
	Verdicts map[string]judge.Verdict `json:"-"`
	Spec     *judge.Spec              `json:"-"`
	Part     string                   `json:"-"`
	Judged   []*record.Record         `json:"-"`
}

// Judge judges records, stores every verdict, and counts them.
func Judge(ctx context.Context, env *Env, cfg JudgeConfig) (*JudgeResult, error) {
	s := cfg.Judge
	vs, err := JudgeRecords(ctx, env, s, cfg.Model, cfg.Records, cfg.Concurrency)
	if err != nil {
		return nil, err
	}
	out := &JudgeResult{ResultVersion: ResultVersion, Judge: s.Name, Prompt: s.Version(), Model: cfg.Model, Simulated: cfg.Simulated,
		Records: len(cfg.Records), Verdicts: vs, Spec: s, Part: cfg.Part, Judged: cfg.Records, InputsCut: cutCount(cfg.Records)}
	for _, v := range vs {
		switch v.Outcome {
		case judge.Pass:
			out.Pass++
		case judge.Fail:
			out.Fail++
		default:
			out.Invalid++
		}
		if v.ParseError == llm.InputTooLong {
			out.InputTooLong++
		}
	}
	out.Calls = env.stats()
	return out, nil
}
