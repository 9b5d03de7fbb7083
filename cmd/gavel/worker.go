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

// startQueue migrates the queue's tables and starts a client that works
// up to jobs units; stop cancels the units in hand (they run again
// elsewhere) and frees the client.
func startQueue(ctx context.Context, db store.Store, jobs int) (*queue.Client, func(), error) {
	sqlDB, err := queueDB(db)
	if err != nil {
		return nil, nil, err
	}
	if err := queue.Migrate(ctx, sqlDB); err != nil {
		return nil, nil, err
	}
	env := &queue.Env{Results: db.BenchResults(), Load: func(path, lang string) ([]*problems.Problem, error) {
		return loadProblems(path, lang)
	}}
	c, err := queue.NewClient(sqlDB, env, jobs)
	if err == nil {
		err = c.Start(ctx)
	}
	if err != nil {
		env.Close()
		return nil, nil, err
	}
	return c, func() {
		c.StopAndCancel(context.WithoutCancel(ctx))
		env.Close()
	}, nil
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
			_, stop, err := startQueue(ctx, db, jobs)
			if err != nil {
				return err
			}
			defer stop()
			fmt.Fprintf(a.stderr, "worker: working up to %d units at once\n", jobs)
			<-ctx.Done()
			return nil
		},
	}
	cmd.Flags().IntVar(&jobs, "jobs", 2, "units worked at once")
	return cmd
}
