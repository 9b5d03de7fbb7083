package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gavelhq/gavel/bench/problems"
	"github.com/gavelhq/gavel/progress"
	"github.com/gavelhq/gavel/queue"
	"github.com/gavelhq/gavel/store"
	"github.com/gavelhq/gavel/store/sqldb"
)

// queueDB is the store's database and its connection string when a
// queue can run on it.
func queueDB(db store.Store) (*sql.DB, string, error) {
	s, ok := db.(*sqldb.DB)
	if !ok || s.Dialect() != "postgres" || s.ConnString == "" {
		return nil, "", usagef("the work queue runs on a PostgreSQL store: give --db postgres://... (or GAVEL_DB)")
	}
	return s.SQL(), s.ConnString, nil
}

// queueFlags tune the units of the work queue.
type queueFlags struct {
	unitTimeout, rescueAfter time.Duration
}

func (q *queueFlags) register(fl *pflag.FlagSet) {
	fl.DurationVar(&q.unitTimeout, "unit-timeout", 30*time.Minute, "with the work queue, the time a unit may run before it is cancelled and run again")
	fl.DurationVar(&q.rescueAfter, "rescue-after", 0, "with the work queue, hand on a unit still running after this long (default --unit-timeout + 5m; a unit of a process that died is handed on at once)")
}

// startQueue starts this process's runner in the store's work queue,
// working up to jobs units with the model settings of m; stop cancels the
// units in hand (they run again elsewhere) and frees the runner.
func startQueue(ctx context.Context, db store.Store, jobs int, m modelFlags, q queueFlags) (*queue.Runner, func(), error) {
	sqlDB, conn, err := queueDB(db)
	if err != nil {
		return nil, nil, err
	}
	// The units' model calls go out with this process's keys, limits and
	// prices, never offline nor past the cache.
	m.opts.Offline, m.dryRun, m.batch, m.opts.NoCacheReads, m.opts.MaxCost = false, false, false, false, 0
	router := modelRouter(db, registry(), m)
	env := &queue.Env{Results: db.BenchResults(), Cache: db.Cache(), Executions: db.Executions(), Model: router.Client,
		Load: func(path, lang string) ([]*problems.Problem, error) { return loadProblems(path, lang) }}
	r, err := queue.Start(ctx, sqlDB, conn, env, jobs, queue.Options{UnitTimeout: q.unitTimeout, RescueAfter: q.rescueAfter})
	if err != nil {
		env.Close()
		return nil, nil, err
	}
	return r, func() {
		r.Stop()
		env.Close()
	}, nil
}

func (a *app) workerCmd() *cobra.Command {
	var jobs int
	var m modelFlags
	var q queueFlags
	cmd := &cobra.Command{
		Use:   "worker --db postgres://... [--jobs N]",
		Short: "Work the units that commands put in the store's work queue, on any machine that reaches the database",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if jobs < 1 {
				return usagef("--jobs must be at least 1")
			}
			db, err := a.openStore(ctx)
			if err != nil {
				return err
			}
			defer db.Close()
			m.model = "sim" // each unit names its model; this only passes the checks
			r, stop, err := startQueue(ctx, db, jobs, m, q)
			if err != nil {
				return err
			}
			defer stop()
			fmt.Fprintf(a.stderr, "worker %s: working up to %d units at once\n", r.ID(), jobs)
			<-ctx.Done()
			if n := r.Reaped(); n > 0 {
				fmt.Fprintf(a.stderr, "worker: handed on %d units of processes that died\n", n)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&jobs, "jobs", 2, "units worked at once")
	m.registerLimits(fl)
	q.register(fl)
	return cmd
}

// checkQueue refuses what --queue cannot go with.
func (m *modelFlags) checkQueue() error {
	switch {
	case m.opts.Offline || m.dryRun || m.batch:
		return usagef("--queue runs offline stage by stage by itself: leave out --offline, --dry-run and --batch")
	case m.opts.NoCacheReads:
		return usagef("--queue works through the cache: leave out --no-cache")
	case m.opts.MaxCost > 0:
		return usagef("--max-cost counts one process's spending, and with --queue the workers spend: leave it out (or run without --queue)")
	}
	return nil
}

// runUnits enqueues a command's own units, works them beside any workers
// and waits until all have ended, showing how many have.
func (a *app) runUnits(ctx context.Context, db store.Store, jobs int, m modelFlags, label string, enqueue func(*queue.Client) ([]int64, error)) error {
	r, stop, err := startQueue(ctx, db, jobs, m, m.q)
	if err != nil {
		return err
	}
	defer stop()
	ids, err := enqueue(r.Client)
	if err != nil {
		return err
	}
	prog := a.newProgress(label, len(ids))
	defer prog.Done()
	return r.Wait(ctx, ids, func(done, _ int) { prog.Update(done) })
}

// queueRound enqueues the pending requests and waits for their units.
func (a *app) queueRound(ctx context.Context, db store.Store, m *modelFlags, round int) error {
	r, stop, err := startQueue(ctx, db, m.opts.Concurrency, *m, m.q)
	if err != nil {
		return err
	}
	defer stop()
	urls := map[string]string{}
	if m.baseURL != "" {
		urls[m.model] = m.baseURL
	}
	var prog *progress.Bar
	err = r.RunPending(ctx, db.Cache(), urls, func(n int) {
		fmt.Fprintf(a.stderr, "queue round %d: %d model calls enqueued as units\n", round, n)
		prog = a.newProgress(fmt.Sprintf("queue round %d: model calls", round), n)
	}, func(done, _ int) { prog.Update(done) })
	if prog != nil {
		prog.Done()
	}
	if err != nil {
		return fmt.Errorf("--queue: %w", err)
	}
	return nil
}
