package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/run"
)

// queueMode says what --queue does for a command.
type queueMode int

const (
	// queueCalls: each round's pending model calls become units.
	queueCalls queueMode = iota
	// queueOwn: the command enqueues units of its own.
	queueOwn
	// queueRefused: neither --queue nor --batch is for this command (it
	// answers as it goes).
	queueRefused
)

// modelUse says how a command uses the model flags.
type modelUse struct {
	queue queueMode
	// modelUsage and queueUsage replace the flags' general help.
	modelUsage, queueUsage string
	// optional: --model has no default (GAVEL_MODEL is not read) and the
	// command runs without one.
	optional bool
}

// withModel registers the model flags on cmd and runs the command through
// the rounds driver: with --batch each round's pending requests go to the
// providers' batch APIs, with --queue to the work queue, and the command
// runs again until it ends. cmd's RunE must be set.
func (a *app) withModel(cmd *cobra.Command, m *modelFlags, use modelUse) {
	if cmd.RunE == nil {
		panic("withModel: " + cmd.Name() + " has no RunE yet")
	}
	m.register(cmd.Flags(), use)
	run := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, argv []string) error {
		a.log.models = map[string]string{m.model: m.baseURL}
		step := func(context.Context) error { return run(cmd, argv) }
		answer, err := a.answerer(cmd, m)
		if err != nil || answer == nil {
			if err != nil {
				return err
			}
			return run(cmd, argv)
		}
		// Every round runs offline: what the cache lacks is left pending
		// for the answerer.
		m.opts.Offline = true
		return llm.Rounds(cmd.Context(), step, answer)
	}
}

// answerer is how the rounds of a command are answered: nil when the
// command runs once as it is.
func (a *app) answerer(cmd *cobra.Command, m *modelFlags) (llm.Answerer, error) {
	switch {
	case m.dryRun && (m.queue || m.batch):
		return nil, usagef("--dry-run sends nothing: leave out --queue and --batch")
	case m.queue:
		switch m.queueMode {
		case queueOwn:
			return nil, nil
		case queueRefused:
			return nil, usagef("--queue is not for %s", cmd.CommandPath())
		}
		if err := m.checkQueue(); err != nil {
			return nil, err
		}
		return llm.AnswerFunc(func(ctx context.Context, round, _ int) error {
			db, err := a.openStore(ctx)
			if err != nil {
				return err
			}
			defer db.Close()
			return a.queueRound(ctx, db, m, round)
		}), nil
	case m.batch:
		if m.queueMode == queueRefused {
			return nil, usagef("--batch is not for %s", cmd.CommandPath())
		}
		if m.opts.Offline || m.dryRun {
			return nil, usagef("--batch runs offline stage by stage by itself: leave out --offline and --dry-run")
		}
		if m.batchPoll <= 0 {
			return nil, usagef("--batch-poll must be positive")
		}
		return run.BatchRounds(a.openStore, registry(), m.prices, m.batchPoll, m.model, m.baseURL, batchAPI, a.stderr), nil
	}
	return nil, nil
}
