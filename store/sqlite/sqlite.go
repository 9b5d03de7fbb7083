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

	_ "modernc.org/sqlite" // registers the "sqlite" driver
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
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	sqldb, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db := &DB{db: sqldb, path: path, Now: time.Now}
	if err := db.migrate(ctx); err != nil {
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
