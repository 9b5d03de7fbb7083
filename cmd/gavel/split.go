package main

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gavelhq/gavel/record"
)

func (a *app) splitCmd() *cobra.Command {
	var spec record.SplitSpec
	var exclude []string
	var replace bool
	cmd := &cobra.Command{
		Use:   "split NAME",
		Short: "Make a named train/val/test split: seeded, stratified by label, groups kept whole",
		Long: `Make a named split of the stored records into train, val and test.

By default the split is a seeded draw, stratified by label (a group counts in
the stratum of its majority label), that never divides a group between parts:
the same records, fractions and seed always give the same split. With
--by-time the oldest records (by outcome.at) go to train and the newest to
test, for measuring drift. 'gavel split show NAME' prints a split and
'gavel split list' lists them.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			spec.Name = argv[0]
			st, err := record.ParseStatuses(exclude)
			if err != nil {
				return usagef("--exclude-status: %v", err)
			}
			spec.ExcludeStatus = st
			if err := spec.Validate(); err != nil {
				return usageError{err}
			}
			ctx := cmd.Context()
			db, err := a.openStore(ctx)
			if err != nil {
				return err
			}
			defer db.Close()
			var members []record.Member
			err = db.Records(ctx, record.Filter{ExcludeStatus: spec.ExcludeStatus}, func(r *record.Record) error {
				members = append(members, record.MemberOf(r))
				return nil
			})
			if err != nil {
				return err
			}
			s, err := record.MakeSplit(members, spec)
			if err != nil {
				return fmt.Errorf("split %s: %w", spec.Name, err)
			}
			if err := db.SaveSplit(ctx, s, replace); errors.Is(err, record.ErrExists) {
				return fmt.Errorf("%w: give --replace to make it anew", err)
			} else if err != nil {
				return err
			}
			return a.showSplit(cmd, spec.Name)
		},
	}
	fl := cmd.Flags()
	fl.Float64Var(&spec.Train, "train", 0.4, "fraction of records for train")
	fl.Float64Var(&spec.Val, "val", 0.3, "fraction of records for val")
	fl.Float64Var(&spec.Test, "test", 0.3, "fraction of records for test")
	fl.Uint64Var(&spec.Seed, "seed", 1, "seed of the draw")
	fl.BoolVar(&spec.ByTime, "by-time", false, "oldest records to train, newest to test (needs outcome.at)")
	fl.StringSliceVar(&exclude, "exclude-status", nil, "leave records with these statuses out of the split (e.g. draft)")
	fl.BoolVar(&replace, "replace", false, "replace an existing split of the same name")

	cmd.AddCommand(a.splitShowCmd(), a.splitListCmd())
	return cmd
}

func describeSpec(s record.SplitSpec) string {
	how := fmt.Sprintf("seed %d, stratified by label, groups kept whole", s.Seed)
	if s.ByTime {
		how = "by time, oldest in train, groups kept whole"
	}
	d := fmt.Sprintf("train %.2f, val %.2f, test %.2f; %s", s.Train, s.Val, s.Test, how)
	if len(s.ExcludeStatus) > 0 {
		d += fmt.Sprintf("; without %v", s.ExcludeStatus)
	}
	return d
}

// partSummary is one part of a split in `split show`.
type partSummary struct {
	Records int `json:"records"`
	Pass    int `json:"pass"`
	Fail    int `json:"fail"`
	Groups  int `json:"groups"`
}

type splitSummary struct {
	Name  string                      `json:"name"`
	Spec  record.SplitSpec            `json:"spec"`
	Total int                         `json:"total"`
	Parts map[record.Part]partSummary `json:"parts"`
}

func (a *app) showSplit(cmd *cobra.Command, name string) error {
	ctx := cmd.Context()
	db, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	s, err := db.Split(ctx, name)
	if err != nil {
		return err
	}
	sum := splitSummary{Name: name, Spec: s.Spec, Parts: map[record.Part]partSummary{}}
	groups := map[record.Part]map[string]bool{}
	for _, p := range record.Parts {
		groups[p] = map[string]bool{}
	}
	err = db.Records(ctx, record.Filter{Split: name}, func(r *record.Record) error {
		p := s.Assign[r.ID]
		ps := sum.Parts[p]
		ps.Records++
		if r.Outcome.Label == record.Pass {
			ps.Pass++
		} else {
			ps.Fail++
		}
		if r.Group != "" && !groups[p][r.Group] {
			groups[p][r.Group] = true
			ps.Groups++
		}
		sum.Parts[p] = ps
		sum.Total++
		return nil
	})
	if err != nil {
		return err
	}
	if a.json {
		for _, p := range record.Parts {
			if _, ok := sum.Parts[p]; !ok {
				sum.Parts[p] = partSummary{}
			}
		}
		return a.writeJSON(sum)
	}
	fmt.Fprintf(a.stdout, "split %s: %d records; %s\n", name, sum.Total, describeSpec(s.Spec))
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "part\trecords\tpass\tfail\tgroups\t")
	for _, p := range record.Parts {
		ps := sum.Parts[p]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t\n", p, ps.Records, ps.Pass, ps.Fail, ps.Groups)
	}
	return tw.Flush()
}

func (a *app) splitShowCmd() *cobra.Command {
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Print a split: its parameters and records, labels and groups per part",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.showSplit(cmd, argv[0])
		},
	}
	return show
}

func (a *app) splitListCmd() *cobra.Command {
	list := &cobra.Command{
		Use:   "list",
		Short: "List the stored splits",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := a.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			specs, err := db.Splits(cmd.Context())
			if err != nil {
				return err
			}
			if a.json {
				if specs == nil {
					specs = []record.SplitSpec{}
				}
				return a.writeJSON(specs)
			}
			for _, s := range specs {
				fmt.Fprintf(a.stdout, "%s\t%s\n", s.Name, describeSpec(s))
			}
			return nil
		},
	}
	return list
}
