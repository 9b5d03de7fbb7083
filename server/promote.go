package server

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gavelhq/gavel/deploy"
)

// PromoteRequest is the body of POST /v1/judges/{name}/promote.
type PromoteRequest struct {
	Version string `json:"version"`
	Split   string `json:"split,omitempty"`
	Force   bool   `json:"force,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

func actorOf(t *deploy.Token) string {
	if t.Name != "" {
		return "token " + t.ID + " (" + t.Name + ")"
	}
	return "token " + t.ID
}

func (s *Server) promote(w http.ResponseWriter, r *http.Request, t *deploy.Token) error {
	var req PromoteRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.Version) == "" {
		return deploy.FieldErrorf("version", "missing or empty")
	}
	a, ev, err := deploy.Promote(r.Context(), s.cfg.Store, s.cfg.Client, s.cfg.Model, r.PathValue("name"), req.Version, deploy.PromoteOptions{
		Split: req.Split, Force: req.Force, Reason: req.Reason, Actor: actorOf(t), Boot: s.boot()})
	if errors.Is(err, deploy.ErrGateRefused) {
		writeJSON(w, http.StatusConflict, map[string]any{"error": err.Error(), "promoted": false, "evidence": ev})
		return nil
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"promoted": true, "activation": a, "evidence": ev})
	return nil
}

// RollbackRequest is the body of POST /v1/judges/{name}/rollback.
type RollbackRequest struct {
	Reason string `json:"reason,omitempty"`
}

func (s *Server) rollback(w http.ResponseWriter, r *http.Request, t *deploy.Token) error {
	var req RollbackRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	a, err := deploy.Rollback(r.Context(), s.cfg.Store, r.PathValue("name"), actorOf(t), req.Reason)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"activation": a})
	return nil
}
