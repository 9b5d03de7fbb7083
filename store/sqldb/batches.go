package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gavelhq/gavel/llm"
)

var _ llm.BatchStore = (*DB)(nil)

// SaveBatch implements llm.BatchStore.
func (db *DB) SaveBatch(ctx context.Context, b *llm.SubmittedBatch, keys []string) error {
	st, err := json.Marshal(b.BatchState)
	if err != nil {
		return err
	}
	return db.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO batches (id, provider, state, submitted_at) VALUES ($1, $2, $3, $4)`,
			b.ID, b.Provider, string(st), b.SubmittedAt.UTC().Format(time.RFC3339Nano)); err != nil {
			return fmt.Errorf("save batch %s: %w", b.ID, err)
		}
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO batch_requests (batch_id, key) VALUES ($1, $2)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, k := range keys {
			if _, err := stmt.ExecContext(ctx, b.ID, k); err != nil {
				return fmt.Errorf("save batch %s: %w", b.ID, err)
			}
		}
		return nil
	})
}

func (db *DB) batches(ctx context.Context, where, order string) ([]llm.SubmittedBatch, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT state, submitted_at, COALESCE(collected_at, '') FROM batches `+where+` ORDER BY `+order)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []llm.SubmittedBatch
	for rows.Next() {
		var st, sub, col string
		if err := rows.Scan(&st, &sub, &col); err != nil {
			return nil, err
		}
		var b llm.SubmittedBatch
		if err := json.Unmarshal([]byte(st), &b.BatchState); err != nil {
			return nil, err
		}
		b.SubmittedAt = parseTime(sub)
		if col != "" {
			b.CollectedAt = parseTime(col)
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// OpenBatches implements llm.BatchStore.
func (db *DB) OpenBatches(ctx context.Context) ([]llm.SubmittedBatch, error) {
	return db.batches(ctx, `WHERE collected_at IS NULL`, `submitted_at, id`)
}

// Batches implements llm.BatchStore.
func (db *DB) Batches(ctx context.Context) ([]llm.SubmittedBatch, error) {
	return db.batches(ctx, ``, `submitted_at DESC, id`)
}

// KeysInOpenBatches implements llm.BatchStore.
func (db *DB) KeysInOpenBatches(ctx context.Context) (map[string]bool, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT r.key FROM batch_requests r JOIN batches b ON b.id = r.batch_id WHERE b.collected_at IS NULL`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		out[k] = true
	}
	return out, rows.Err()
}

// CollectBatch implements llm.BatchStore.
func (db *DB) CollectBatch(ctx context.Context, b *llm.BatchState) error {
	st, err := json.Marshal(b)
	if err != nil {
		return err
	}
	res, err := db.db.ExecContext(ctx, `UPDATE batches SET state = $1, collected_at = $2 WHERE id = $3`, string(st), db.timestamp(), b.ID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("no batch %s in the store", b.ID)
	}
	return nil
}
