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
	var rep *deploy.AgreementReport
	err := s.expensive(r.Context(), func() (err error) {
		rep, err = deploy.Agreement(r.Context(), s.cfg.Store, name, s.cfg.Model, s.boot())
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}
