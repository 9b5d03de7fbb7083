// Package postgres opens gavel's store on a PostgreSQL server, for a team
// sharing judges, outcomes and the model cache: the store is package
// sqldb's, shared with SQLite, through pgx's database/sql driver; this
// package connects and holds PostgreSQL's schema.
package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

	"github.com/gavelhq/gavel/store/sqldb"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// isBusy reports an error a concurrent transaction caused, after which a
// write can be tried again: a serialization failure, a deadlock, a lock
// not available, or two processes creating the same table at once.
func isBusy(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code {
	case "40001", "40P01", "55P03":
		return true
	case "42P07", "42710": // a table or its row type made meanwhile
		return true
	case "23505": // the same, seen as a unique catalogue row
		return pe.ConstraintName == "pg_type_typname_nsp_index"
	}
	return false
}

// Dialect is PostgreSQL's.
func Dialect() sqldb.Dialect {
	migrations, _ := fs.Sub(migrationFS, "migrations")
	return sqldb.Dialect{
		Name:       "postgres",
		Migrations: migrations,
		IsBusy:     isBusy,
		TempSchema: "pg_temp",
		Staging: `CREATE TEMP TABLE import_staging (
			seq          BIGSERIAL PRIMARY KEY,
			id           TEXT   NOT NULL UNIQUE,
			content_hash TEXT   NOT NULL,
			body         TEXT   NOT NULL,
			label        TEXT   NOT NULL,
			status       TEXT   NOT NULL,
			source       TEXT   NOT NULL,
			grp          TEXT   NOT NULL,
			at_unix_ns   BIGINT)`,
		// One process migrates at a time (the key is "gavel" in ASCII).
		LockMigrations: `SELECT pg_advisory_xact_lock(1734440556)`,
		AfterCopy: []string{
			`SELECT setval(pg_get_serial_sequence('records', 'seq'), COALESCE(MAX(seq), 0) + 1, false) FROM records`,
			`SELECT setval(pg_get_serial_sequence('calibrations', 'id'), COALESCE(MAX(id), 0) + 1, false) FROM calibrations`,
			`SELECT setval(pg_get_serial_sequence('activations', 'seq'), COALESCE(MAX(seq), 0) + 1, false) FROM activations`,
		},
	}
}

// Redact is a database URL without its password, for messages.
func Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "a PostgreSQL database"
	}
	return u.Redacted()
}

// Open connects to the database a postgres:// URL names and applies any
// migrations it lacks. Connection settings (host, sslmode, search_path,
// pool size as pool_max_conns) go in the URL, as libpq takes them.
func Open(ctx context.Context, dsn string) (*sqldb.DB, error) {
	sqlDB, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", Redact(dsn), err)
	}
	sqlDB.SetMaxIdleConns(16)
	if err := sqlDB.PingContext(ctx); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("open store %s: %w", Redact(dsn), err)
	}
	db, err := sqldb.New(ctx, sqlDB, Dialect(), Redact(dsn))
	if err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("open store %s: %w", Redact(dsn), err)
	}
	db.ConnString = dsn
	return db, nil
}
