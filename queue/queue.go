// Package queue spreads gavel's work over machines with River, a job queue
// on PostgreSQL: a command enqueues its units (one problem's validation
// for a benchmark build), `gavel worker` processes anywhere that reaches
// the database work them, and the command waits for them. A unit only
// fills the store's content-addressed caches, so a unit run twice (after a
// crash) repeats nothing finished, and the command's own pass afterwards
// reads every result from the caches and writes exactly what a run on one
// machine writes.
package queue

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/gavelhq/gavel/bench"
	bexec "github.com/gavelhq/gavel/bench/exec"
	"github.com/gavelhq/gavel/bench/problems"
)

// Client is a River client on the store's database.
type Client = river.Client[*sql.Tx]

// Migrate creates or updates River's tables, one process at a time (an
// advisory lock held on a connection of its own while it migrates).
func Migrate(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	const key = 1734440557 // "gavel" + 1: beside the store's own migrations lock
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, key); err != nil {
		return fmt.Errorf("queue: lock for migration: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, key)
	m, err := rivermigrate.New(riverdatabasesql.New(db), nil)
	if err != nil {
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("queue: migrate River's tables: %w", err)
	}
	return nil
}

// BenchProblemArgs is one unit of a benchmark build: validating one
// problem's candidates. The problems file must be readable at the same
// path by every worker (a shared checkout or volume).
type BenchProblemArgs struct {
	Problems   string        `json:"problems"`
	Lang       string        `json:"lang"`
	Index      int           `json:"index"`
	ProblemID  string        `json:"problem_id"`
	Seed       uint64        `json:"seed"`
	PerScore   int           `json:"per_score"`
	Candidates int           `json:"candidates"`
	Wall       time.Duration `json:"wall"`
}

// Kind implements river.JobArgs.
func (BenchProblemArgs) Kind() string { return "gavel_bench_problem" }

// Env is what a worker process brings to its units.
type Env struct {
	// Results is the store's result cache.
	Results bench.ResultCache
	// Load reads a problems file of a language.
	Load func(path, lang string) ([]*problems.Problem, error)

	mu       sync.Mutex
	problems map[string][]*problems.Problem
	mod      *bexec.GoModule
}

func (e *Env) problemsOf(path, lang string) ([]*problems.Problem, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	key := lang + "\x00" + path
	if ps, ok := e.problems[key]; ok {
		return ps, nil
	}
	ps, err := e.Load(path, lang)
	if err != nil {
		return nil, err
	}
	if e.problems == nil {
		e.problems = map[string][]*problems.Problem{}
	}
	e.problems[key] = ps
	return ps, nil
}

func (e *Env) goModule() (*bexec.GoModule, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mod != nil {
		return e.mod, nil
	}
	m, err := problems.NewGoModule()
	if err != nil {
		return nil, err
	}
	e.mod = m
	return m, nil
}

// Close frees what the units shared (the Go module).
func (e *Env) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mod != nil {
		e.mod.Close()
		e.mod = nil
	}
}

// benchWorker works BenchProblemArgs.
type benchWorker struct {
	river.WorkerDefaults[BenchProblemArgs]
	env *Env
}

func (w *benchWorker) Work(ctx context.Context, job *river.Job[BenchProblemArgs]) error {
	a := job.Args
	ps, err := w.env.problemsOf(a.Problems, a.Lang)
	if err != nil {
		return river.JobCancel(fmt.Errorf("problems %s: %w", a.Problems, err))
	}
	if a.Index < 0 || a.Index >= len(ps) || ps[a.Index].ID != a.ProblemID {
		return river.JobCancel(fmt.Errorf("problems %s: no problem %s at index %d here", a.Problems, a.ProblemID, a.Index))
	}
	var mod *bexec.GoModule
	if a.Lang == "go" {
		if mod, err = w.env.goModule(); err != nil {
			return err
		}
	}
	_, err = bench.WarmProblem(ctx, ps[a.Index], a.Index, mod, bench.BuildOptions{Lang: a.Lang, Seed: a.Seed, PerScore: a.PerScore,
		Candidates: a.Candidates, Limits: bexec.Limits{Wall: a.Wall}, Cache: w.env.Results})
	return err
}

// NewClient makes a River client on db that works gavel's units with up
// to jobs at once (0: it only enqueues).
func NewClient(db *sql.DB, env *Env, jobs int) (*Client, error) {
	cfg := &river.Config{
		// A unit may compile and run dozens of programs.
		JobTimeout:           30 * time.Minute,
		RescueStuckJobsAfter: 35 * time.Minute,
		FetchPollInterval:    200 * time.Millisecond,
		MaxAttempts:          5,
	}
	if jobs > 0 {
		workers := river.NewWorkers()
		river.AddWorker(workers, &benchWorker{env: env})
		cfg.Workers = workers
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: jobs}}
	}
	return river.NewClient(riverdatabasesql.New(db), cfg)
}

// Wait waits until every job has ended, reporting how many have. A job
// cancelled or discarded (out of attempts) is an error.
func Wait(ctx context.Context, c *Client, ids []int64, progress func(done, total int)) error {
	for {
		done := 0
		for _, id := range ids {
			j, err := c.JobGet(ctx, id)
			if err != nil {
				return err
			}
			switch j.State {
			case rivertype.JobStateCompleted:
				done++
			case rivertype.JobStateCancelled, rivertype.JobStateDiscarded:
				msg := ""
				if len(j.Errors) > 0 {
					msg = j.Errors[len(j.Errors)-1].Error
				}
				return fmt.Errorf("queue: unit %d (%s) %s: %s", id, j.Kind, j.State, msg)
			}
		}
		if progress != nil {
			progress(done, len(ids))
		}
		if done == len(ids) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// EnqueueBench inserts one unit per problem (a unit already in the queue
// with the same arguments is not inserted twice) and returns the jobs' ids.
func EnqueueBench(ctx context.Context, c *Client, file string, ps []*problems.Problem, opt bench.BuildOptions) ([]int64, error) {
	var params []river.InsertManyParams
	for i, p := range ps {
		params = append(params, river.InsertManyParams{
			Args: BenchProblemArgs{Problems: file, Lang: opt.Lang, Index: i, ProblemID: p.ID, Seed: opt.Seed,
				PerScore: opt.PerScore, Candidates: opt.Candidates, Wall: opt.Limits.Wall},
			InsertOpts: &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}},
		})
	}
	res, err := c.InsertMany(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("queue: enqueue: %w", err)
	}
	ids := make([]int64, len(res))
	for i, r := range res {
		ids[i] = r.Job.ID
	}
	return ids, nil
}
