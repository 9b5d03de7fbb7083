// Package sqlite is gavel's embedded store: one SQLite file, through the
// pure-Go driver modernc.org/sqlite, in WAL mode with foreign keys on.
// Migrations are embedded SQL files applied in order, each in its own
// transaction together with its entry in the migrations table.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/gavelhq/gavel/record"

	"modernc.org/sqlite" // registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// DB is a gavel store in one SQLite file.
type DB struct {
	db   *sql.DB
	path string
	// Now is the clock used for timestamps; tests replace it.
	Now func() time.Time
}

var _ record.Store = (*DB)(nil)

// busyTimeout is how long one statement waits for a lock; writes that must
// not be lost (cache answers) wait again and again (see retryBusy).
var busyTimeout = 10 * time.Second

// isBusy reports whether an error is SQLite's "database is locked".
func isBusy(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		code := se.Code() & 0xff
		return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED
	}
	return err != nil && strings.Contains(err.Error(), "database is locked")
}

// retryBusy runs fn until it is not refused for a lock, or ctx ends: for
// writes of answers that were paid for, which must never be lost to a
// lock held by a command running beside this one.
func retryBusy(ctx context.Context, fn func() error) error {
	wait := 50 * time.Millisecond
	for {
		err := fn()
		if !isBusy(err) {
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

// Open opens (creating if needed) the store at path and applies any
// migrations it lacks.
func Open(ctx context.Context, path string) (*DB, error) {
	if path == "" {
		return nil, errors.New("open store: empty path")
	}
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("open store %s: the path may not contain '?' or '#'", path)
	}
	q := url.Values{}
	// The busy timeout first, so that every later pragma (switching to
	// WAL takes a lock) and the migrations wait for a concurrent opener.
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	sqldb, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// Keep connections open between statements: opening one applies the
	// pragmas again, which a busy service would do on most requests with
	// database/sql's default of two idle connections.
	sqldb.SetMaxIdleConns(32)
	db := &DB{db: sqldb, path: path, Now: time.Now}
	// Commands that open a new store at once contend for its first
	// writes (WAL, the migrations), and SQLite refuses some of them
	// without waiting: try again for up to a minute.
	mctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := retryBusy(mctx, func() error { return db.migrate(ctx) }); err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return db, nil
}

// Close closes the store.
func (db *DB) Close() error { return db.db.Close() }

// Path returns the file the store lives in.
func (db *DB) Path() string { return db.path }

// SchemaVersion returns the number of migrations applied.
func (db *DB) SchemaVersion(ctx context.Context) (int, error) {
	var n int
	err := db.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM migrations`).Scan(&n)
	return n, err
}

func (db *DB) migrate(ctx context.Context) error {
	if _, err := db.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS migrations (
		name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("create migrations table: %w", err)
	}
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
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
	body, err := migrationFS.ReadFile(name)
	if err != nil {
		return err
	}
	return db.inTx(ctx, func(tx *sql.Tx) error {
		// Another process may have applied it since we looked.
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM migrations WHERE name = ?`, name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			return fmt.Errorf("migration %s: %w", name, err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO migrations (name, applied_at) VALUES (?, ?)`,
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

func (db *DB) timestamp() string {
	return db.Now().UTC().Format(time.RFC3339Nano)
}
