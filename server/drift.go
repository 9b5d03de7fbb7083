package server

import (
	"net/http"

	"github.com/gavelhq/gavel/deploy"
)

func (s *Server) drift(w http.ResponseWriter, r *http.Request, _ *deploy.Token) error {
	name := r.URL.Query().Get("judge")
	if name == "" {
		return &deploy.Error{Code: deploy.Invalid, Field: "judge", Msg: "query parameter judge: missing (GET /v1/drift?judge=NAME&by=week)"}
	}
	var rep *deploy.DriftReport
	err := s.expensive(r.Context(), func() (err error) {
		rep, err = s.live.Drift(r.Context(), s.cfg.Store, name, s.cfg.Model, r.URL.Query().Get("by"), s.boot())
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}
