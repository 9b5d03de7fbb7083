// Package sqlite is gavel's embedded store: one SQLite file, through the
// pure-Go driver modernc.org/sqlite, in WAL mode with foreign keys on. The
// store itself is package sqldb's, shared with PostgreSQL; this package
// opens the file and holds SQLite's schema.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/gavelhq/gavel/store/sqldb"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// DB is a gavel store in one SQLite file.
type DB = sqldb.DB

// busyTimeout is how long one statement waits for a lock; writes that must
// not be lost (cache answers) wait again and again.
var busyTimeout = 10 * time.Second

// SetBusyTimeout sets how long one statement of stores opened from now on
// waits for a lock, for tests that provoke contention; it returns the
// previous value.
func SetBusyTimeout(d time.Duration) time.Duration {
	old := busyTimeout
	busyTimeout = d
	return old
}

// isBusy reports whether an error is SQLite's "database is locked".
func isBusy(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		code := se.Code() & 0xff
		return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED
	}
	return err != nil && strings.Contains(err.Error(), "database is locked")
}

// Dialect is SQLite's.
func Dialect() sqldb.Dialect {
	migrations, _ := fs.Sub(migrationFS, "migrations")
	return sqldb.Dialect{
		Name:       "sqlite",
		Migrations: migrations,
		IsBusy:     isBusy,
		TempSchema: "temp",
		Staging: `CREATE TEMP TABLE import_staging (
			seq          INTEGER PRIMARY KEY,
			id           TEXT    NOT NULL UNIQUE,
			content_hash TEXT    NOT NULL,
			body         TEXT    NOT NULL,
			label        TEXT    NOT NULL,
			status       TEXT    NOT NULL,
			source       TEXT    NOT NULL,
			grp          TEXT    NOT NULL,
			at_unix_ns   INTEGER)`,
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
	sqldbh := sql.OpenDB(connector{dsn: path + "?" + q.Encode()})
	// Keep connections open between statements: opening one applies the
	// pragmas again, which a busy service would do on most requests with
	// database/sql's default of two idle connections.
	sqldbh.SetMaxIdleConns(32)
	db, err := sqldb.New(ctx, sqldbh, Dialect(), path)
	if err != nil {
		sqldbh.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return db, nil
}
