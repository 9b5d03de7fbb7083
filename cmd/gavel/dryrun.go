package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/store"
)

// dryRunSummary is the --dry-run --json output; its field names are a
// contract.
type dryRunSummary struct {
	DryRun bool            `json:"dry_run"`
	Lines  []*llm.PlanLine `json:"lines"`
	Total  llm.PlanLine    `json:"total"`
}

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
	total := plan.Total()
	if plan.Lines == nil {
		plan.Lines = []*llm.PlanLine{} // a run that calls no model
	}
	if a.json {
		return a.writeJSON(dryRunSummary{DryRun: true, Lines: plan.Lines, Total: total})
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "role\tstage\tmodel\tcalls\tcached\tto send\tinput tokens\toutput tokens (max)\tcost\t")
	row := func(l *llm.PlanLine) {
		calls := fmt.Sprint(l.Calls)
		if !l.Exact {
			calls = "at most " + calls
		}
		cost := "no price"
		if l.Priced {
			cost = llm.Dollars(l.Cost.Low) + " to " + llm.Dollars(l.Cost.High)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t\n", l.Role, l.Stage, l.Model, calls, l.Cached, l.ToSend,
			l.InputTokens, l.OutputTokensMax, cost)
	}
	for _, l := range plan.Lines {
		row(l)
	}
	row(&total)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "%sdry run: nothing was sent. Input tokens are estimated (characters over four); the cost runs from the input alone to every answer at its bound with a schema repair each.\n", simTag(m.model))
	return nil
}
