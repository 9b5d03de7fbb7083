package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gavelhq/gavel/record"
)

// SaveSplit implements record.Store.
func (db *DB) SaveSplit(ctx context.Context, s *record.Split, replace bool) error {
	spec, err := json.Marshal(s.Spec)
	if err != nil {
		return err
	}
	return db.inTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM splits WHERE name = $1`, s.Spec.Name).Scan(&n); err != nil {
			return err
		}
		if n > 0 && !replace {
			return fmt.Errorf("split %q %w", s.Spec.Name, record.ErrExists)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM splits WHERE name = $1`, s.Spec.Name); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO splits (name, spec, created_at) VALUES ($1, $2, $3)`,
			s.Spec.Name, string(spec), db.timestamp()); err != nil {
			return fmt.Errorf("save split %q: %w", s.Spec.Name, err)
		}
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO split_members (split, record_id, part) VALUES ($1, $2, $3)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for id, p := range s.Assign {
			if _, err := stmt.ExecContext(ctx, s.Spec.Name, id, string(p)); err != nil {
				return fmt.Errorf("save split %q: record %q: %w", s.Spec.Name, id, err)
			}
		}
		return nil
	})
}

func (db *DB) splitExists(ctx context.Context, name string) error {
	var n int
	if err := db.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM splits WHERE name = $1`, name).Scan(&n); err != nil {
		return fmt.Errorf("read split %q: %w", name, err)
	}
	if n == 0 {
		return fmt.Errorf("split %q: %w (gavel split NAME makes one)", name, record.ErrNotFound)
	}
	return nil
}

// Split implements record.Store.
func (db *DB) Split(ctx context.Context, name string) (*record.Split, error) {
	var spec string
	err := db.db.QueryRowContext(ctx, `SELECT spec FROM splits WHERE name = $1`, name).Scan(&spec)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("split %q: %w (gavel split NAME makes one)", name, record.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read split %q: %w", name, err)
	}
	s := &record.Split{Assign: map[string]record.Part{}}
	if err := json.Unmarshal([]byte(spec), &s.Spec); err != nil {
		return nil, fmt.Errorf("read split %q: %w", name, err)
	}
	rows, err := db.db.QueryContext(ctx, `SELECT record_id, part FROM split_members WHERE split = $1`, name)
	if err != nil {
		return nil, fmt.Errorf("read split %q: %w", name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, part string
		if err := rows.Scan(&id, &part); err != nil {
			return nil, err
		}
		s.Assign[id] = record.Part(part)
	}
	return s, rows.Err()
}

// Splits implements record.Store.
func (db *DB) Splits(ctx context.Context) ([]record.SplitSpec, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT spec FROM splits ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list splits: %w", err)
	}
	defer rows.Close()
	var out []record.SplitSpec
	for rows.Next() {
		var raw string
		if err := rows.Scan(&raw); err != nil {
			return nil, err
		}
		var s record.SplitSpec
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			return nil, fmt.Errorf("list splits: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
