package run

import (
	"io"

	"github.com/gavelhq/gavel/acr"
	bexec "github.com/gavelhq/gavel/bench/exec"
	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
	"github.com/gavelhq/gavel/sim"
)

// The results below are those of commands whose work happens in one call
// of a package below (an ACR round, a batch API, the store); each is the
// command's --json output, with result_version.

// ACRRoundResult is an ACR round's result (acr --json).
type ACRRoundResult struct {
	ResultVersion int             `json:"result_version"`
	Round         int             `json:"round"`
	Output        string          `json:"output"`
	Lineage       string          `json:"lineage"`
	Simulated     bool            `json:"simulated"`
	Stats         *acr.RoundStats `json:"stats"`
	Calls         llm.RunStats    `json:"calls"`
	Seconds       float64         `json:"seconds"`
}

// ACRInstructionsResult is the instructions written (acr instructions).
type ACRInstructionsResult struct {
	ResultVersion int    `json:"result_version"`
	Instructions  int    `json:"instructions"`
	Output        string `json:"output"`
}

// ACRCheckResult is the pairwise judge check (acr check).
type ACRCheckResult struct {
	ResultVersion int              `json:"result_version"`
	JudgeModel    string           `json:"judge_model"`
	Pairwise      string           `json:"pairwise"`
	Simulated     bool             `json:"simulated"`
	Check         *acr.CheckResult `json:"check"`
	Calls         llm.RunStats     `json:"calls"`
}

// ACRReportResult is the rounds reported (acr report).
type ACRReportResult struct {
	ResultVersion int               `json:"result_version"`
	Rounds        []*acr.RoundStats `json:"rounds"`
	Report        string            `json:"report"`
}

// NoiseResult is the label-noise study (noise).
type NoiseResult struct {
	ResultVersion int                 `json:"result_version"`
	Noise         *refine.NoiseResult `json:"noise"`
	Simulated     bool                `json:"simulated"`
	Calls         llm.RunStats        `json:"calls"`
}

// BatchSubmitResult is a batch submitted (batch submit); Submitted is nil
// when nothing was pending.
type BatchSubmitResult struct {
	ResultVersion int                 `json:"result_version"`
	Submitted     *llm.SubmittedBatch `json:"submitted"`
}

// BatchStatusResult lists the batches (batch status).
type BatchStatusResult struct {
	ResultVersion int                  `json:"result_version"`
	Batches       []llm.SubmittedBatch `json:"batches"`
}

// BatchCollectResult is what collecting batches did (batch collect).
type BatchCollectResult struct {
	ResultVersion int              `json:"result_version"`
	Collected     []llm.Collected  `json:"collected"`
	Running       []llm.BatchState `json:"running"`
	Pending       int              `json:"pending"`
}

// FileResult is records written to a file (records export).
type FileResult struct {
	ResultVersion int    `json:"result_version"`
	File          string `json:"file"`
	Records       int    `json:"records"`
}

// SimRecordsResult is the simulated world's records written to a file
// (sim records).
type SimRecordsResult struct {
	ResultVersion int    `json:"result_version"`
	File          string `json:"file"`
	Records       int    `json:"records"`
	Seed          uint64 `json:"seed"`
	Simulated     bool   `json:"simulated"`
}

// SimRecords writes a simulated world's records to file through write
// (sim records).
func SimRecords(opt sim.WorldOptions, file string, write func(string, func(io.Writer) error) error) (*SimRecordsResult, error) {
	rs, err := sim.Records(opt)
	if err != nil {
		return nil, err
	}
	err = write(file, func(w io.Writer) error {
		for i := range rs {
			if err := WriteRecords(w, &rs[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &SimRecordsResult{ResultVersion: ResultVersion, File: file, Records: len(rs), Seed: opt.Seed, Simulated: true}, nil
}

// OutcomesResult is a record's outcome versions (records outcomes).
type OutcomesResult struct {
	ResultVersion int                     `json:"result_version"`
	ID            string                  `json:"id"`
	Outcomes      []record.OutcomeVersion `json:"outcomes"`
}

// TokensResult lists the service's tokens (token list).
type TokensResult struct {
	ResultVersion int            `json:"result_version"`
	Tokens        []deploy.Token `json:"tokens"`
}

// PromoteResult is a promotion through the gate (promote).
type PromoteResult struct {
	ResultVersion int                `json:"result_version"`
	Promoted      bool               `json:"promoted"`
	Activation    *deploy.Activation `json:"activation"`
	Evidence      *deploy.Evidence   `json:"evidence"`
	Simulated     bool               `json:"simulated"`
}

// RollbackResult is a rollback (rollback).
type RollbackResult struct {
	ResultVersion int                `json:"result_version"`
	Activation    *deploy.Activation `json:"activation"`
}

// BatchExportResult is the pending requests written as a batch file
// (batch export).
type BatchExportResult struct {
	ResultVersion int `json:"result_version"`
	*llm.BatchExport
}

// ExecResult is one program's run in the sandbox (exec).
type ExecResult struct {
	ResultVersion int `json:"result_version"`
	*bexec.Result
}
