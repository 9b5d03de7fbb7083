package main

import (
	"github.com/spf13/cobra"

	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/run"
	"github.com/gavelhq/gavel/store"
)

func (a *app) splitCmd() *cobra.Command {
	var spec record.SplitSpec
	var replace, allowSmall bool
	cmd := &cobra.Command{
		Use:   "split NAME",
		Short: "Make a named train/val/test split: seeded, stratified by label, groups kept whole",
		Args:  args(cobra.ExactArgs(1)),
		RunE: a.withStore(func(cmd *cobra.Command, argv []string, db store.Store) error {
			spec.Name = argv[0]
			if err := spec.Validate(); err != nil {
				return usageError{err}
			}
			return a.outputOf(run.MakeSplit(cmd.Context(), db, spec, replace, allowSmall))
		}),
	}
	fl := cmd.Flags()
	fl.Float64Var(&spec.Train, "train", 0.4, "fraction of records for train")
	fl.Float64Var(&spec.Val, "val", 0.3, "fraction of records for val")
	fl.Float64Var(&spec.Test, "test", 0.3, "fraction of records for test")
	fl.Uint64Var(&spec.Seed, "seed", 1, "seed of the draw")
	fl.BoolVar(&spec.ByTime, "by-time", false, "oldest records to train, newest to test (needs outcome.at)")
	statusesVar(fl, &spec.ExcludeStatus, "exclude-status", "leave records with these statuses out of the split (e.g. draft)")
	fl.BoolVar(&replace, "replace", false, "replace an existing split of the same name")
	fl.BoolVar(&allowSmall, "allow-small", false, "make the split even when a part would hold fewer than 10 records or no record of one label")
	cmd.AddCommand(a.splitShowCmd(), a.splitListCmd())
	return cmd
}

func (a *app) splitShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Print a split: its parameters and records, labels and groups per part",
		Args:  args(cobra.ExactArgs(1)),
		RunE: a.withStore(func(cmd *cobra.Command, argv []string, db store.Store) error {
			return a.outputOf(run.ShowSplit(cmd.Context(), db, argv[0]))
		}),
	}
}

func (a *app) splitListCmd() *cobra.Command {
	list := &cobra.Command{
		Use:   "list",
		Short: "List the stored splits",
		Args:  args(cobra.NoArgs),
		RunE: a.withStore(func(cmd *cobra.Command, _ []string, db store.Store) error {
			specs, err := db.Splits(cmd.Context())
			if err != nil {
				return err
			}
			if specs == nil {
				specs = []record.SplitSpec{}
			}
			return a.output(run.SplitList(specs))
		}),
	}
	return list
}
