// Package queue spreads gavel's work over machines with River, a job queue
// on PostgreSQL: a command enqueues its units (one problem's validation
// for a benchmark build, one instruction's round for ACR, one pending
// model request, such as one record's verdict, for calibrate, eval, judge
// and teach), `gavel worker` processes anywhere that reaches
// the database work them, and the command waits for them. A unit only
// fills the store's content-addressed caches, so a unit run twice (after a
// crash) repeats nothing finished, and the command's own pass afterwards
// reads every result from the caches and writes exactly what a run on one
// machine writes.
package queue

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/gavelhq/gavel/acr"
	"github.com/gavelhq/gavel/bench"
	bexec "github.com/gavelhq/gavel/bench/exec"
	"github.com/gavelhq/gavel/bench/problems"
	"github.com/gavelhq/gavel/llm"
)

// Client is a River client on the store's database, through pgx: units
// are picked up as their insert is notified (LISTEN/NOTIFY), not by
// polling.
type Client = river.Client[pgx.Tx]

// Migrate creates or updates River's tables, one process at a time (an
// advisory lock held on a connection of its own while it migrates).
func Migrate(ctx context.Context, db *sql.DB, pool *pgxpool.Pool) error {
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
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("queue: migrate River's tables: %w", err)
	}
	return nil
}

// Env is what a worker process brings to its units.
type Env struct {
	// Results is the store's result cache (benchmark units).
	Results bench.ResultCache
	// Load reads a problems file of a language (benchmark units).
	Load func(path, lang string) ([]*problems.Problem, error)
	// Cache is the store's model cache, where model-call units find their
	// requests.
	Cache llm.Cache
	// Model is the client that sends a model's requests (with baseURL
	// when given, else the provider's default), through the store's
	// cache, with this process's keys, limits and prices.
	Model func(model, baseURL string) (llm.Client, error)
	// Executions is the store's execution cache (ACR units).
	Executions acr.ExecCache

	mu        sync.Mutex
	problems  map[string][]*problems.Problem
	mod       *bexec.GoModule
	sandboxes map[time.Duration]*acr.Sandbox
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

// sandbox is the ACR sandbox of a wall-clock limit, shared by the units.
func (e *Env) sandbox(wall time.Duration) *acr.Sandbox {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sandboxes == nil {
		e.sandboxes = map[time.Duration]*acr.Sandbox{}
	}
	s := e.sandboxes[wall]
	if s == nil {
		s = &acr.Sandbox{Limits: bexec.Limits{Wall: wall}}
		e.sandboxes[wall] = s
	}
	return s
}

// Close frees what the units shared (the Go modules).
func (e *Env) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mod != nil {
		e.mod.Close()
		e.mod = nil
	}
	for _, s := range e.sandboxes {
		s.Close()
	}
	e.sandboxes = nil
}

// Options tune how long a unit may run.
type Options struct {
	// UnitTimeout cancels a unit that runs longer (0: 30 minutes; a unit
	// may compile and run dozens of programs). It runs again, from what
	// the caches kept.
	UnitTimeout time.Duration
	// RescueAfter hands a unit still running after this long to another
	// process (0: UnitTimeout plus 5 minutes). A unit of a process that
	// died is handed on at once, whatever this says (see Runner).
	RescueAfter time.Duration
	// ReapEvery is how often a process looks for units held by processes
	// that died (0: 2 seconds).
	ReapEvery time.Duration
}

func (o Options) norm() Options {
	if o.UnitTimeout <= 0 {
		o.UnitTimeout = 30 * time.Minute
	}
	if o.RescueAfter < o.UnitTimeout {
		o.RescueAfter = o.UnitTimeout + 5*time.Minute
	}
	if o.ReapEvery <= 0 {
		o.ReapEvery = 2 * time.Second
	}
	return o
}

// Runner is a process's place in the queue: a River client that works up
// to a number of units at once (none: it only enqueues), and a mark that
// the process is alive.
//
// River hands on a unit whose process stopped answering only after
// RescueAfter, which must exceed the longest unit. gavel does better: each
// process holds a PostgreSQL advisory lock, named by its River client id,
// on a connection of its own for as long as it lives; when a process dies,
// its connection closes and the lock goes with it. Every process looks
// every ReapEvery for running units whose last process's lock is free,
// and makes them available again at once. A unit fills content-addressed
// caches only, so one run again repeats nothing that finished.
type Runner struct {
	Client *Client
	db     *sql.DB
	pool   *pgxpool.Pool
	id     string
	alive  *sql.Conn
	cancel context.CancelFunc
	done   chan struct{}
	// Reaped counts the units this process made available again.
	reaped atomic.Int64
}

// livenessClass is the first key of the processes' advisory locks.
const livenessClass = 1734440558

func lockKey(id string) int32 {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int32(h.Sum32())
}

// Start migrates the queue's tables and starts a runner on the store's
// database (db, and a pgx pool of its own on connString, the same
// database) that works up to jobs units at once with env.
func Start(ctx context.Context, db *sql.DB, connString string, env *Env, jobs int, opt Options) (*Runner, error) {
	opt = opt.norm()
	pool, err := pgxpool.New(ctx, connString)
	if err != nil {
		return nil, fmt.Errorf("queue: connect: %w", err)
	}
	if err := Migrate(ctx, db, pool); err != nil {
		pool.Close()
		return nil, err
	}
	host, _ := os.Hostname()
	var rnd [4]byte
	rand.Read(rnd[:])
	r := &Runner{db: db, pool: pool, id: fmt.Sprintf("gavel_%s_%d_%x", host, os.Getpid(), rnd), done: make(chan struct{})}
	if r.alive, err = db.Conn(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if _, err := r.alive.ExecContext(ctx, `SELECT pg_advisory_lock($1, $2)`, livenessClass, lockKey(r.id)); err != nil {
		r.alive.Close()
		pool.Close()
		return nil, fmt.Errorf("queue: mark this process alive: %w", err)
	}
	cfg := &river.Config{
		ID:                   r.id,
		JobTimeout:           opt.UnitTimeout,
		RescueStuckJobsAfter: opt.RescueAfter,

		MaxAttempts: 5,
		Logger:      slog.New(slog.DiscardHandler),
	}
	if jobs > 0 {
		workers := river.NewWorkers()
		river.AddWorker(workers, &benchWorker{env: env})
		river.AddWorker(workers, &modelCallWorker{env: env})
		river.AddWorker(workers, &acrWorker{env: env})
		cfg.Workers = workers
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: jobs}}
	}
	if r.Client, err = river.NewClient(riverpgxv5.New(pool), cfg); err == nil && jobs > 0 {
		err = r.Client.Start(ctx)
	}
	if err != nil {
		r.release()
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	go r.reap(rctx, opt.ReapEvery)
	return r, nil
}

// ID is the process's River client id.
func (r *Runner) ID() string { return r.id }

// Reaped is the number of units of dead processes this one made available.
func (r *Runner) Reaped() int64 { return r.reaped.Load() }

// Stop cancels the units in hand (they run again elsewhere) and leaves the
// queue.
func (r *Runner) Stop() {
	r.cancel()
	<-r.done
	ctx := context.Background()
	if r.Client != nil {
		r.Client.StopAndCancel(ctx)
	}
	r.release()
}

func (r *Runner) release() {
	r.alive.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1, $2)`, livenessClass, lockKey(r.id))
	r.alive.Close()
	r.pool.Close()
}

func (r *Runner) reap(ctx context.Context, every time.Duration) {
	defer close(r.done)
	for {
		if n, err := r.reapOnce(ctx); err == nil {
			r.reaped.Add(int64(n))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// reapOnce makes available again the running units whose process died.
func (r *Runner) reapOnce(ctx context.Context) (int, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT id, attempt, attempted_by[array_length(attempted_by, 1)] FROM river_job
		WHERE state = 'running' AND kind LIKE 'gavel\_%' AND attempted_by IS NOT NULL`)
	if err != nil {
		return 0, err
	}
	type held struct {
		id      int64
		attempt int
		by      string
	}
	var hs []held
	for rows.Next() {
		var h held
		if err := rows.Scan(&h.id, &h.attempt, &h.by); err != nil {
			rows.Close()
			return 0, err
		}
		if h.by != r.id {
			hs = append(hs, h)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(hs) == 0 {
		return 0, err
	}
	conn, err := r.db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	dead := map[string]bool{}
	n := 0
	for _, h := range hs {
		d, seen := dead[h.by]
		if !seen {
			// The lock is free only when its process is gone; taking it
			// here proves that, and it is given back at once.
			if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1, $2)`, livenessClass, lockKey(h.by)).Scan(&d); err != nil {
				return n, err
			}
			if d {
				if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1, $2)`, livenessClass, lockKey(h.by)); err != nil {
					return n, err
				}
			}
			dead[h.by] = d
		}
		if !d {
			continue
		}
		msg, _ := json.Marshal(map[string]any{"at": time.Now().UTC(), "attempt": h.attempt,
			"error": "the process working this unit (" + h.by + ") died; handed on by " + r.id, "trace": ""})
		res, err := r.db.ExecContext(ctx, `UPDATE river_job SET state = 'available', scheduled_at = now(),
			errors = array_append(errors, $3::jsonb)
			WHERE id = $1 AND state = 'running' AND attempted_by[array_length(attempted_by, 1)] = $2`, h.id, h.by, string(msg))
		if err != nil {
			return n, err
		}
		if k, _ := res.RowsAffected(); k > 0 {
			n++
		}
	}
	return n, nil
}

// Wait waits until every job has ended, reporting how many have. A job
// cancelled or discarded (out of attempts) is an error.
func (r *Runner) Wait(ctx context.Context, ids []int64, progress func(done, total int)) error {
	for {
		var done int
		var failed sql.NullInt64
		err := r.db.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE state = 'completed'),
			min(id) FILTER (WHERE state IN ('cancelled', 'discarded')) FROM river_job WHERE id = ANY($1)`, int64s(ids)).Scan(&done, &failed)
		if err != nil {
			return err
		}
		if failed.Valid {
			j, err := r.Client.JobGet(ctx, failed.Int64)
			if err != nil {
				return err
			}
			msg := ""
			if len(j.Errors) > 0 {
				msg = j.Errors[len(j.Errors)-1].Error
			}
			return fmt.Errorf("queue: unit %d (%s) %s: %s", j.ID, j.Kind, j.State, msg)
		}
		if progress != nil {
			progress(done, len(ids))
		}
		if done >= len(ids) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// int64s is ids as a PostgreSQL array literal, which database/sql can
// pass to any driver.
func int64s(ids []int64) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	b.WriteByte('}')
	return b.String()
}

// enqueue inserts units (one already in the queue with the same arguments
// is not inserted twice) and returns their ids.
func enqueue(ctx context.Context, c *Client, args []river.JobArgs) ([]int64, error) {
	var ids []int64
	for chunk := range slices.Chunk(args, 1000) {
		params := make([]river.InsertManyParams, len(chunk))
		for i, a := range chunk {
			params[i] = river.InsertManyParams{Args: a, InsertOpts: &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}}
		}
		res, err := c.InsertMany(ctx, params)
		if err != nil {
			return nil, fmt.Errorf("queue: enqueue: %w", err)
		}
		for _, r := range res {
			ids = append(ids, r.Job.ID)
		}
	}
	return ids, nil
}
