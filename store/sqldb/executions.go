package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gavelhq/gavel/acr"
	"github.com/gavelhq/gavel/bench"
	bexec "github.com/gavelhq/gavel/bench/exec"
)

// Executions returns the store's cache of sandbox results.
func (db *DB) Executions() acr.ExecCache { return (*execCache)(db) }

type execCache DB

func (c *execCache) GetExecution(ctx context.Context, key string) (*acr.Execution, error) {
	var raw string
	err := c.db.QueryRowContext(ctx, `SELECT result FROM executions WHERE key = $1`, key).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read execution %.12s: %w", key, err)
	}
	var e acr.Execution
	if err := json.Unmarshal([]byte(raw), &e); err != nil {
		return nil, fmt.Errorf("execution %.12s: %w", key, err)
	}
	return &e, nil
}

func (c *execCache) PutExecution(ctx context.Context, key string, e *acr.Execution) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = c.db.ExecContext(ctx, `INSERT INTO executions (key, result, created_at) VALUES ($1, $2, $3)
		ON CONFLICT (key) DO UPDATE SET result = excluded.result, created_at = excluded.created_at`,
		key, string(b), time.Now().UTC().Format(time.RFC3339Nano))
	if err != nil {
		return fmt.Errorf("store execution %.12s: %w", key, err)
	}
	return nil
}

// BenchResults returns the store's cache of benchmark candidates' sandbox
// results (in the executions table, under their own keys).
func (db *DB) BenchResults() bench.ResultCache { return (*benchResults)(db) }

type benchResults DB

func (c *benchResults) GetResult(ctx context.Context, key string) (*bexec.Result, error) {
	var raw string
	err := c.db.QueryRowContext(ctx, `SELECT result FROM executions WHERE key = $1`, "bench/"+key).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read result %.12s: %w", key, err)
	}
	var r bexec.Result
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return nil, fmt.Errorf("result %.12s: %w", key, err)
	}
	return &r, nil
}

func (c *benchResults) PutResult(ctx context.Context, key string, r *bexec.Result) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return (*DB)(c).retryBusy(ctx, func() error {
		_, err := c.db.ExecContext(ctx, `INSERT INTO executions (key, result, created_at) VALUES ($1, $2, $3)
			ON CONFLICT (key) DO UPDATE SET result = excluded.result, created_at = excluded.created_at`,
			"bench/"+key, string(b), time.Now().UTC().Format(time.RFC3339Nano))
		if err != nil {
			return fmt.Errorf("store result %.12s: %w", key, err)
		}
		return nil
	})
}
