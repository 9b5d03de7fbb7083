// Package sqldb is gavel's store on a SQL database through database/sql:
// records and splits, prompt versions, verdicts and teacher decisions,
// calibrations, the service's tables, the model cache and the execution
// cache. One implementation serves SQLite (store/sqlite) and PostgreSQL
// (store/postgres); what differs between them is a Dialect: the schema's
// migrations, how a lock shows, and the DDL of an import's staging table.
// Queries use $1-style placeholders, which both drivers bind.
package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"time"

	"github.com/gavelhq/gavel/record"
)

// Dialect is what differs between the databases.
type Dialect struct {
	// Name is "sqlite" or "postgres".
	Name string
	// Migrations holds the schema as NNNN_name.sql files, applied in
	// name order, each in a transaction with its row in migrations.
	Migrations fs.FS
	// IsBusy reports an error that a lock held elsewhere caused, after
	// which a write may be tried again.
	IsBusy func(error) bool
	// Staging is the DDL of an import's temporary staging table,
	// temp.import_staging with the columns of records and seq, its
	// order; TempSchema names the schema of temporary tables.
	Staging, TempSchema string
	// LockMigrations, when set, serialises migrations across processes
	// inside the migration's transaction.
	LockMigrations string
	// AfterCopy are statements run after a copy into the store (moving
	// serial counters past the copied rows).
	AfterCopy []string
}

// DB is a gavel store on a SQL database.
type DB struct {
	db      *sql.DB
	dialect Dialect
	where   string
	// Now is the clock used for timestamps; tests replace it.
	Now func() time.Time
	// ImportMemoryLimit is how many bytes of record bodies an import
	// holds in memory before it stages them (default 64 MiB).
	ImportMemoryLimit int
	// ConnString is how a second client reaches the same database (the
	// work queue's pgx pool), password included: set by store/postgres,
	// empty for SQLite. Never shown.
	ConnString string `json:"-"`
	// WriteHitsThrough counts each cache hit with an UPDATE of its own, as
	// the store did before 2026-12-01, instead of in memory (for
	// comparison).
	WriteHitsThrough bool

	hits      hitCounts
	getEntry  *sql.Stmt
	getAnswer *sql.Stmt
	// A miss's writes, prepared once.
	claimStmt, putStmt, releaseStmt *sql.Stmt
	putReleaseStmt                  *sql.Stmt // PostgreSQL only
}

var _ record.Store = (*DB)(nil)

// New wraps an open database in a store and applies the migrations it
// lacks. where names it in messages (a path, or a URL without password).
func New(ctx context.Context, sqldb *sql.DB, d Dialect, where string) (*DB, error) {
	db := &DB{db: sqldb, dialect: d, where: where, Now: time.Now, ImportMemoryLimit: 64 << 20}
	// Commands that open a new store at once contend for its first
	// writes (the schema), and a database may refuse some of them without
	// waiting: try again for up to a minute.
	mctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := db.retryBusy(mctx, func() error { return db.migrate(ctx) }); err != nil {
		return nil, err
	}
	var err error
	if db.getEntry, err = sqldb.PrepareContext(ctx, `SELECT key, provider, model, request, response, created_at
		FROM llm_cache WHERE key = $1`); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	// An answer only (a pending entry reads as none, as a missing one
	// does). On SQLite from the index of keys and answers (migration 13),
	// without the stored request's pages, which its planner would walk by
	// the key's own index.
	answerFrom := "llm_cache"
	if db.dialect.Name == "sqlite" {
		answerFrom += " INDEXED BY llm_cache_answers"
	}
	if db.getAnswer, err = sqldb.PrepareContext(ctx, `SELECT response FROM `+answerFrom+` WHERE key = $1 AND response IS NOT NULL`); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	for _, p := range []struct {
		st **sql.Stmt
		q  string
	}{{&db.claimStmt, claimSQL}, {&db.putStmt, putSQL}, {&db.releaseStmt, releaseSQL}} {
		if *p.st, err = sqldb.PrepareContext(ctx, p.q); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
	}
	if db.dialect.Name == "postgres" {
		if db.putReleaseStmt, err = sqldb.PrepareContext(ctx, putReleaseSQL); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
	}
	return db, nil
}

// Close writes the hit counts held in memory and closes the store.
func (db *DB) Close() error {
	ferr := db.flushHits(context.Background())
	for _, st := range []*sql.Stmt{db.getEntry, db.getAnswer, db.claimStmt, db.putStmt, db.releaseStmt, db.putReleaseStmt} {
		if st != nil {
			st.Close()
		}
	}
	if err := db.db.Close(); err != nil {
		return err
	}
	return ferr
}

// Path returns what the store is: a SQLite file's path, or the URL of a
// database server without its password.
func (db *DB) Path() string { return db.where }

// Dialect names the database: "sqlite" or "postgres".
func (db *DB) Dialect() string { return db.dialect.Name }

// SQL is the database, for tests and tools that look inside.
func (db *DB) SQL() *sql.DB { return db.db }

// SchemaVersion returns the number of migrations applied.
func (db *DB) SchemaVersion(ctx context.Context) (int, error) {
	var n int
	err := db.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM migrations`).Scan(&n)
	return n, err
}

// retryBusy runs fn until it is not refused for a lock, or ctx ends: for
// writes of answers that were paid for, which must never be lost to a
// lock held by a command running beside this one.
func (db *DB) retryBusy(ctx context.Context, fn func() error) error {
	wait := 50 * time.Millisecond
	for {
		err := fn()
		if err == nil || db.dialect.IsBusy == nil || !db.dialect.IsBusy(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (gave up waiting for the store's lock: %v)", err, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

func (db *DB) migrate(ctx context.Context) error {
	if _, err := db.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS migrations (
		name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("create migrations table: %w", err)
	}
	names, err := fs.Glob(db.dialect.Migrations, "*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	known := map[string]bool{}
	for _, n := range names {
		known[n] = true
	}
	applied, err := db.appliedMigrations(ctx)
	if err != nil {
		return err
	}
	for name := range applied {
		if !known[name] {
			return fmt.Errorf("the store has migration %s, which this gavel does not know: it was written by a newer gavel", name)
		}
	}
	for _, name := range names {
		if applied[name] {
			continue
		}
		if err := db.applyMigration(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

func (db *DB) appliedMigrations(ctx context.Context) (map[string]bool, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT name FROM migrations`)
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	defer rows.Close()
	applied := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		applied[n] = true
	}
	return applied, rows.Err()
}

func (db *DB) applyMigration(ctx context.Context, name string) error {
	body, err := fs.ReadFile(db.dialect.Migrations, name)
	if err != nil {
		return err
	}
	return db.inTx(ctx, func(tx *sql.Tx) error {
		if db.dialect.LockMigrations != "" {
			if _, err := tx.ExecContext(ctx, db.dialect.LockMigrations); err != nil {
				return err
			}
		}
		// Another process may have applied it since we looked.
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM migrations WHERE name = $1`, name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			return fmt.Errorf("migration %s: %w", name, err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO migrations (name, applied_at) VALUES ($1, $2)`,
			name, db.timestamp())
		return err
	})
}

// inTx runs fn in a transaction, committing when it returns nil.
func (db *DB) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := db.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	if err := fn(tx); err != nil {
		if rerr := tx.Rollback(); rerr != nil && !errors.Is(rerr, sql.ErrTxDone) {
			return fmt.Errorf("%w (and rollback failed: %v)", err, rerr)
		}
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// execRows inserts n rows of width arguments each, many rows a statement:
// head is the statement up to its VALUES list, tail what follows it (an
// ON CONFLICT clause), and row appends row i's arguments to args.
func execRows(ctx context.Context, tx *sql.Tx, head, tail string, width, n int, row func(i int, args []any) []any) error {
	per := max(1, min(100, 30000/width))
	var full *sql.Stmt
	defer func() {
		if full != nil {
			full.Close()
		}
	}()
	args := make([]any, 0, per*width)
	for start := 0; start < n; start += per {
		end := min(n, start+per)
		args = args[:0]
		for i := start; i < end; i++ {
			args = row(i, args)
		}
		var err error
		if end-start == per {
			if full == nil {
				if full, err = tx.PrepareContext(ctx, head+valuesList(per, width)+tail); err != nil {
					return err
				}
			}
			_, err = full.ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, head+valuesList(end-start, width)+tail, args...)
		}
		if err != nil {
			return fmt.Errorf("rows %d to %d: %w", start+1, end, err)
		}
	}
	return nil
}

func (db *DB) timestamp() string {
	return db.Now().UTC().Format(time.RFC3339Nano)
}
