package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gavelhq/gavel/store"
)

func (a *app) dbCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "db", Short: "Move a store between SQLite and PostgreSQL"}
	var from, to string
	cp := &cobra.Command{
		Use:   "copy --from A --to B",
		Short: "Copy every record, split, prompt version, verdict, cached answer and service table into a new store",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" || to == "" {
				return usagef("--from and --to are required")
			}
			if from == to {
				return usagef("--from and --to name the same store")
			}
			total := 0
			err := store.Copy(cmd.Context(), from, to, func(table string, rows int) {
				total += rows
				fmt.Fprintf(a.stderr, "copied %d rows of %s\n", rows, table)
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "copied %d rows in all\n", total)
			return nil
		},
	}
	cp.Flags().StringVar(&from, "from", "", "the store to copy: a SQLite path or a postgres:// URL")
	cp.Flags().StringVar(&to, "to", "", "the new store: a SQLite path or a postgres:// URL (it must be empty)")
	cmd.AddCommand(cp)
	return cmd
}
