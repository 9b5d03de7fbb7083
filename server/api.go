package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
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

// checkID checks a change id as a record id: it becomes one.
func checkID(field, id string) error {
	switch {
	case strings.TrimSpace(id) == "":
		return fieldError(field, "missing or empty")
	case id != strings.TrimSpace(id):
		return fieldError(field, "%q has leading or trailing white space", id)
	case len(id) > record.MaxIDBytes:
		return fieldError(field, "longer than %d bytes", record.MaxIDBytes)
	}
	return nil
}

func (req *JudgeRequest) check() error {
	if strings.TrimSpace(req.Judge) == "" {
		return fieldError("judge", "missing or empty")
	}
	if err := checkID("change_id", req.ChangeID); err != nil {
		return err
	}
	if req.Inputs == nil {
		return fieldError("inputs", "missing: give at least inputs.task and inputs.candidate")
	}
	if strings.TrimSpace(req.Inputs.Task) == "" {
		return fieldError("inputs.task", "missing or empty")
	}
	if strings.TrimSpace(req.Inputs.Candidate) == "" {
		return fieldError("inputs.candidate", "missing or empty")
	}
	for k := range req.Inputs.Context {
		if !record.ValidContextKey(k) {
			return fieldError("inputs.context", "key %q: use only letters, digits, _ and - (at most 64)", k)
		}
	}
	return nil
}

func (s *Server) judge(w http.ResponseWriter, r *http.Request, _ *Token) error {
	var req JudgeRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := req.check(); err != nil {
		return err
	}
	ctx := r.Context()
	c := &Change{ID: req.ChangeID, Task: req.Inputs.Task, Candidate: req.Inputs.Candidate, Reference: req.Inputs.Reference,
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
// verdict already given for the same (change, version, model). The change
// and the verdict are stored only once the verdict is in.
func (s *Server) JudgeChange(ctx context.Context, pv *judge.PromptVersion, c *Change) (*JudgeResponse, error) {
	if old, err := s.cfg.Store.Change(ctx, c.ID); err == nil {
		if !sameChange(old, c) {
			return nil, errorf(http.StatusConflict, "change %q was judged before with other inputs: a change's task, candidate, reference, context and group cannot change (give the new revision its own change_id)", c.ID)
		}
		v, err := s.cfg.Store.ChangeVerdict(ctx, c.ID, pv.Hash, s.cfg.Model)
		if err != nil {
			return nil, err
		}
		if v != nil {
			s.metrics.verdicts.WithLabelValues(pv.Judge, string(v.Outcome), "true").Inc()
			return s.response(pv, v, true), nil
		}
	} else if !errors.Is(err, record.ErrNotFound) {
		return nil, err
	}
	mctx, cancel := context.WithTimeout(ctx, s.cfg.ModelTimeout)
	defer cancel()
	v, cached, err := judge.JudgeInput(mctx, s.cfg.Client, pv.Spec, s.cfg.Model, c.ID, c.Input())
	if err != nil {
		return nil, modelError(err, s.cfg.ModelTimeout)
	}
	// The verdict is paid for: store it even if the client went away.
	sctx := context.WithoutCancel(ctx)
	if err := s.cfg.Store.SaveChange(sctx, c); err != nil {
		if errors.Is(err, record.ErrConflict) {
			return nil, errorf(http.StatusConflict, "%v", err)
		}
		return nil, err
	}
	if err := s.cfg.Store.SaveChangeVerdict(sctx, pv.Judge, v); err != nil {
		return nil, err
	}
	s.metrics.verdicts.WithLabelValues(pv.Judge, string(v.Outcome), "false").Inc()
	return s.response(pv, v, cached), nil
}

func sameChange(a, b *Change) bool {
	if a.Task != b.Task || a.Candidate != b.Candidate || a.Reference != b.Reference || a.Group != b.Group || len(a.Context) != len(b.Context) {
		return false
	}
	for k, v := range a.Context {
		if w, ok := b.Context[k]; !ok || w != v {
			return false
		}
	}
	return true
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

// modelError answers a failed model call: the budget or a provider's
// trouble is the service's (503 or 502, worth a retry), a timeout 504.
func modelError(err error, timeout time.Duration) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return errorf(http.StatusGatewayTimeout, "the model did not answer within %s", timeout)
	case errors.Is(err, llm.ErrBudget):
		return errorf(http.StatusServiceUnavailable, "the service's model budget is spent: %v", err)
	case errors.Is(err, llm.ErrPending):
		return errorf(http.StatusServiceUnavailable, "the service runs offline and has no answer for this change yet: %v", err)
	case errors.Is(err, llm.ErrTransient):
		return &apiError{Status: http.StatusServiceUnavailable, RetryAfter: 30, Msg: fmt.Sprintf("the model provider is failing for now: %v", err)}
	case errors.Is(err, context.Canceled):
		return errorf(499, "the request was cancelled")
	}
	return errorf(http.StatusBadGateway, "model call failed: %v", err)
}

// OutcomeRequest is the body of POST /v1/outcomes.
type OutcomeRequest struct {
	ChangeID string        `json:"change_id"`
	Status   record.Status `json:"status"`
	Reason   string        `json:"reason,omitempty"`
	At       *time.Time    `json:"at,omitempty"`
}

// OutcomeResponse is the answer of POST /v1/outcomes.
type OutcomeResponse struct {
	ChangeID string        `json:"change_id"`
	RecordID string        `json:"record_id"`
	Label    record.Label  `json:"label"`
	Status   record.Status `json:"status"`
	// Created is false when the same outcome was recorded before.
	Created bool `json:"created"`
}

func (s *Server) outcome(w http.ResponseWriter, r *http.Request, _ *Token) error {
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
			return fieldError("at", "%q is not an RFC 3339 time such as 2026-12-01T10:00:00Z", req.At)
		}
		at = &t
	}
	if err := checkID("change_id", req.ChangeID); err != nil {
		return err
	}
	if req.Status == "" {
		return fieldError("status", "missing: one of landed, abandoned, passed, failed, draft")
	}
	st, err := record.ParseStatus(string(req.Status))
	if err != nil {
		return fieldError("status", "%v", err)
	}
	res, err := s.RecordOutcome(r.Context(), req.ChangeID, st, req.Reason, at)
	if err != nil {
		return err
	}
	code := http.StatusOK
	if res.Created {
		code = http.StatusCreated
	}
	writeJSON(w, code, res)
	return nil
}

// RecordOutcome stores what happened to a judged change: the change
// becomes a record (id = the change's id) with that outcome. The same
// outcome again is a no-op; a different one is refused (records are
// immutable).
func (s *Server) RecordOutcome(ctx context.Context, changeID string, status record.Status, reason string, at *time.Time) (*OutcomeResponse, error) {
	c, err := s.cfg.Store.Change(ctx, changeID)
	if errors.Is(err, record.ErrNotFound) {
		return nil, &apiError{Status: http.StatusNotFound, Field: "change_id",
			Msg: fmt.Sprintf("field change_id: no change %q was judged by this service (POST /v1/judge first)", changeID)}
	}
	if err != nil {
		return nil, err
	}
	// The same outcome again (the usual retry of a webhook or a CI step)
	// is answered from a read, without a write.
	if stored, err := s.record(ctx, c.ID); err != nil {
		return nil, err
	} else if stored != nil && stored.Outcome.Status == status && stored.Outcome.Reason == reason && (at == nil || stored.Outcome.At.Equal(*at)) {
		return &OutcomeResponse{ChangeID: c.ID, RecordID: stored.ID, Label: stored.Outcome.Label, Status: stored.Outcome.Status}, nil
	}
	rec := &record.Record{ID: c.ID, Task: c.Task, Candidate: c.Candidate, Reference: c.Reference, Context: c.Context,
		Group: c.Group, Outcome: record.Outcome{Status: status, Reason: reason}}
	if at != nil {
		rec.Outcome.At = at.UTC()
	} else {
		rec.Outcome.At = time.Now().UTC().Truncate(time.Second)
	}
	if err := rec.Normalize(); err != nil {
		var fe *record.FieldError
		if errors.As(err, &fe) {
			return nil, fieldError(strings.TrimPrefix(fe.Field, "outcome."), "%s", fe.Msg)
		}
		return nil, err
	}
	var put record.PutResult
	err = s.cfg.Store.Import(context.WithoutCancel(ctx), func(w record.Writer) error {
		var err error
		put, err = w.Put(ctx, rec)
		return err
	})
	if errors.Is(err, record.ErrConflict) && at == nil {
		// Without a time the first outcome's time stands: the same
		// status and reason again is the same outcome.
		put, err = s.sameOutcome(ctx, rec)
	}
	if errors.Is(err, record.ErrConflict) {
		return nil, errorf(http.StatusConflict, "change %q already has another outcome: %v (records are immutable)", changeID, err)
	}
	if err != nil {
		return nil, err
	}
	if put == record.Inserted {
		s.metrics.outcomes.WithLabelValues(string(rec.Outcome.Status)).Inc()
	}
	return &OutcomeResponse{ChangeID: c.ID, RecordID: rec.ID, Label: rec.Outcome.Label, Status: rec.Outcome.Status,
		Created: put == record.Inserted}, nil
}

// sameOutcome answers Unchanged when the stored record of rec's change has
// rec's status and reason.
func (s *Server) sameOutcome(ctx context.Context, rec *record.Record) (record.PutResult, error) {
	stored, err := s.record(ctx, rec.ID)
	if err != nil {
		return 0, err
	}
	if stored != nil && stored.Outcome.Status == rec.Outcome.Status && stored.Outcome.Reason == rec.Outcome.Reason {
		return record.Unchanged, nil
	}
	return 0, fmt.Errorf("outcome %s: %w", rec.Outcome.Status, record.ErrConflict)
}

// record returns the record of a change, or nil.
func (s *Server) record(ctx context.Context, id string) (*record.Record, error) {
	var out *record.Record
	err := s.cfg.Store.Records(ctx, record.Filter{IDs: []string{id}}, func(r *record.Record) error {
		out = r
		return nil
	})
	return out, err
}

func (s *Server) listJudges(w http.ResponseWriter, r *http.Request, _ *Token) error {
	names, err := Judges(r.Context(), s.cfg.Store)
	if err != nil {
		return err
	}
	out := []*JudgeInfo{}
	for _, n := range names {
		info, err := s.Info(r.Context(), n, false)
		if err != nil {
			return err
		}
		out = append(out, info)
	}
	writeJSON(w, http.StatusOK, map[string]any{"judges": out})
	return nil
}

func (s *Server) showJudge(w http.ResponseWriter, r *http.Request, _ *Token) error {
	info, err := s.Info(r.Context(), r.PathValue("name"), true)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

func (s *Server) boot() metrics.BootstrapOptions {
	return metrics.BootstrapOptions{Resamples: s.cfg.Resamples, Seed: s.cfg.Seed}
}
