package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
)

// JudgeRequest is the body of POST /v1/judge.
type JudgeRequest struct {
	Judge    string       `json:"judge"`
	ChangeID string       `json:"change_id"`
	Inputs   *JudgeInputs `json:"inputs"`
	// Group clusters changes for intervals (a repository, an issue).
	Group string `json:"group,omitempty"`
}

// JudgeInputs are what the judge may see of a change.
type JudgeInputs struct {
	Task      string            `json:"task"`
	Candidate string            `json:"candidate"`
	Reference string            `json:"reference,omitempty"`
	Context   map[string]string `json:"context,omitempty"`
}

// JudgeResponse is the answer of POST /v1/judge.
type JudgeResponse struct {
	ChangeID  string          `json:"change_id"`
	Verdict   judge.Outcome   `json:"verdict"`
	Score     *float64        `json:"score,omitempty"`
	Checks    map[string]bool `json:"checks,omitempty"`
	Reasoning string          `json:"reasoning"`
	// ParseError says why an invalid verdict could not be read.
	ParseError string `json:"parse_error,omitempty"`
	Judge      string `json:"judge"`
	Version    string `json:"version"`
	Model      string `json:"model"`
	Cached     bool   `json:"cached"`
	// Simulated is set when the service runs gavel's simulated model: the
	// verdict is no evidence about any real model.
	Simulated bool `json:"simulated,omitempty"`
}

func (req *JudgeRequest) check() error {
	if strings.TrimSpace(req.Judge) == "" {
		return deploy.FieldErrorf("judge", "missing or empty")
	}
	if err := deploy.CheckChangeID("change_id", req.ChangeID); err != nil {
		return err
	}
	if req.Inputs == nil {
		return deploy.FieldErrorf("inputs", "missing: give at least inputs.task and inputs.candidate")
	}
	if strings.TrimSpace(req.Inputs.Task) == "" {
		return deploy.FieldErrorf("inputs.task", "missing or empty")
	}
	if strings.TrimSpace(req.Inputs.Candidate) == "" {
		return deploy.FieldErrorf("inputs.candidate", "missing or empty")
	}
	for k, v := range req.Inputs.Context {
		if !record.ValidContextKey(k) {
			return deploy.FieldErrorf("inputs.context", "key %q: use only letters, digits, _ and - (at most 64)", k)
		}
		if err := deploy.CheckText("inputs.context."+k, v); err != nil {
			return err
		}
	}
	for _, f := range []struct{ name, text string }{{"judge", req.Judge}, {"group", req.Group}, {"inputs.task", req.Inputs.Task},
		{"inputs.candidate", req.Inputs.Candidate}, {"inputs.reference", req.Inputs.Reference}} {
		if err := deploy.CheckText(f.name, f.text); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) judge(w http.ResponseWriter, r *http.Request, _ *deploy.Token) error {
	var req JudgeRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := req.check(); err != nil {
		return err
	}
	ctx := r.Context()
	c := &deploy.Change{ID: req.ChangeID, Task: req.Inputs.Task, Candidate: req.Inputs.Candidate, Reference: req.Inputs.Reference,
		Context: req.Inputs.Context, Group: req.Group}
	if len(c.Context) == 0 {
		c.Context = nil
	}
	pv, err := s.activeSpec(ctx, req.Judge)
	if err != nil {
		return err
	}
	resp, err := s.JudgeChange(ctx, pv, c)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// JudgeChange judges a change with a prompt version, or answers the
// verdict already given for the same (change, version, model).
func (s *Server) JudgeChange(ctx context.Context, pv *judge.PromptVersion, c *deploy.Change) (*JudgeResponse, error) {
	j, err := deploy.JudgeChange(ctx, s.cfg.Store, s.cfg.Client, s.cfg.Model, s.cfg.ModelTimeout, pv, c)
	if err != nil {
		return nil, err
	}
	s.metrics.verdicts.WithLabelValues(pv.Judge, string(j.Verdict.Outcome), strconv.FormatBool(j.Stored)).Inc()
	return s.response(pv, j.Verdict, j.Cached), nil
}

func (s *Server) response(pv *judge.PromptVersion, v *judge.Verdict, cached bool) *JudgeResponse {
	out := &JudgeResponse{ChangeID: v.RecordID, Verdict: v.Decide(pv.Spec.Kind, pv.Spec.PassThreshold()), Reasoning: v.Reasoning,
		ParseError: v.ParseError, Judge: pv.Judge, Version: v.Prompt, Model: v.Model, Cached: cached, Checks: v.Checks,
		Simulated: s.cfg.Simulated}
	if pv.Spec.Kind == judge.Rubric && v.Outcome != judge.Invalid {
		score := v.Score
		out.Score = &score
	}
	return out
}

// OutcomeRequest is the body of POST /v1/outcomes.
type OutcomeRequest struct {
	ChangeID string        `json:"change_id"`
	Status   record.Status `json:"status"`
	Reason   string        `json:"reason,omitempty"`
	At       *time.Time    `json:"at,omitempty"`
}

// OutcomeResponse is the answer of POST /v1/outcomes.
type OutcomeResponse = deploy.RecordedOutcome

func (s *Server) outcome(w http.ResponseWriter, r *http.Request, _ *deploy.Token) error {
	var req struct {
		ChangeID string        `json:"change_id"`
		Status   record.Status `json:"status"`
		Reason   string        `json:"reason"`
		At       string        `json:"at"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	var at *time.Time
	if req.At != "" {
		t, err := time.Parse(time.RFC3339Nano, req.At)
		if err != nil {
			return deploy.FieldErrorf("at", "%q is not an RFC 3339 time such as 2026-12-01T10:00:00Z", req.At)
		}
		if err := deploy.CheckOutcomeTime("at", t); err != nil {
			return err
		}
		at = &t
	}
	if err := deploy.CheckChangeID("change_id", req.ChangeID); err != nil {
		return err
	}
	if err := deploy.CheckText("reason", req.Reason); err != nil {
		return err
	}
	if req.Status == "" {
		return deploy.FieldErrorf("status", "missing: one of landed, abandoned, passed, failed, draft")
	}
	st, err := record.ParseStatus(string(req.Status))
	if err != nil {
		return deploy.FieldErrorf("status", "%v", err)
	}
	res, err := deploy.RecordOutcome(r.Context(), s.cfg.Store, req.ChangeID, st, req.Reason, at)
	if err != nil {
		return err
	}
	if res.Created {
		s.metrics.outcomes.WithLabelValues(string(res.Status)).Inc()
	}
	code := http.StatusOK
	if res.Created {
		code = http.StatusCreated
	}
	writeJSON(w, code, res)
	return nil
}

func (s *Server) listJudges(w http.ResponseWriter, r *http.Request, _ *deploy.Token) error {
	names, err := deploy.Judges(r.Context(), s.cfg.Store)
	if err != nil {
		return err
	}
	out := []*deploy.JudgeInfo{}
	for _, n := range names {
		info, err := s.info(r.Context(), n, false)
		if err != nil {
			return err
		}
		out = append(out, info)
	}
	writeJSON(w, http.StatusOK, map[string]any{"judges": out})
	return nil
}

func (s *Server) showJudge(w http.ResponseWriter, r *http.Request, _ *deploy.Token) error {
	var info *deploy.JudgeInfo
	err := s.expensive(r.Context(), func() (err error) {
		info, err = s.info(r.Context(), r.PathValue("name"), true)
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

func (s *Server) boot() metrics.BootstrapOptions {
	return metrics.BootstrapOptions{Resamples: s.cfg.Resamples, Seed: s.cfg.Seed}
}
