package run

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/server"
)

// GateConfig is a CI gate's call: the request to the service, with the
// change's inputs in files ("-" for Stdin).
type GateConfig struct {
	Request                    server.JudgeRequest
	Task, Candidate, Reference string
	// Context maps a context key to its file.
	Context map[string]string
	Stdin   io.Reader
}

// Gate asks the service for a verdict on a change as a CI gate does
// (server.Client.Gate): a pass or fail verdict, an Invalid error for a call
// the service calls wrong (400, 404, 409, 422), a *server.NoVerdictError
// when there is no verdict. Files that cannot be read are errors of their field.
func Gate(ctx context.Context, cl *server.Client, cfg GateConfig) (*server.JudgeResponse, error) {
	req := cfg.Request
	if req.Judge == "" || req.ChangeID == "" || cfg.Task == "" || cfg.Candidate == "" {
		return nil, deploy.Errorf(deploy.Invalid, "--judge, --change-id, --task and --candidate are required")
	}
	read := func(field, path string) (string, error) {
		if path == "-" {
			b, err := io.ReadAll(cfg.Stdin)
			return string(b), err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return "", deploy.FieldErrorf(field, "%v", err)
		}
		return string(b), nil
	}
	in := &server.JudgeInputs{Context: map[string]string{}}
	var err error
	if in.Task, err = read("task", cfg.Task); err != nil {
		return nil, err
	}
	if in.Candidate, err = read("candidate", cfg.Candidate); err != nil {
		return nil, err
	}
	if cfg.Reference != "" {
		if in.Reference, err = read("reference", cfg.Reference); err != nil {
			return nil, err
		}
	}
	for k, p := range cfg.Context {
		if in.Context[k], err = read("context", p); err != nil {
			return nil, err
		}
	}
	req.Inputs = in
	resp, err := cl.Gate(ctx, &req)
	var nv *server.NoVerdictError
	if se := (*server.StatusError)(nil); errors.As(err, &se) && !errors.As(err, &nv) {
		return nil, deploy.Errorf(deploy.Invalid, "%v", err) // the call is wrong: fix it
	}
	return resp, err
}

// OutcomeConfig is what a CI job reports of a judged change.
type OutcomeConfig struct {
	ChangeID, Status, Reason string
	// At is when it happened, RFC 3339 (empty: now).
	At string
}

// ReportOutcome tells the service what happened to a judged change.
func ReportOutcome(ctx context.Context, cl *server.Client, cfg OutcomeConfig) (*server.OutcomeResponse, error) {
	if cfg.ChangeID == "" || cfg.Status == "" {
		return nil, deploy.Errorf(deploy.Invalid, "--change-id and --status are required")
	}
	st, err := record.ParseStatus(cfg.Status)
	if err != nil {
		return nil, deploy.FieldErrorf("status", "%v", err)
	}
	req := &server.OutcomeRequest{ChangeID: cfg.ChangeID, Status: st, Reason: cfg.Reason}
	if cfg.At != "" {
		t, err := time.Parse(time.RFC3339, cfg.At)
		if err != nil {
			return nil, deploy.FieldErrorf("at", "%q: want RFC 3339, e.g. 2026-12-01T10:00:00Z", cfg.At)
		}
		req.At = &t
	}
	return cl.Outcome(ctx, req)
}
