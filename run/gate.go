package run

import (
	"context"
	"io"
	"os"

	"github.com/gavelhq/gavel/deploy"
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
// (server.Client.Gate): a pass or fail verdict, a *server.StatusError for a
// call the service calls wrong, a *server.NoVerdictError when there is no
// verdict. Files that cannot be read are errors of their field.
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
	return cl.Gate(ctx, &req)
}
