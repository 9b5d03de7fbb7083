package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/gavelhq/gavel/record"
)

// Import implements record.Store: fn's writes share one transaction, which
// is rolled back if fn (or the context) fails.
func (db *DB) Import(ctx context.Context, fn func(record.Writer) error) error {
	return db.inTx(ctx, func(tx *sql.Tx) error {
		w := &recordWriter{db: db, tx: tx}
		defer w.close()
		var err error
		if w.get, err = tx.PrepareContext(ctx, `SELECT body FROM records WHERE id = ?`); err != nil {
			return err
		}
		if w.ins, err = tx.PrepareContext(ctx, `INSERT INTO records
			(id, content_hash, body, label, status, source, grp, at_unix_ns, imported_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`); err != nil {
			return err
		}
		if err := fn(w); err != nil {
			return err
		}
		return ctx.Err()
	})
}

type recordWriter struct {
	db       *DB
	tx       *sql.Tx
	get, ins *sql.Stmt
}

func (w *recordWriter) close() {
	for _, s := range []*sql.Stmt{w.get, w.ins} {
		if s != nil {
			s.Close()
		}
	}
}

func (w *recordWriter) Put(ctx context.Context, r *record.Record) (record.PutResult, error) {
	body, err := r.Canonical()
	if err != nil {
		return 0, fmt.Errorf("encode record %q: %w", r.ID, err)
	}
	var stored string
	switch err := w.get.QueryRowContext(ctx, r.ID).Scan(&stored); {
	case err == nil:
		if stored == string(body) {
			return record.Unchanged, nil
		}
		var old record.Record
		if err := json.Unmarshal([]byte(stored), &old); err != nil {
			return 0, fmt.Errorf("record %q: stored body unreadable: %w", r.ID, err)
		}
		return 0, fmt.Errorf("id %q: %w (differs in %s)", r.ID, record.ErrConflict,
			strings.Join(record.Diff(&old, r), ", "))
	case !errors.Is(err, sql.ErrNoRows):
		return 0, fmt.Errorf("look up record %q: %w", r.ID, err)
	}
	var at any
	if !r.Outcome.At.IsZero() {
		at = r.Outcome.At.UnixNano()
	}
	_, err = w.ins.ExecContext(ctx, r.ID, record.Hash(body), string(body), r.Outcome.Label,
		r.Outcome.Status, r.Outcome.Source, r.Group, at, w.db.timestamp())
	if err != nil {
		return 0, fmt.Errorf("insert record %q: %w", r.ID, err)
	}
	return record.Inserted, nil
}

// Records implements record.Store.
func (db *DB) Records(ctx context.Context, f record.Filter, fn func(*record.Record) error) error {
	var where []string
	var args []any
	from := `records r`
	if f.Split != "" {
		if err := db.splitExists(ctx, f.Split); err != nil {
			return err
		}
		from += ` JOIN split_members m ON m.record_id = r.id AND m.split = ?`
		args = append(args, f.Split)
		if f.Part != "" {
			from += ` AND m.part = ?`
			args = append(args, string(f.Part))
		}
	}
	in := func(col string, vals []string, not bool) {
		if len(vals) == 0 {
			return
		}
		op := "IN"
		if not {
			op = "NOT IN"
		}
		where = append(where, fmt.Sprintf("r.%s %s (%s)", col, op, strings.TrimSuffix(strings.Repeat("?,", len(vals)), ",")))
		for _, v := range vals {
			args = append(args, v)
		}
	}
	in("label", strs(f.Labels), false)
	in("status", strs(f.Statuses), false)
	in("status", strs(f.ExcludeStatus), true)
	if f.Group != "" {
		where = append(where, "r.grp = ?")
		args = append(args, f.Group)
	}
	q := `SELECT r.body FROM ` + from
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY r.seq`
	if f.Limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, f.Limit)
	}
	rows, err := db.db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("query records: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return err
		}
		var r record.Record
		if err := json.Unmarshal(body, &r); err != nil {
			return fmt.Errorf("decode stored record: %w", err)
		}
		// Meta was stored canonical; keep its exact bytes.
		if err := fn(&r); err != nil {
			return err
		}
	}
	return rows.Err()
}

func strs[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}
