package server

import (
	"context"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/judge"
)

// activeSpec is the prompt version a judge judges with: its active one
// (a built-in judge's first use activates its built-in prompt).
func (s *Server) activeSpec(ctx context.Context, name string) (*judge.PromptVersion, error) {
	a, err := deploy.EnsureActive(ctx, s.cfg.Store, name)
	if err != nil {
		return nil, err
	}
	return s.prompt(ctx, a.Version)
}

// prompt returns a stored prompt version by its full hash. Versions never
// change, so they are kept in memory once read.
func (s *Server) prompt(ctx context.Context, hash string) (*judge.PromptVersion, error) {
	if pv, ok := s.prompts.Load(hash); ok {
		return pv.(*judge.PromptVersion), nil
	}
	pv, err := s.cfg.Store.Prompt(ctx, hash)
	if err != nil {
		return nil, err
	}
	s.prompts.Store(hash, pv)
	return pv, nil
}

// info describes a judge with the service's model and bootstrap.
func (s *Server) info(ctx context.Context, name string, live bool) (*deploy.JudgeInfo, error) {
	return deploy.Info(ctx, s.cfg.Store, name, s.cfg.Model, live, s.boot(), &s.live)
}

// expensive runs a read that may take a bootstrap (a judge's statistics,
// drift, agreement) with at most cfg.ReadConcurrency of them at once: the
// rest wait parked, not runnable, so however many clients read, a core is
// left for the health check and the writes.
func (s *Server) expensive(ctx context.Context, read func() error) error {
	select {
	case s.reads <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.reads }()
	return read()
}
