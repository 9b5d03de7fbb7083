package store

import (
	"context"
	"strings"

	"github.com/gavelhq/gavel/acr"
	"github.com/gavelhq/gavel/bench"
	"github.com/gavelhq/gavel/codehost"
	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/runlog"
	"github.com/gavelhq/gavel/store/postgres"
	"github.com/gavelhq/gavel/store/sqldb"
	"github.com/gavelhq/gavel/store/sqlite"
)

// Store is everything gavel keeps: records and splits, prompt versions,
// verdicts and teacher decisions, calibrations, the service's tables, the
// model cache and the execution cache, records' later outcomes and the
// answers of code hosts kept for conditional requests.
type Store interface {
	deploy.Store
	codehost.Store
	codehost.AnswerStore
	llm.BatchStore
	runlog.Store
	// WebhookDelivery returns the answer given to a handled webhook
	// delivery; SaveWebhookDelivery keeps it (the first answer stays).
	WebhookDelivery(ctx context.Context, id string) ([]byte, bool, error)
	SaveWebhookDelivery(ctx context.Context, id, event string, result []byte) error
	Cache() llm.Cache
	Executions() acr.ExecCache
	BenchResults() bench.ResultCache
	Close() error
}

var _ Store = (*sqldb.DB)(nil)

// Open opens the store a --db value names: a postgres:// or postgresql://
// URL for a team's PostgreSQL database, else the path of a SQLite file.
func Open(ctx context.Context, dsn string) (Store, error) {
	if IsURL(dsn) {
		return postgres.Open(ctx, dsn)
	}
	return sqlite.Open(ctx, dsn)
}

// IsURL reports whether a --db value names a database server rather than
// a file.
func IsURL(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// Copy copies the store named from into the new, empty store named to
// (each a SQLite path or a PostgreSQL URL), all or nothing.
func Copy(ctx context.Context, from, to string, progress func(table string, rows int)) error {
	src, err := Open(ctx, from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := Open(ctx, to)
	if err != nil {
		return err
	}
	defer dst.Close()
	return sqldb.Copy(ctx, src.(*sqldb.DB), dst.(*sqldb.DB), progress)
}
