package server

import (
	"net/http"

	"github.com/gavelhq/gavel/deploy"
)

func (s *Server) agreement(w http.ResponseWriter, r *http.Request, _ *deploy.Token) error {
	name := r.URL.Query().Get("judge")
	if name == "" {
		return &deploy.Error{Code: deploy.Invalid, Field: "judge", Msg: "query parameter judge: missing (GET /v1/agreement?judge=NAME)"}
	}
	rep, err := deploy.Agreement(r.Context(), s.cfg.Store, name, s.cfg.Model, s.boot())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}
