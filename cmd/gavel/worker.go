package main

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gavelhq/gavel/bench/problems"
	"github.com/gavelhq/gavel/queue"
	"github.com/gavelhq/gavel/store"
)

// sqlStore is a store on a database server, which a queue can share.
type sqlStore interface {
	SQL() *sql.DB
	Dialect() string
}

// queueDB is the store's database when a queue can run on it.
func queueDB(db store.Store) (*sql.DB, error) {
	s, ok := db.(sqlStore)
	if !ok || s.Dialect() != "postgres" {
		return nil, usagef("the work queue runs on a PostgreSQL store: give --db postgres://... (or GAVEL_DB)")
	}
	return s.SQL(), nil
}

func queueEnv(db store.Store) *queue.Env {
	return &queue.Env{Results: db.BenchResults(), Load: func(path, lang string) ([]*problems.Problem, error) {
		return loadProblems(path, lang)
	}}
}

func (a *app) workerCmd() *cobra.Command {
	var jobs int
	cmd := &cobra.Command{
		Use:   "worker --db postgres://... [--jobs N]",
		Short: "Work units that commands enqueue (bench build --queue), on any machine that reaches the database",
		Long: `Work the units that commands put in the store's work queue (River, on
PostgreSQL): one problem's validation of a benchmark build, for now. A unit
fills the store's caches, so one run again after a crash repeats nothing that
finished. Run as many workers as there are machines; stop one with SIGINT or
SIGTERM (its units in flight are cancelled and run again elsewhere).`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			db, err := a.openStore(ctx)
			if err != nil {
				return err
			}
			defer db.Close()
			sqlDB, err := queueDB(db)
			if err != nil {
				return err
			}
			if err := queue.Migrate(ctx, sqlDB); err != nil {
				return err
			}
			env := queueEnv(db)
			defer env.Close()
			c, err := queue.NewClient(sqlDB, env, jobs)
			if err != nil {
				return err
			}
			if err := c.Start(ctx); err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "worker: working up to %d units at once\n", jobs)
			<-ctx.Done()
			return c.StopAndCancel(context.WithoutCancel(ctx))
		},
	}
	cmd.Flags().IntVar(&jobs, "jobs", 2, "units worked at once")
	return cmd
}
