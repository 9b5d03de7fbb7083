package main

import (
	"fmt"
	"io"

	"github.com/gavelhq/gavel/atomicfile"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/run"
	"github.com/gavelhq/gavel/store"
)

// filterFlags are the record-selection flags shared by commands that read
// records.
type filterFlags struct {
	split         string
	labels        []record.Label
	statuses      []record.Status
	excludeStatus []record.Status
	group         string
	limit         int
}

func (f *filterFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.split, "split", "", "only records of a split, or of one part: NAME or NAME:train|val|test")
	labelsVar(fl, &f.labels, "label", "only records with these labels (pass, fail)")
	statusesVar(fl, &f.statuses, "status", "only records with these statuses")
	statusesVar(fl, &f.excludeStatus, "exclude-status", "leave out records with these statuses (e.g. draft)")
	fl.StringVar(&f.group, "group", "", "only records of this group")
	fl.IntVar(&f.limit, "limit", 0, "at most this many records (0: all)")
}

func (f *filterFlags) filter() (record.Filter, error) {
	var out record.Filter
	if f.split != "" {
		name, part, err := record.ParseSplitRef(f.split)
		if err != nil {
			return out, usagef("--split: %v", err)
		}
		out.Split, out.Part = name, part
	}
	out.Labels, out.Statuses, out.ExcludeStatus = f.labels, f.statuses, f.excludeStatus
	if f.limit < 0 {
		return out, usagef("--limit must not be negative")
	}
	out.Group, out.Limit = f.group, f.limit
	return out, nil
}

func (a *app) recordsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "records",
		Short: "Inspect and export the stored records",
		Args:  args(cobra.NoArgs),
	}
	cmd.AddCommand(a.recordsStatsCmd(), a.recordsListCmd(), a.recordsExportCmd(), a.recordsOutcomesCmd())
	return cmd
}

func (a *app) recordsStatsCmd() *cobra.Command {
	var ff filterFlags
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Totals by label, status and source, and the number of groups",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := ff.filter()
			if err != nil {
				return err
			}
			db, err := a.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			return a.outputOf(run.RecordStats(cmd.Context(), db, f))
		},
	}
	ff.register(cmd.Flags())
	return cmd
}

func (a *app) recordsListCmd() *cobra.Command {
	var ff filterFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List records: id, label, status, source, group and the start of the task",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := ff.filter()
			if err != nil {
				return err
			}
			db, err := a.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			return a.outputOf(run.ListRecords(cmd.Context(), db, f))
		},
	}
	ff.register(cmd.Flags())
	return cmd
}

func (a *app) recordsExportCmd() *cobra.Command {
	var ff filterFlags
	var out string
	cmd := &cobra.Command{
		Use:   "export -o FILE",
		Short: "Write records as native JSONL (re-importing the file is a no-op)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := ff.filter()
			if err != nil {
				return err
			}
			if out == "" {
				return usagef("export needs -o FILE (or -o - for standard output)")
			}
			if out == "-" && a.json {
				return usagef("--json and -o - both want standard output; write to a file")
			}
			db, err := a.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			n := 0
			err = a.writeFile(out, func(w io.Writer) error {
				return db.Records(cmd.Context(), f, func(r *record.Record) error {
					n++
					return run.WriteRecords(w, r)
				})
			})
			if err != nil {
				return fmt.Errorf("export: %w", err)
			}
			if a.json {
				return a.writeJSON(&run.FileResult{ResultVersion: run.ResultVersion, File: out, Records: n})
			}
			if out != "-" {
				fmt.Fprintf(a.stderr, "exported %d records to %s\n", n, out)
			}
			return nil
		},
	}
	ff.register(cmd.Flags())
	cmd.Flags().StringVarP(&out, "output", "o", "", "file to write (- for standard output)")
	return cmd
}

// writeFile writes a file whole or not at all (atomicfile), "-" to the
// command's stdout.
func (a *app) writeFile(name string, fn func(io.Writer) error) error {
	return atomicfile.Write(name, a.stdout, fn)
}

func (a *app) recordsOutcomesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "outcomes ID",
		Short: "A record's outcome versions, oldest first (the latest is its outcome)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: a.withStore(func(cmd *cobra.Command, ids []string, db store.Store) error {
			vs, err := db.Outcomes(cmd.Context(), ids[0])
			if err != nil {
				return err
			}
			return a.output(&run.OutcomesResult{ResultVersion: run.ResultVersion, ID: ids[0], Outcomes: vs})
		}),
	}
}
