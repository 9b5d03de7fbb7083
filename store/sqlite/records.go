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

// stagingBatch is how many records an import holds in memory before it
// stages them.
const stagingBatch = 2000

// Import implements record.Store. fn's records are checked against the
// store and staged in a temporary table of the import's own connection
// (which takes no lock on the store), then moved into records in one short
// transaction; if fn, the context or the move fails, nothing is imported.
// So an import is atomic for the user, yet never holds the write lock for
// longer than the move, and a command running beside it is not locked out.
func (db *DB) Import(ctx context.Context, fn func(record.Writer) error) error {
	conn, err := db.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `CREATE TEMP TABLE import_staging (
		seq          INTEGER PRIMARY KEY,
		id           TEXT    NOT NULL UNIQUE,
		content_hash TEXT    NOT NULL,
		body         TEXT    NOT NULL,
		label        TEXT    NOT NULL,
		status       TEXT    NOT NULL,
		source       TEXT    NOT NULL,
		grp          TEXT    NOT NULL,
		at_unix_ns   INTEGER)`); err != nil {
		return fmt.Errorf("import: staging table: %w", err)
	}
	// The connection goes back to the pool: leave no table behind.
	defer conn.ExecContext(context.WithoutCancel(ctx), `DROP TABLE IF EXISTS temp.import_staging`)
	get, err := conn.PrepareContext(ctx, `SELECT body FROM main.records WHERE id = ?`)
	if err != nil {
		return err
	}
	defer get.Close()
	w := &recordWriter{db: db, conn: conn, get: get, staged: map[string]string{}}
	err = fn(w)
	if err == nil {
		err = w.flush(ctx)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	if err := w.move(ctx, tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

type recordWriter struct {
	db   *DB
	conn *sql.Conn
	get  *sql.Stmt
	// staged maps each staged record's id to its content hash.
	staged map[string]string
	batch  []stagedRow
}

type stagedRow struct {
	id, hash, body, label, status, source, grp string
	at                                         any
}

func (w *recordWriter) Put(ctx context.Context, r *record.Record) (record.PutResult, error) {
	body, err := r.Canonical()
	if err != nil {
		return 0, fmt.Errorf("encode record %q: %w", r.ID, err)
	}
	hash := record.Hash(body)
	if h, ok := w.staged[r.ID]; ok {
		if h == hash {
			return record.Unchanged, nil
		}
		old, err := w.stagedBody(ctx, r.ID)
		if err != nil {
			return 0, err
		}
		return 0, conflict(r, old)
	}
	var stored string
	switch err := w.get.QueryRowContext(ctx, r.ID).Scan(&stored); {
	case err == nil:
		if stored == string(body) {
			return record.Unchanged, nil
		}
		return 0, conflict(r, stored)
	case !errors.Is(err, sql.ErrNoRows):
		return 0, fmt.Errorf("look up record %q: %w", r.ID, err)
	}
	var at any
	if !r.Outcome.At.IsZero() {
		at = r.Outcome.At.UnixNano()
	}
	w.staged[r.ID] = hash
	w.batch = append(w.batch, stagedRow{r.ID, hash, string(body), string(r.Outcome.Label),
		string(r.Outcome.Status), string(r.Outcome.Source), r.Group, at})
	if len(w.batch) >= stagingBatch {
		if err := w.flush(ctx); err != nil {
			return 0, err
		}
	}
	return record.Inserted, nil
}

func conflict(r *record.Record, stored string) error {
	var old record.Record
	if err := json.Unmarshal([]byte(stored), &old); err != nil {
		return fmt.Errorf("record %q: stored body unreadable: %w", r.ID, err)
	}
	return fmt.Errorf("id %q: %w (differs in %s)", r.ID, record.ErrConflict, strings.Join(record.Diff(&old, r), ", "))
}

// stagedBody is the body this import staged for an id: from the batch in
// memory, else from the staging table.
func (w *recordWriter) stagedBody(ctx context.Context, id string) (string, error) {
	for _, b := range w.batch {
		if b.id == id {
			return b.body, nil
		}
	}
	var body string
	err := w.conn.QueryRowContext(ctx, `SELECT body FROM temp.import_staging WHERE id = ?`, id).Scan(&body)
	return body, err
}

// flush stages the batch, many rows a statement. The staging table is
// temporary, so this takes no lock on the store.
func (w *recordWriter) flush(ctx context.Context) error {
	const perStmt = 50
	for start := 0; start < len(w.batch); start += perStmt {
		rows := w.batch[start:min(start+perStmt, len(w.batch))]
		args := make([]any, 0, 8*len(rows))
		for _, b := range rows {
			args = append(args, b.id, b.hash, b.body, b.label, b.status, b.source, b.grp, b.at)
		}
		q := `INSERT INTO temp.import_staging (id, content_hash, body, label, status, source, grp, at_unix_ns) VALUES ` +
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?), ", len(rows)), ", ")
		if _, err := w.conn.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("stage records %q to %q: %w", rows[0].id, rows[len(rows)-1].id, err)
		}
	}
	w.batch = w.batch[:0]
	return nil
}

// move puts the staged records into records, in the order they came. A
// record another command imported meanwhile is left as it is when it is
// the same, and fails the import when it differs.
func (w *recordWriter) move(ctx context.Context, tx *sql.Tx) error {
	// Insert what is new; a record another command imported meanwhile
	// (the same id) is skipped here and checked below, which is needed
	// only when something was skipped.
	res, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO main.records
		(id, content_hash, body, label, status, source, grp, at_unix_ns, imported_at)
		SELECT s.id, s.content_hash, s.body, s.label, s.status, s.source, s.grp, s.at_unix_ns, ?
		FROM temp.import_staging s ORDER BY s.seq`, w.db.timestamp())
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	inserted, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if int(inserted) == len(w.staged) {
		return nil
	}
	var id, stored, body string
	err = tx.QueryRowContext(ctx, `SELECT s.id, r.body, s.body FROM temp.import_staging s JOIN main.records r ON r.id = s.id
		WHERE r.body != s.body LIMIT 1`).Scan(&id, &stored, &body)
	switch {
	case err == nil:
		var r record.Record
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			return err
		}
		return conflict(&r, stored) // the caller rolls the insert back
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	// Everything staged must now be in records, word for word: nothing
	// may have been skipped for another reason.
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM temp.import_staging s JOIN main.records r ON r.id = s.id AND r.body = s.body`).Scan(&n); err != nil {
		return err
	}
	if n != len(w.staged) {
		return fmt.Errorf("import: %d of %d records could not be stored", len(w.staged)-n, len(w.staged))
	}
	return nil
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
