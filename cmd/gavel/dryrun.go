package main

import (
	"context"
	"fmt"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/run"
	"github.com/gavelhq/gavel/store"
)

// dryRun prints what a run would send: fill tallies its calls, checking
// the store's cache; nothing is sent and nothing is written.
func (a *app) dryRun(ctx context.Context, m *modelFlags, db store.Store, fill func(*llm.Plan, llm.Cache) error) error {
	prices, err := llm.LoadPrices(m.prices)
	if err != nil {
		return err
	}
	plan := &llm.Plan{Prices: prices}
	if err := fill(plan, db.Cache()); err != nil {
		return err
	}
	if err := a.output(run.NewDryRun(plan)); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "%sdry run: nothing was sent. Input tokens are estimated (characters over four); the cost runs from the input alone to every answer at its bound with a schema repair each.\n", simTag(m.model))
	return nil
}
